"""``orch bench``: reproducible per-task results files and the docs tables generated from them.

    orch bench iggp --dataset DIR --learners true,inertia,mean,knn1,knn5 --budget 60s
    orch bench iggp --dataset DIR --learners ilasp --budget 60s --num-cpus 1
    orch bench ggp --corpus OUT --learners true,inertia,mean,knn1,knn5 --budget 10s
    orch bench docs                      # regenerate docs/benchmarks.md's tables from the files
    orch bench stale docs/results/iggp/ilasp_60s.csv   # or mark figures stale after a change

An ablation arm is an ordinary results file of the learner with a feature switched off, run on the
targets the switch touches and exported beside the learner's own file; ``orch bench docs`` compares
the two task by task (:mod:`orchestrator.analysis.ablation`):

    orch run --dataset DIR --all-games --learners ilasp_w50000_noframe --targets legal,next --budget 60s --store S
    orch bench export --store S --learners ilasp_w50000_noframe --dataset DIR

Why a command and not a script of its own: the run is an ordinary ``orch run`` sweep (resumable,
budgets enforced by the worker), and the export reads only the store, so the committed figures
are whatever the documented command gives at HEAD.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from orchestrator.analysis.locations import GGP_RESULTS_DIR, RESULTS_DIR, ROOT
from orchestrator.cli.errors import EXIT_FAILED, OrchError
from orchestrator.cli.run import memory_per_job_option
from orchestrator.durations import budget_option

bench_app = typer.Typer(
    help="Reproducible benchmark figures: per-task results files (docs/results) and the docs tables.",
    no_args_is_help=True,
)

ANCHOR_LABEL = "../shared/iggp/ilasp_star_shared.csv"


def runnable_tasks(dataset: Path, games: list[str] | None = None) -> tuple[set[tuple[str, str]], list[str]]:
    """(game, target) pairs with train and test files, and a line for each task left out (and why)."""
    from tasks.iggp import Dataset

    ds = Dataset(dataset)
    keep, skipped = set(), []
    for g in games or ds.games():
        for t in ds.targets(g):
            missing = [s for s in ("train", "test") if s not in ds.files(g, t)]
            if missing:
                skipped.append(f"{g}/{t}: no {' or '.join(missing)} split in the dataset (left out)")
            else:
                keep.add((g, t))
    return keep, skipped


def _export_and_print(
    store: str, out: Path, learners: list[str], tasks: set, dataset: Path, existing: str = "refuse"
) -> None:
    from orchestrator.analysis.results import ExportRefused, export, read_rows, summarise
    from orchestrator.storage.store import ResultStore, StoreError
    from tasks.iggp import Dataset

    try:
        ds = Dataset(dataset)
        predicates = {(g, t): ds.predicates(g, t) for g, t in tasks}
        written = export(
            ResultStore(store), out, learners, tasks=tasks, predicates=predicates, existing=existing
        )
    except ExportRefused as e:
        raise OrchError(
            f"{e}; the store keeps every result: `orch bench export` writes the file again"
        ) from e
    except (StoreError, ValueError) as e:
        raise OrchError(str(e)) from e
    for path, (n, unscorable) in written.items():
        s = summarise(read_rows(path))
        more = f", {unscorable} task(s) not finished (left out)" if unscorable else ""
        typer.echo(
            f"wrote {path} ({n} tasks{more}): mean BA {100 * s.get('balanced_accuracy', 0):.1f}%, "
            f"perfect {s.get('perfect', 0)}/{n}; fallback = failure: "
            f"{100 * s.get('ba_fallback_failed', 0):.1f}%, {s.get('perfect_fallback_failed', 0)}/{n}"
        )


_LEARNERS = typer.Option(..., "--learners", "-l", help="Comma-separated learner names.")
_REPEATS = typer.Option(1, "--repeats", min=1, help="Runs per job (repeat r > 0: 80% train subsample).")
_NUM_CPUS = typer.Option(None, "--num-cpus", min=1, help="CPUs of the local Ray.")
_RETRY_FAILED = typer.Option(
    False, "--retry-failed", help="Also re-run stored errors (after a fix: the rest of the store is kept)."
)


_MERGE = typer.Option(
    False,
    "--merge",
    help="Keep the file's rows of tasks not exported now (a partial rerun: --games); this run's replace theirs.",
)
_REPLACE = typer.Option(
    False, "--replace", help="Write only this export's tasks, dropping the file's other rows."
)


def _existing(merge: bool, replace: bool) -> str:
    """What to do with a results file already there (:data:`orchestrator.analysis.results.EXISTING`):
    by default, refuse to drop the rows of tasks a partial export does not cover."""
    if merge and replace:
        raise OrchError("--merge and --replace exclude each other", 2)
    return "merge" if merge else "replace" if replace else "refuse"


def _check_existing(out: Path, learners: list[str], budget: float | None, tasks: set, existing: str) -> None:
    """Refuse before a long run what the export after it would refuse (:func:`_existing`)."""
    from orchestrator.analysis.results import ExportRefused, file_name, with_existing

    if budget is None:
        return
    try:
        for name in learners:
            with_existing(out / file_name(name, budget), [], tasks, existing)
    except ExportRefused as e:
        raise OrchError(f"{e}; nothing was run", 2) from e
    except ValueError as e:
        raise OrchError(str(e), 2) from e


def _store_option(default: str) -> Any:
    return typer.Option(default, "--store", help="Store to run into (resumes).")


def _out_option(default: Path) -> Any:
    return typer.Option(default, "--out", help="Where the results files go.")


@bench_app.command("iggp")
def iggp_command(
    dataset: Path = typer.Option(
        ..., "--dataset", "-d", help="The published IGGP layout (../shared/iggp/unpack DIR)."
    ),
    learners: str = _LEARNERS,
    budget: float | None = budget_option("60s", "Hard wall-clock limit per predicate (e.g. 60s)."),
    repeats: int = _REPEATS,
    games: str | None = typer.Option(None, "--games", "-g", help="Only these games (default: all)."),
    store: str = _store_option("./orch-bench-iggp"),
    out: Path = _out_option(RESULTS_DIR),
    num_cpus: int | None = _NUM_CPUS,
    memory_per_job: str | None = memory_per_job_option(),
    retry_failed: bool = _RETRY_FAILED,
    merge: bool = _MERGE,
    replace: bool = _REPLACE,
) -> None:
    """Run learners on every IGGP task with train and test data, then export per-task results files.

    The run is `orch run --all-games` into --store (rerunning resumes); the export writes
    OUT/LEARNER_BUDGETs.csv with the commit and the learner's source hash. Then run `orch bench docs`.
    """
    chosen = _names(games) if games else None
    try:
        tasks, skipped = runnable_tasks(dataset, chosen)
    except Exception as e:
        raise OrchError(f"cannot plan the bench: {type(e).__name__}: {e}") from e
    _run_and_export(
        dataset, learners, tasks, skipped, chosen, budget, repeats, store, out, num_cpus, memory_per_job,
        retry_failed, _existing(merge, replace),
    )  # fmt: skip


@bench_app.command("ggp")
def ggp_command(
    corpus: Path = typer.Option(
        ..., "--corpus", "-c", help="A corpus from `orch games generate DIR... --out OUT --all`."
    ),
    learners: str = _LEARNERS,
    budget: float | None = budget_option("10s", "Hard wall-clock limit per predicate (e.g. 10s)."),
    repeats: int = _REPEATS,
    games: str | None = typer.Option(None, "--games", "-g", help="Only these games (default: all kept)."),
    sample: int | None = typer.Option(
        None,
        "--sample",
        min=1,
        help="Only N games with a kept target, the same N for every corpus of the same games: those whose "
        "name has the smallest SHA-256 (the datasheet's fixed sample for long budgets).",
    ),
    store: str = _store_option("./orch-bench-ggp"),
    out: Path = _out_option(GGP_RESULTS_DIR),
    num_cpus: int | None = _NUM_CPUS,
    memory_per_job: str | None = memory_per_job_option(),
    retry_failed: bool = _RETRY_FAILED,
    merge: bool = _MERGE,
    replace: bool = _REPLACE,
) -> None:
    """Run learners on every kept target of a GGP corpus, then export per-task results files.

    Only targets that pass the quality rules (docs/ggp-benchmark.md) run; each one left out is
    listed with its reason. The corpus manifest is copied beside the results files, so the
    datasheet's tables (`orch bench docs`) need nothing else.
    """
    import shutil

    from tasks.corpus import MANIFEST, kept_targets, read_manifest

    chosen = _names(games) if games else None
    try:
        rows = read_manifest(corpus)
        kept, left_out = kept_targets(r for r in rows if chosen is None or r["game"] in chosen)
        if sample is not None:
            games_kept = sorted({g for g, _ in kept})
            picked = set(fixed_sample(games_kept, sample))
            left_out += [f"{g}: not in the --sample of {sample} games" for g in games_kept if g not in picked]
            kept = {(g, t) for g, t in kept if g in picked}
        runnable, skipped = runnable_tasks(corpus, sorted({g for g, _ in kept}))
    except Exception as e:
        raise OrchError(f"cannot plan the bench: {type(e).__name__}: {e}") from e
    games_run = sorted({g for g, _ in kept})
    if not games_run:
        raise OrchError(f"{corpus}: no target passes the quality rules")
    _run_and_export(corpus, learners, kept & runnable, left_out + skipped, games_run, budget, repeats, store,
                    out, num_cpus, memory_per_job, retry_failed, _existing(merge, replace))  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(corpus / MANIFEST, out / MANIFEST)


def fixed_sample(games: list[str], n: int) -> list[str]:
    """The ``n`` games whose name has the smallest SHA-256, sorted: a sample that depends on the
    names alone: a regenerated corpus gives the same sample, one grown by other games can only
    trade sampled games for new ones."""
    import hashlib

    return sorted(sorted(games, key=lambda g: hashlib.sha256(g.encode()).hexdigest())[:n])


def _names(text: str) -> list[str]:
    from orchestrator.scheduling.sweep import split_names

    return split_names(text)


def _run_and_export(
    dataset: Path, learners: str, tasks: set[tuple[str, str]], skipped: list[str], games: list[str] | None,
    budget: float | None, repeats: int, store: str, out: Path, num_cpus: int | None,
    memory_per_job: str | None = None, retry_failed: bool = False, existing: str = "refuse",
) -> None:  # fmt: skip
    """The bench's sweep over ``tasks`` (``orch run`` into ``store``), then the export to ``out``;
    refused if a learner's sources change during the run (the figures would belong to no commit),
    and before it when the export would drop a results file's rows (:func:`_existing`)."""
    from orchestrator.analysis.results import source_hash
    from orchestrator.cli.run import RunRequest, launch

    names = _names(learners)
    try:
        before = {n: source_hash(n) for n in names}
    except Exception as e:
        raise OrchError(f"cannot plan the bench: {type(e).__name__}: {e}") from e
    _check_existing(out, names, budget, tasks, existing)
    for line in skipped:
        typer.echo(line, err=True)
    failed: typer.Exit | None = None
    try:
        launch(RunRequest(learners, games=",".join(games) if games else None, all_games=not games,
                          dataset=str(dataset), repeats=repeats, budget=budget, store=store, num_cpus=num_cpus,
                          only_tasks=tasks, memory_per_job=memory_per_job, retry_failed=retry_failed))  # fmt: skip
    except typer.Exit as e:
        if e.exit_code != EXIT_FAILED:  # interrupted: the sweep is not over, nothing to export
            raise
        failed = e  # jobs that ended error, oom or lost are results too: exported, then exit 1
    changed = [n for n in names if source_hash(n) != before[n]]
    if changed:
        raise OrchError(
            f"the sources of {', '.join(changed)} changed during the run: rerun on a fixed checkout", 1
        )
    _export_and_print(store, out, names, tasks, dataset, existing)
    if failed is not None:
        typer.echo(
            "exported with the failed jobs' predicates counted in errored_predicates (scored as "
            "predicting false); --retry-failed re-runs them",
            err=True,
        )
        raise failed


