"""``orch report``, ``orch select``, ``orch compare`` and ``orch analyse``: analyses of the results store.

The analyses (pyarrow, scipy, matplotlib) are imported inside each command, so that ``orch --help``
does not pay for them.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from orchestrator.cli.errors import OrchError
from orchestrator.storage import DEFAULT_STORE

if TYPE_CHECKING:
    from orchestrator.analysis.compare import Side
    from orchestrator.storage.store import ResultStore

METRICS = ("ba", "perfect")


def report_command(
    store: str = typer.Option(
        DEFAULT_STORE, "--store", help="Store directory or URI (e.g. s3://bucket/prefix)."
    ),
    format: str = typer.Option("table", "--format", "-f", help="table, md, csv or json."),
    by: str = typer.Option(
        "learner,target,game", "--by", help="Tables to show: learner, target, game, task."
    ),
    sweep: str | None = typer.Option(None, "--sweep", help="Only the jobs of this sweep."),
    split: str = typer.Option("test", "--split", help="Score on test (default) or validate."),
    html: Path | None = typer.Option(
        None, "--html", help="Also write a self-contained HTML page (and PNG figures beside it)."
    ),
    k: int = typer.Option(10, "--k", min=1, help="Tasks to choose in the HTML page's selection section."),
    anchor: list[Path] = typer.Option(
        [],
        "--anchor",
        help="Published figures (CSV): per-task IGGP scores (game, target, *_ba), or per-world GraphLog "
        "accuracies (world, model, test_accuracy); shown beside results on the same tasks only (HTML page).",
    ),
) -> None:
    """Summarise the results in the store as the IGGP paper's tables (strict scoring).

    Each benchmark in the store (IGGP, a generated GGP corpus, GraphLog) gets its own tables and
    means, headed by its name; a store of one benchmark shows its tables alone.

    With --html OUT: one page with the tables beside the published figures, heatmaps, time-to-solve,
    GNN curves, predictive power and task selection; the figures are also written as PNG files.
    """
    from orchestrator.analysis.current import Currency
    from orchestrator.analysis.report import benchmark_tables, render_benchmarks
    from orchestrator.cli.sweeps import resolve_sweep
    from orchestrator.storage.store import ResultStore, StoreError, scrub

    try:
        opened = ResultStore(store, must_exist=True)
        sweep = resolve_sweep(opened, sweep)  # an unknown name: exit 2 with close matches
        currency = Currency()
        groups = benchmark_tables(  # one group per benchmark (IGGP, GGP corpus, GraphLog): never pooled
            opened, [b.strip() for b in by.split(",") if b.strip()], sweep, split, currency
        )
        typer.echo(render_benchmarks(groups, format), nl=False)
        read = f"sweep read: {sweep}" if sweep else currency.line()
        typer.echo(read, err=format in ("json", "csv"))  # a script's stdout stays one document
        failed = currency.failed_line()
        if failed:
            typer.echo(failed, err=format in ("json", "csv"))
        if html is not None:
            from orchestrator.analysis.anchor import read_anchor
            from orchestrator.analysis.htmlreport import write_html

            anchors = [read_anchor(a) for a in anchor]
            out = write_html(ResultStore(store, must_exist=True), html, k=k, anchors=anchors)
            typer.echo(f"wrote {out} and its figures in {out.with_name(out.stem + '_figures')}/", err=True)
    except (StoreError, ValueError) as e:
        typer.echo(f"error: {scrub(str(e))}", err=True)
        raise typer.Exit(2) from e
    if failed:  # the exit-code contract (README "Exit codes"): some job read ended error, oom or lost
        raise typer.Exit(1)


def select(
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Results store (directory or URI)."),
    k: int = typer.Option(10, "--k", min=1, help="How many tasks to choose."),
    metrics: str = typer.Option("ba,perfect", "--metrics", help="Comma-separated: ba, perfect."),
    sweep: str | None = typer.Option(None, "--sweep", help="Only this sweep's rows."),
    samples: int = typer.Option(1000, "--samples", help="Random k-task subsets for the baseline tau."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON for scripts."),
) -> None:
    """Choose the k tasks that best tell the learners apart (greedy information gain), and check the choice.

    Needs repeated runs (orch run --repeats N) so that each (task, learner) has a mean and a
    deviation. The check compares the learners' ranking on the k tasks with their ranking on all
    tasks (Kendall tau), against random k-task subsets.
    """
    from orchestrator.analysis.report import render
    from orchestrator.analysis.selection import (
        PerformanceTable,
        check_selection,
        complete_runs,
        greedy_select,
        runs_from_store,
    )
    from orchestrator.storage.store import ResultStore

    chosen = [m.strip() for m in metrics.split(",") if m.strip()]
    bad = [m for m in chosen if m not in METRICS]
    if bad:
        raise typer.BadParameter(
            f"unknown metric(s) {bad}; choose from {list(METRICS)}", param_hint="--metrics"
        )
    from orchestrator.cli.sweeps import resolve_sweep

    opened = ResultStore(store, must_exist=True)
    runs = complete_runs(runs_from_store(opened, resolve_sweep(opened, sweep)))
    learners = sorted({r["learner"] for r in runs})
    if len(learners) < 2:
        typer.echo(f"error: selection needs at least two learners with complete tasks in {store}", err=True)
        raise typer.Exit(1)
    table = PerformanceTable.from_runs(runs, chosen)
    sel = greedy_select(table, k)
    check = check_selection(table, sel, samples=samples)
    rows = [
        {
            "rank": i + 1,
            "task": t,
            "cumulative_gain": round(g, 4),
            "single_gain": round(sel.single_gain[t], 4),
            "tied_candidates": sel.tied[i],
            "decided_by": sel.decided_by[i],
        }
        for i, (t, g) in enumerate(zip(sel.tasks, sel.cumulative_gain, strict=True))
    ]
    result = {
        "learners": learners,
        "tasks": len(table.tasks),
        "metrics": chosen,
        "max_gain": sel.max_gain,
        "min_runs": int(table.repeats.min()),
        "selected": rows,
        "kendall_tau": check.tau_selected,
        "random_tau_mean": check.tau_random_mean,
        "random_tau_std": check.tau_random_std,
    }
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    typer.echo(render({"selected": rows}, "table"))
    typer.echo(
        f"\n{len(learners)} learners, {len(table.tasks)} tasks, max gain log2({len(learners)}) = {sel.max_gain:.3f} bits;"
        f" at least {result['min_runs']} run(s) per task and learner."
    )
    typer.echo(
        f"Kendall tau (ranking on the {len(sel.tasks)} chosen tasks vs all): {check.tau_selected:.3f};"
        f" random {len(sel.tasks)}-task subsets: {check.tau_random_mean:.3f} ± {check.tau_random_std:.3f}"
    )
    if len(learners) < 3:  # the gains above are all 0 or 1 bit: say why rather than let them puzzle
        typer.echo(
            "note: with 2 learners every task that separates them gains the same 1 bit; the choice "
            "means something from 3 learners on (orch run --learners a,b,c)"
        )


def compare_command(
    a: str = typer.Argument(..., help="First side: LEARNER or LEARNER@SWEEP."),
    b: str | None = typer.Argument(None, help="Second side: LEARNER or LEARNER@SWEEP (or use --anchor)."),
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Results store of side A (and B)."),
    store_b: str | None = typer.Option(
        None, "--store-b", help="A second store for side B (another version)."
    ),
    anchor: Path | None = typer.Option(
        None,
        "--anchor",
        help="Compare A with a published system's per-task scores (CSV: game,target,*_ba,perfect).",
    ),
    results: Path | None = typer.Option(
        None,
        "--results",
        help="With --anchor: read A from a results file (docs/results) instead of the store.",
    ),
    fmt: str = typer.Option("table", "--format", help="table, csv, json or md."),
    all_tasks: bool = typer.Option(False, "--all", help="List ties too, not only wins and losses."),
    sweep: str | None = typer.Option(
        None, "--sweep", help="Read both sides from this sweep (LEARNER@SWEEP picks one side's)."
    ),
) -> None:
    """Compare two learners (or two versions of one) task by task: wins, losses and ties on balanced accuracy.

    With --anchor FILE, compare learner A with a published system's per-task scores (e.g.
    ../shared/iggp/ilasp_star_shared.csv) on the tasks both have, as scored and with A's fallback
    models counted as failures; errored predicates of A count as predicting false.
    """
    from orchestrator.analysis.compare import Side, compare
    from orchestrator.analysis.report import render
    from orchestrator.storage.store import ResultStore

    if anchor is not None:
        _compare_anchor(a, anchor, store, results, fmt, all_tasks)
        return
    if b is None:
        typer.echo("error: give a second side B, or --anchor FILE", err=True)
        raise typer.Exit(2)
    from orchestrator.cli.sweeps import resolve_sweep

    sa = ResultStore(store, must_exist=True)
    sides = [Side.parse(a, sa), Side.parse(b, ResultStore(store_b, must_exist=True) if store_b else sa)]
    # a misspelt learner or sweep would compare against nothing: say so, with suggestions (exit 2)
    sides = [dataclasses.replace(side, learner=_stored_learner(side),
                                 sweep=resolve_sweep(side.store, side.sweep or sweep)) for side in sides]  # fmt: skip
    result = compare(sides[0], sides[1])
    rows = result.rows if all_tasks else [r for r in result.rows if r["outcome"] != "tie"]
    typer.echo(render({"tasks": rows, "summary": [result.summary()]}, fmt))


def _stored_learner(side: Side) -> str:
    """The store's spelling of the side's learner (case-insensitive); BadParameter with close
    matches when the store has no row of it."""
    from orchestrator.suggest import did_you_mean

    names = sorted({n for n in side.store.latest(["learner"])["learner"].to_pylist() if n})
    if side.learner in names or side.learner.split(" (")[0] in names:  # "knn5 (60s)": one budget of several
        return side.learner
    folded = [n for n in names if n.lower() == side.learner.lower()]
    if len(folded) == 1:
        return folded[0]
    close = did_you_mean(side.learner, names)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    listing = f"learners there: {', '.join(names)}" if names else "it holds no results"
    raise typer.BadParameter(f"no learner {side.learner!r} in the store {side.store.uri}; {hint}{listing}")


def _compare_anchor(
    learner: str, anchor: Path, store: str, results: Path | None, fmt: str, all_tasks: bool
) -> None:
    from orchestrator.analysis.anchor import compare_to_anchor, read_iggp_anchor
    from orchestrator.analysis.report import render
    from orchestrator.analysis.results import collect, read_rows, task_row
    from orchestrator.storage.store import ResultStore, StoreError, scrub

    try:
        published = read_iggp_anchor(anchor)
        if results is not None:
            rows = [r for r in read_rows(results) if r["learner"] == learner]
        else:
            label, _, sweep = learner.partition("@")
            learner = label
            rows = [r for t in collect(ResultStore(store), [label], sweep or None) if (r := task_row(t))]
    except (ValueError, OSError, StoreError) as e:
        typer.echo(f"error: {scrub(str(e))}", err=True)
        raise typer.Exit(2) from None
    budgets = {str(r["budget_s"]) for r in rows}
    if not rows or len(budgets) > 1:
        why = (
            "no finished tasks"
            if not rows
            else f"several budgets ({', '.join(sorted(budgets))}): use --results"
        )
        typer.echo(f"error: {learner}: {why} in {scrub(str(results or store))}", err=True)
        raise typer.Exit(1)
    tables: dict[str, list[dict]] = {}
    summaries = []
    for scoring, ba, perfect in (
        ("as scored", "balanced_accuracy", "perfect"),
        ("fallback = failure", "ba_fallback_failed", "perfect_fallback_failed"),
    ):
        scores = {(r["game"], r["target"]): (float(r[ba]), str(r[perfect]) == "1") for r in rows}
        c = compare_to_anchor(learner, scores, published)
        if scoring == "as scored":
            tables["tasks"] = c.rows if all_tasks else [r for r in c.rows if r["outcome"] != "tie"]
        summaries.append({"scoring": scoring, **c.summary()})
    errored = sum(int(r["errored_predicates"]) for r in rows)
    fallback = sum(int(r["fallback_predicates"]) for r in rows)
    trivial = sum(str(r["trivial"]) == "1" for r in rows)
    tables["summary"] = summaries
    tables["counted"] = [{"learner": learner, "tasks": len(rows), "errored predicates (scored false)": errored,
                          "fallback predicates": fallback, "trivial tasks": trivial,
                          "anchor": published.source}]  # fmt: skip
    typer.echo(render(tables, fmt))


analyse_app = typer.Typer(
    help="Analyses computed from the store (and the data) and stored back into it.", no_args_is_help=True
)


@analyse_app.command("predictive")
def predictive_command(
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Results store (directory or URI)."),
    dataset: str | None = typer.Option(None, "--dataset", help="Override the dataset stored with the rows."),
    fmt: str = typer.Option("table", "--format", help="table, csv, json or md."),
    sweep: str | None = typer.Option(
        None, "--sweep", help="Only this sweep's runs (orch sweeps lists them)."
    ),
) -> None:
    """Applicability and effects precision/recall of every rule-based run with legal and next rules.

    The learned legal rules give applicability, the learned next rules predicted effects, both
    against the reference game over the test states (definitions in orchestrator/analysis/predictive.py).
    The figures are stored under the store's predictive/ folder and shown by orch report.
    """
    from orchestrator.analysis.predictive import score_store, write_predictive
    from orchestrator.analysis.report import render
    from orchestrator.cli.sweeps import resolve_sweep
    from orchestrator.storage.store import ResultStore

    s = ResultStore(store, must_exist=True)
    sweep = resolve_sweep(s, sweep)
    skipped: list[dict] = []
    rows = score_store(s, dataset, skipped=skipped)
    if sweep is not None:  # a run is keyed by its sweep: keep that sweep's
        rows = [r for r in rows if r.get("sweep") == sweep]
        skipped = [r for r in skipped if r.get("sweep") == sweep]
    write_predictive(s, rows)
    if not rows:
        typer.echo("no rule-based runs with both legal and next rules in the store", err=True)
    tables = {"predictive power": rows}
    if skipped:
        tables["runs left out"] = [
            {k: r[k] for k in ("game", "learner", "seed", "repeat", "reason")} for r in skipped
        ]
    typer.echo(render(tables, fmt))
    typer.echo(
        f"Each row is one run (game, learner, seed, repeat): {len(rows)} run(s) scored, "
        f"{len(skipped)} left out (listed above with why).",
        err=fmt == "json",
    )


@analyse_app.command("compose")
def compose_command(
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Results store (directory or URI)."),
    dataset: str | None = typer.Option(
        None, "--dataset", help="Override the graphlog:DIR stored with the rows."
    ),
    split: str = typer.Option("test", "--split", help="Query graphs to score: train, valid or test."),
    fmt: str = typer.Option("table", "--format", help="table, csv, json or md."),
    sweep: str | None = typer.Option(
        None, "--sweep", help="Only this sweep's runs (orch sweeps lists them)."
    ),
) -> None:
    """GraphLog: each rule-based run's learned rules applied recursively to the world's graphs.

    A run's per-class programs (rel_rK) are joined into one, rel_rK feeds rK, and the closure is
    computed per query graph (orchestrator/analysis/compose.py): exact = only the true relation derived,
    resolved = it is derived, ambiguous = several are. One-step scores are in orch report.
    """
    from orchestrator.analysis.compose import score_composed
    from orchestrator.analysis.report import render
    from orchestrator.cli.sweeps import resolve_sweep
    from orchestrator.storage.store import ResultStore

    opened = ResultStore(store, must_exist=True)
    sweep = resolve_sweep(opened, sweep)
    rows = score_composed(opened, dataset, split, sweep)
    if not rows:  # nothing to compose: say what the store holds instead (bad input for this analysis)
        raise OrchError(_why_nothing_to_compose(opened, sweep))
    typer.echo(render({"rules applied recursively": rows}, fmt))


def _why_nothing_to_compose(store: ResultStore, sweep: str | None) -> str:
    """One line: which GraphLog rows the store has, and why none of them can be composed."""
    import pyarrow.compute as pc

    from orchestrator.storage.schema import FINAL_STATUSES, GRAPHLOG_TARGET_PREFIX

    rows = store.latest(["dataset", "target", "learner", "status", "program", "sweep"])
    if sweep is not None:
        rows = rows.filter(pc.equal(rows["sweep"], sweep))
    records = rows.to_pylist()
    where = f"sweep {sweep}" if sweep else f"the store {store.uri}"
    setups = [r for r in records if (r["target"] or "").startswith(GRAPHLOG_TARGET_PREFIX)]
    tasks = [r for r in records if str(r["dataset"] or "").startswith("graphlog:")]
    if not setups and not tasks:
        return f"no GraphLog rows in {where}: compose scores rule learners run with orch run --dataset graphlog:DIR"
    learners = sorted({r["learner"] for r in tasks + setups})
    ruled = [r for r in tasks if r["status"] in FINAL_STATUSES and r["program"]]
    if not ruled:
        return (
            f"{len(tasks) + len(setups)} GraphLog row(s) in {where} ({', '.join(learners)}), none with a learned "
            "program: compose applies rule learners' programs (e.g. orch run --dataset graphlog:DIR "
            "--learners ilasp); GNN results are in orch graphlog results and orch report"
        )
    return f"no rule-based GraphLog run in {where} could be composed"


def register(app: typer.Typer) -> None:
    """Add ``select``, ``compare`` and ``analyse`` to the ``orch`` app (``report``: see :func:`register_report`)."""
    app.command("select")(select)
    app.command("compare")(compare_command)
    app.add_typer(analyse_app, name="analyse")


def register_report(app: typer.Typer) -> None:
    """Add ``report`` (registered beside ``run`` and ``status``, where ``orch --help`` lists it)."""
    app.command("report")(report_command)