@bench_app.command("export")
def export_command(
    store: str = typer.Option(..., "--store", help="The store a bench ran into."),
    learners: str = typer.Option(..., "--learners", "-l", help="Comma-separated learner names."),
    dataset: Path = typer.Option(..., "--dataset", "-d", help="The dataset it ran on (to know its tasks)."),
    games: str | None = typer.Option(None, "--games", "-g", help="Only these games (default: all)."),
    out: Path = typer.Option(RESULTS_DIR, "--out", help="Where the results files go."),
    merge: bool = _MERGE,
    replace: bool = _REPLACE,
) -> None:
    """Export per-task results files from a store without running anything (unfinished tasks are left out).

    A file holding tasks this export leaves out (of other --games) is kept unless --merge or --replace.
    """
    from orchestrator.scheduling.sweep import split_names

    tasks, _ = runnable_tasks(dataset, split_names(games) if games else None)
    _export_and_print(store, out, split_names(learners), tasks, dataset, _existing(merge, replace))


@bench_app.command("docs")
def docs_command(
    results: Path = typer.Option(RESULTS_DIR, "--results", help="Directory of results files."),
    doc: Path = typer.Option(ROOT / "docs" / "benchmarks.md", "--doc", help="The markdown file to update."),
    anchor: Path | None = typer.Option(
        None,
        "--anchor",
        help=f"Published per-task scores to compare with (default: {ANCHOR_LABEL} if present).",
    ),
    ggp_results: Path = typer.Option(
        GGP_RESULTS_DIR, "--ggp-results", help="Directory of the GGP benchmark's results files and manifest."
    ),
    ggp_doc: Path = typer.Option(
        ROOT / "docs" / "ggp-benchmark.md", "--ggp-doc", help="The GGP benchmark's datasheet to update."
    ),
    check: bool = typer.Option(False, "--check", help="Exit 1 if a file is not up to date; write nothing."),
) -> None:
    """Regenerate the results tables of docs/benchmarks.md and of the GGP datasheet from the results files."""
    from orchestrator.analysis import ggp_docs
    from orchestrator.analysis.results_docs import section_for, splice

    try:
        updates = [
            (doc, results, splice(doc.read_text(), section_for(results, anchor))),
            (ggp_doc, ggp_results, splice(ggp_doc.read_text(), ggp_docs.render(ggp_results, results),
                                          ggp_docs.BEGIN, ggp_docs.END)),
        ]  # fmt: skip
    except (ValueError, OSError) as e:
        raise OrchError(str(e)) from e
    stale = [
        f"{path} is not up to date with {source}" for path, source, new in updates if new != path.read_text()
    ]
    if check:
        if stale:
            raise OrchError("; ".join(stale) + ": run `orch bench docs`", EXIT_FAILED)
        typer.echo(" and ".join(str(path) for path, _, _ in updates) + " are up to date")
        return
    for path, _, new in updates:
        path.write_text(new)
        typer.echo(f"wrote the results tables of {path}")
    figure = ggp_docs.write_figure(ggp_results, results)
    if figure is not None:
        typer.echo(f"wrote {figure}")


@bench_app.command("stale")
def stale_command(
    files: list[Path] = typer.Argument(
        ..., metavar="FILE", help="Results files to mark (docs/results/iggp/*.csv)."
    ),
) -> None:
    """Mark the rows whose learner sources changed since they were measured as stale (shown in the docs)."""
    from orchestrator.analysis.results import mark_stale

    for f in files:
        try:
            n = mark_stale(f)
        except (OSError, ValueError) as e:
            raise OrchError(str(e)) from e
        typer.echo(f"{f}: {n} row(s) marked stale")


def register(app: typer.Typer) -> None:
    """Add ``bench`` (iggp, export, docs, stale) to the ``orch`` app."""
    app.add_typer(bench_app, name="bench")
