"""``orch report --html OUT``: one self-contained page (and PNG files) from the results store.

The page holds the paper-style tables with published figures in reference rows (marked as
such), a game x learner heatmap of balanced accuracy, time-to-solve curves, GNN learning and
forgetting curves where the store has them, GraphLog sweeps (k-shot and forgetting curves) and
composed rule scores, information-gain task selection, and the clustered
task-correlation heatmap. Images are embedded as data URIs, so the page is one file that can be
mailed or archived; the same figures are written as PNG files beside it.

A store holding several benchmarks (IGGP, a generated GGP corpus, GraphLog rule-learner runs:
:mod:`orchestrator.analysis.benchmarks`) gets one part per benchmark, headed by its name, each with
its own tables, means and figures; a store of one benchmark gets the page it always got.
"""

from __future__ import annotations

import base64
import html
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from orchestrator.analysis.anchor import Anchor, GraphLogAnchor  # noqa: E402
from orchestrator.analysis.benchmarks import IGGP, BenchmarkView, benchmarks_of, title  # noqa: E402
from orchestrator.analysis.report import STRICT_NOTE, benchmark_tables, display_rows, percent, perfect_cell  # noqa: E402
from orchestrator.analysis.selection import (  # noqa: E402
    PerformanceTable,
    check_selection,
    complete_runs,
    greedy_select,
    runs_from_store,
    task_correlation,
)
from orchestrator.storage.store import ResultStore  # noqa: E402

CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right;overflow-wrap:anywhere}
th{background:#f3f3f3} td:first-child,th:first-child{text-align:left}
tr.published td{background:#fff8e1;font-style:italic} tr.published td:last-child{text-align:left}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}
.note{color:#555;font-size:13px}
"""


def _not_shown(reason: str) -> str:
    """The one line a section shows instead of a table or figure that would mean nothing."""
    return f"<p class='note reason'>Not shown: {html.escape(reason)}.</p>"


def _png(fig, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(path.read_bytes()).decode()


def _fmt(v) -> str:
    return f"{v:.3f}" if isinstance(v, float) else html.escape("" if v is None else str(v))


def _table_html(rows: list[dict], published: list[dict] | None = None) -> str:
    """An HTML table of summary rows as people read them (:func:`display_rows`: percent, perfectly
    solved as count/total (share)); ``published`` rows (:func:`published_rows`: learner, tasks,
    balanced_accuracy, perfect, source) are appended in the same format, marked."""
    if not rows and not published:
        return "<p class='note'>(no rows)</p>"
    rows = display_rows(rows)
    cols = list(rows[0]) if rows else ["learner", "tasks", "balanced accuracy", "perfectly solved"]
    if published:
        cols = [*cols, "source"]
    out = ["<table><tr>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in cols) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{_fmt(r.get(c))}</td>" for c in cols) + "</tr>")
    for row in published or []:
        values = {
            "learner": row["learner"],
            "tasks": row["tasks"],
            "balanced accuracy": percent(row["balanced_accuracy"]),
            "perfectly solved": perfect_cell(row["perfect"], row["tasks"]),
            "source": row["source"],
        }
        out.append(
            "<tr class='published'>" + "".join(f"<td>{_fmt(values.get(c))}</td>" for c in cols) + "</tr>"
        )
    out.append("</table>")
    return "\n".join(out)


def published_rows(task_rows: list[dict], anchors: list) -> list[dict]:
    """Each anchor's figures on exactly the tasks each learner completed (never on other tasks).

    Why: a published mean over other tasks, or another scoring, says nothing about a learner; an
    anchor file (:mod:`orchestrator.analysis.anchor`) holds per-task scores, so it is restricted here.
    """
    done: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for r in task_rows:
        if r.get("tasks"):
            done[r["learner"]].add((r["game"], r["target"]))
    out = []
    for learner, tasks in sorted(done.items()):
        for anchor in anchors:
            figures = anchor.on(tasks)
            if figures["tasks"]:
                out.append(
                    {"learner": f"{anchor.name} on {learner}'s tasks", **figures,
                     "source": f"published: {anchor.source}"}
                )  # fmt: skip
    return out


def predictive_rows(predictive: list[dict], task_rows: list[dict]) -> list[dict]:
    """Predictive power per (game, learner) beside the balanced accuracy of its legal and next tasks."""
    ba = {(r["game"], r["learner"], r["target"]): r.get("balanced_accuracy") for r in task_rows}
    return [
        {
            "game": p["game"],
            "learner": p["learner"],
            "repeat": p["repeat"],
            "legal balanced accuracy": percent(ba.get((p["game"], p["learner"], "legal"))),
            "applicability precision": percent(p["applicability_precision"]),
            "applicability recall": percent(p["applicability_recall"]),
            "next balanced accuracy": percent(ba.get((p["game"], p["learner"], "next"))),
            "effects precision": percent(p["effects_precision"]),
            "effects recall": percent(p["effects_recall"]),
        }
        for p in sorted(predictive, key=lambda p: (p["game"], p["learner"], p["repeat"]))
    ]


def heatmap_ba(task_rows: list[dict], path: Path) -> str | None:
    """Game x learner mean balanced accuracy (over the game's complete tasks)."""
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in task_rows:
        if r.get("tasks") and r.get("balanced_accuracy") is not None:
            cells[(r["game"], r["learner"])].append(r["balanced_accuracy"])
    if not cells:
        return None
    games = sorted({g for g, _ in cells})
    learners = sorted({a for _, a in cells})
    m = np.full((len(games), len(learners)), np.nan)
    for (g, a), v in cells.items():
        m[games.index(g), learners.index(a)] = 100 * np.mean(v)  # percent, as in every table
    fig, ax = plt.subplots(figsize=(1.2 + 0.9 * len(learners), 1 + 0.28 * len(games)))
    im = ax.imshow(m, vmin=0, vmax=100, cmap="viridis", aspect="auto")
    if m.size <= 200:  # small enough to print each cell's value, as the tables do
        for (i, j), v in np.ndenumerate(m):
            if not np.isnan(v):
                ax.text(
                    j,
                    i,
                    f"{v:.0f}%",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="white" if v < 60 else "black",
                )
    ax.set_xticks(range(len(learners)), learners, rotation=45, ha="right")
    ax.set_yticks(range(len(games)), games, fontsize=8)
    fig.colorbar(im, ax=ax, label="balanced accuracy (%)")
    ax.set_title("Balanced accuracy per game (mean over targets)", fontsize=9)
    return _png(fig, path)


def time_to_solve(store: ResultStore, task_rows: list[dict], path: Path) -> str | None:
    """Share of tasks perfectly solved within t seconds of learning.

    A task's time is the sum of its predicates' learning times, averaged over its runs.
    """
    table = store.latest(["learner", "game", "target", "seed", "repeat", "learn_s"]).to_pylist()
    per_run: dict[tuple, float] = defaultdict(float)
    for r in table:
        per_run[(r["learner"], r["game"], r["target"], r["seed"], r["repeat"])] += r["learn_s"] or 0.0
    runs: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for (learner, game, target, _, _), t in per_run.items():
        runs[(learner, game, target)].append(t)
    times = {k: float(np.mean(v)) for k, v in runs.items()}
    solved: dict[str, list[float]] = defaultdict(list)
    totals: dict[str, int] = defaultdict(int)
    for r in task_rows:
        totals[r["learner"]] += 1
        if r.get("tasks") and r.get("perfect") == 1:
            solved[r["learner"]].append(times.get((r["learner"], r["game"], r["target"]), 0.0))
    if not totals:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 4))
    horizon = max([t for ts in solved.values() for t in ts] + [1.0])
    grid = np.geomspace(1e-3, horizon * 1.05, 200)
    for learner in sorted(totals):
        ts = np.sort(solved.get(learner, []))
        share = 100 * np.searchsorted(ts, grid, side="right") / max(totals[learner], 1)
        ax.step(grid, share, where="post", label=learner)
    ax.set_xscale("log")
    ax.set_xlabel("learning time per task (s, summed over its predicates)")
    ax.set_ylabel("tasks perfectly solved (%)")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8)
    ax.set_title("Time to solve")
    return _png(fig, path)


def gnn_curves(store: ResultStore, path: Path) -> str | None:
    """Learning curves (``extra.learning_curve``) and forgetting curves (``extra.forgetting``)."""
    rows = store.latest(["learner", "game", "target", "extra"]).to_pylist()
    curves, forgetting = [], []
    for r in rows:
        try:
            extra = json.loads(r["extra"] or "{}")
        except json.JSONDecodeError:
            continue
        if extra.get("learning_curve"):
            curves.append((f"{r['learner']} {r['game']}", extra["learning_curve"]))
        if extra.get("forgetting"):
            forgetting.append((f"{r['learner']} {r['game']}", extra["forgetting"]))
    if not curves and not forgetting:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for label, curve in curves[:12]:
        xs = [p.get("epoch", i) for i, p in enumerate(curve)]
        ys = [p.get("valid_acc", p.get("valid", np.nan)) for p in curve]
        axes[0].plot(xs, ys, label=label)
    axes[0].set_xlabel("epoch")
    axes[0].set_ylabel("validation accuracy")
    axes[0].set_title("GNN learning curves")
    # matrix[i][j]: accuracy on world j after training on world i (j <= i)
    firsts = [(label, [row[0] for row in matrix if row]) for label, matrix in forgetting[:6]]
    series = [(label, list(range(1, len(ys) + 1)), ys) for label, ys in firsts]
    return _forgetting_and_png(fig, axes, series, "accuracy on the first world", path)


def _forgetting_and_png(fig, axes, series: list[tuple[str, list, list]], ylabel: str, path: Path) -> str:
    """Draw forgetting curves (label, worlds trained so far, accuracy) on axes[1]; legends; the PNG."""
    for label, xs, ys in series:
        axes[1].plot(xs, ys, marker="o", label=label)
    axes[1].set_xlabel("worlds trained so far")
    axes[1].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[1].set_ylabel(ylabel)
    axes[1].set_title("Forgetting (continual setup)")
    for ax in axes:
        if ax.lines:
            ax.legend(fontsize=7)
    return _png(fig, path)


def graphlog_sections(store: ResultStore, path: Path, anchors: Sequence[GraphLogAnchor] = ()) -> list[str]:
    """GraphLog: the sweep summary (published per-world figures beside supervised rows on the same
    worlds), its k-shot and forgetting curves, and the rule learners' programs applied recursively
    (orch analyse compose)."""
    from orchestrator.analysis.compose import score_composed
    from orchestrator.graphlog.jobs import display_rows, stored_rows, summarize

    out: list[str] = []
    summary = summarize(stored_rows(store))
    if summary["table"]:
        rows = [
            _with_published(shown, row, anchors)
            for shown, row in zip(display_rows(summary), summary["table"], strict=True)
        ]
        if anchors:
            note = (f"Columns 'published' hold {', '.join(html.escape(a.source) for a in anchors)}: the mean over "
                    "the worlds the row was scored on, shown only where the file has every one of them.")  # fmt: skip
        else:
            note = ("No published figures: the GraphLog paper's means are over its own 57 worlds, not the worlds "
                    "of this suite. Give --anchor FILE with per-world accuracies (world, model, "
                    "test_accuracy) to show them beside rows on the same worlds.")  # fmt: skip
        out += [
            "<h2>GraphLog sweeps (orch graphlog sweep)</h2>",
            f"<p class='note'>Test accuracy, mean ± std over seeds. {note}</p>",
            _table_html(rows),
        ]
        img = _graphlog_curves(summary, path)
        if img:
            out.append(f"<img alt='graphlog curves' src='data:image/png;base64,{img}'>")
    try:
        composed = score_composed(store)
    except (OSError, ValueError) as e:  # the suite moved or lost a split: say so, keep the page
        composed, out = [], [*out, f"<p class='note'>Composed scores unavailable: {html.escape(str(e))}</p>"]
    if composed:
        out += [
            "<h2>GraphLog: learned rules applied recursively (orch analyse compose)</h2>",
            _table_html(composed),
        ]
    return out


def _with_published(shown: dict, row: dict, anchors: Sequence[GraphLogAnchor]) -> dict:
    """A summary row with each anchor's figure after its test accuracy, on the row's own worlds only."""
    if not anchors:
        return shown
    items = list(shown.items())
    at = list(shown).index("test acc") + 1
    cells = [
        (f"published: {a.name}", a.on(row["model"], row["worlds"]) if row["setup"] == "supervised" else None)
        for a in anchors
    ]
    return dict(items[:at] + cells + items[at:])


def _graphlog_curves(summary: dict, path: Path) -> str | None:
    """k-shot accuracy against adaptation steps, and accuracy on past worlds in the continual setup."""
    kshot: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for t in summary["table"]:
        if t["setup"] == "kshot" and t["test_acc_mean"] is not None:
            kshot[t["model"]].append((t["k"], t["test_acc_mean"]))
    if not kshot and not summary["forgetting"]:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for model, points in sorted(kshot.items()):
        ks, accs = zip(*sorted(points), strict=True)
        axes[0].plot(ks, accs, marker="o", label=model)
    axes[0].set_xlabel("adaptation steps (k)")
    axes[0].set_ylabel("test accuracy on held-out worlds")
    axes[0].set_title("k-shot adaptation")
    series = []
    for curve in summary["forgetting"][:8]:
        steps = [s for s in curve["steps"] if s["past_mean_acc"] is not None]
        series.append((curve["model"], [s["after"] + 1 for s in steps], [s["past_mean_acc"] for s in steps]))
    return _forgetting_and_png(fig, axes, series, "mean accuracy on earlier worlds", path)


MIN_LEARNERS = 3
"""Task selection and task correlation compare learners: with two, every task that tells them apart
carries the same 1 bit and every correlation is +1 or -1, so they are shown from three learners."""


def correlation_heatmap(table: PerformanceTable, path: Path) -> str | None:
    if len(table.tasks) < 2 or len(table.learners) < MIN_LEARNERS:
        return None
    corr, order = task_correlation(table)
    m = corr[np.ix_(order, order)]
    labels = [table.tasks[i] for i in order]
    size = min(14, 2 + 0.12 * len(labels))
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    im = ax.imshow(m, vmin=-1, vmax=1, cmap="RdBu_r")
    fs = 8 if len(labels) <= 60 else 4
    ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=fs)
    ax.set_yticks(range(len(labels)), labels, fontsize=fs)
    fig.colorbar(im, ax=ax, label="Pearson correlation of learner performance")
    ax.set_title("Task-by-task correlation (hierarchically clustered)")
    return _png(fig, path)


def selection_section(store: ResultStore, k: int, metrics: list[str], figdir: Path) -> tuple[str, dict]:
    runs = complete_runs(runs_from_store(store))
    learners = sorted({r["learner"] for r in runs})
    if len(learners) < MIN_LEARNERS:
        return _not_shown(
            f"needs at least {MIN_LEARNERS} learners with complete tasks to mean anything (this store has "
            f"{len(learners)}{': ' + ', '.join(learners) if learners else ''}); with two, every task that "
            "separates them carries the same 1 bit and every task correlation is +1 or -1"
        ), {}
    table = PerformanceTable.from_runs(runs, metrics)
    sel = greedy_select(table, k)
    check = check_selection(table, sel)
    rows = [
        {
            "rank": i + 1,
            "task": t,
            "cumulative_gain_bits": g,
            "single_gain_bits": sel.single_gain[t],
            "tied_candidates": sel.tied[i],
            "decided_by": sel.decided_by[i],
        }  # fmt: skip
        for i, (t, g) in enumerate(zip(sel.tasks, sel.cumulative_gain, strict=True))
    ]
    reps = int(table.repeats.min()) if table.repeats.size else 0
    parts = [
        f"<p>{len(table.learners)} learners, {len(table.tasks)} tasks, metrics {', '.join(metrics)}, at least "
        f"{reps} run(s) per (task, learner). Maximum gain log2({len(table.learners)}) = {sel.max_gain:.2f} bits.</p>",
        _table_html(rows),
        f"<p>Kendall tau of the learner ranking on the {len(sel.tasks)} chosen tasks vs all tasks: "
        f"<b>{check.tau_selected:.3f}</b>; random {len(sel.tasks)}-task subsets: {check.tau_random_mean:.3f} "
        f"± {check.tau_random_std:.3f} ({check.random_samples} samples).</p>",
    ]
    img = correlation_heatmap(table, figdir / "task_correlation.png")
    if img:
        parts.append(f"<img alt='task correlation' src='data:image/png;base64,{img}'>")
    return "\n".join(parts), {
        "selected": rows,
        "tau": check.tau_selected,
        "tau_random": check.tau_random_mean,
    }


def store_kinds(store: ResultStore) -> tuple[set[str], list[str]]:
    """The benchmarks of the store's rows (``iggp``, ``ggp``, ``graphlog``:
    :func:`orchestrator.analysis.benchmarks.benchmark_of`) and the GNN learners that have rows, so
    that headings and "not in this report" lines say what this store holds."""
    rows = store.latest(["dataset", "learner"]).to_pylist()
    kinds = set(benchmarks_of(r["dataset"] for r in rows))
    gnn = sorted({r["learner"] for r in rows if (r["learner"] or "").startswith("gnn-")})
    return kinds, gnn


def learners_heading(kinds: set[str]) -> str:
    """The learner table's heading: the IGGP paper's Table 3 only for a store of IGGP tasks."""
    if kinds == {"iggp"}:
        return "Learners (IGGP Table 3)"
    if kinds == {"ggp"}:
        return "Learners (GGP benchmark: generated corpus)"
    if kinds == {"graphlog"}:
        return "Learners (GraphLog worlds: one task per world)"
    return "Learners"


def write_html(
    store: ResultStore, out: Path, k: int = 10, metrics: tuple[str, ...] = ("ba", "perfect"),
    anchors: list | None = None,
) -> Path:  # fmt: skip
    """Write the report page to ``out`` and its PNG figures to ``out``'s ``<stem>_figures/``.

    ``anchors`` are published figures read from files (:mod:`orchestrator.analysis.anchor`): per-task
    IGGP scores, shown beside each learner on that learner's IGGP tasks only, and per-world GraphLog
    accuracies, shown beside supervised GraphLog rows on the same worlds only. With several
    benchmarks in the store, each gets its own part (figures in ``<stem>_figures/<benchmark>/``).
    """
    out = Path(out)
    figdir = out.with_name(out.stem + "_figures")
    from orchestrator.analysis.current import Currency

    currency = Currency()
    groups = benchmark_tables(store, by=("learner", "target", "game", "task"), currency=currency)
    iggp_anchors = [a for a in anchors or [] if isinstance(a, Anchor)]
    sections = [
        f"<h1>orch report</h1><p class='note'>Store: {html.escape(store.uri)}."
        f" {html.escape(STRICT_NOTE)} Rows in italics are published figures read from the named file, on the same tasks"
        " as the learner they name, not runs of this store.</p>"
        f"<p class='note'>Read: {html.escape(currency.line())}.</p>",
    ]
    absent: list[tuple[str, str]] = []  # (section, why): analyses with no data here, a line each at the end
    graphlog = graphlog_sections(
        store, figdir / "graphlog_curves.png", [a for a in anchors or [] if isinstance(a, GraphLogAnchor)]
    )
    if len(groups) == 1:  # one benchmark: the page as it always was, GraphLog between figures and selection
        ((name, tables),) = groups.items()
        before, after = _benchmark_sections(
            store, tables, figdir, k, metrics, iggp_anchors if name == IGGP else [], absent
        )
        sections += [*before, *graphlog, *after]
    else:
        for name, tables in groups.items():
            found: list[tuple[str, str]] = []
            before, after = _benchmark_sections(
                BenchmarkView(store, name), tables, figdir / name, k, metrics,
                iggp_anchors if name == IGGP else [], found,
            )  # fmt: skip
            sections += [
                f"<h2 class='benchmark'>Benchmark: {html.escape(title(name))}</h2>",
                f"<p class='note'>Tables, means and figures of this part are computed on the {html.escape(name)} "
                "rows alone; no figure of this page pools two benchmarks.</p>",
                *(part.replace("<h2>", "<h3>").replace("</h2>", "</h3>") for part in [*before, *after]),
            ]
            absent += [(f"{title(name)}: {section}", why) for section, why in found]
        sections += graphlog
    if not graphlog:
        absent.append(("GraphLog", "no GraphLog sweep or GraphLog rule-learner runs in this store"))
    if absent:
        items = "".join(f"<li><b>{html.escape(a)}</b>: {html.escape(why)}.</li>" for a, why in absent)
        sections += ["<h2>Not in this report</h2>", f"<ul class='note'>{items}</ul>"]
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>orch report</title><style>{CSS}</style>"
        f"</head><body>{''.join(sections)}</body></html>"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page)
    return out


def _benchmark_sections(
    store: ResultStore, tables: dict[str, list[dict]], figdir: Path, k: int, metrics: tuple[str, ...],
    anchors: list[Anchor], absent: list[tuple[str, str]],
) -> tuple[list[str], list[str]]:  # fmt: skip
    """The sections of one benchmark (``store`` holds its rows alone when the page has several):
    those before the GraphLog sections (tables, predictive power, figures) and those after (task
    selection, by game, incomplete tasks), so that a one-benchmark page keeps its order."""
    task_rows = tables.get("task", [])
    kinds, gnn_learners = store_kinds(store)
    scored = any(r.get("tasks") for r in task_rows)
    empty = "no complete task in this store yet (orch status says what is missing)"
    before = [
        f"<h2>{html.escape(learners_heading(kinds))}</h2>",
        _table_html(tables.get("learner", []), published_rows(task_rows, anchors)),
        "<h2>Like for like</h2>",
        "<p class='note'>Errored predicates (and timeouts without a model) are scored as predicting false "
        "for every atom. Each figure is also given with fallback models counted as failures. Trivial tasks "
        "have no positive or no negative test atom; perfect is also given without them.</p>",
        _table_html(tables.get("like_for_like", [])),
        f"<h2>{'By target (Tables 4 and 5)' if kinds == {'iggp'} else 'By target'}</h2>",
        _table_html(tables.get("target", [])) if tables.get("target") else _not_shown(empty),
    ]
    before += _predictive_section(store, task_rows, absent)
    before += _figure_sections(store, task_rows, figdir, scored, empty, gnn_learners, absent)
    sel_html, _ = selection_section(store, k, list(metrics), figdir)
    after = ["<h2>Task selection by information gain and task correlation</h2>", sel_html]
    after += [f"<h2>{'By game (Table 5 style)' if kinds == {'iggp'} else 'By game or world'}</h2>"]
    after += [_table_html(tables["game"]) if tables.get("game") else _not_shown(empty)]
    if tables.get("incomplete"):
        after += [
            "<h2>Incomplete tasks</h2>",
            "<p class='note'>Left out of every table and figure above, by learner and reason.</p>",
            _table_html(tables["incomplete"]),
        ]
    return before, after


def _predictive_section(
    store: ResultStore, task_rows: list[dict], absent: list[tuple[str, str]]
) -> list[str]:
    """Predictive power of learned legal/next rules, when ``orch analyse predictive`` has run."""
    from orchestrator.analysis.predictive import read_predictive

    predictive = read_predictive(store)
    if not predictive:
        absent.append(
            ("Predictive power", f"not computed for this store (orch analyse predictive --store {store.uri})")
        )
        return []
    return [
        "<h2>Predictive power (learned legal and next rules vs the reference game)</h2>",
        f"<p class='note'>One row per run (game, learner, seed, repeat): {len(predictive)} run(s) "
        "scored by <code>orch analyse predictive</code>, which lists the runs it left out and why.</p>",
        _table_html(predictive_rows(predictive, task_rows)),
    ]


def _figure_sections(
    store: ResultStore, task_rows: list[dict], figdir: Path, scored: bool, empty: str, gnn_learners: list[str],
    absent: list[tuple[str, str]],
) -> list[str]:  # fmt: skip
    """The heatmap, the time-to-solve curves and the GNN curves (or why each is not shown)."""
    img = heatmap_ba(task_rows, figdir / "heatmap_ba.png")
    sections = ["<h2>Balanced accuracy per game</h2>"]
    sections += [f"<img alt='heatmap' src='data:image/png;base64,{img}'>" if img else _not_shown(empty)]
    sections += ["<h2>Time to solve</h2>"]
    if any(r.get("tasks") and r.get("perfect") == 1 for r in task_rows):
        img = time_to_solve(store, task_rows, figdir / "time_to_solve.png")
        sections += [f"<img alt='time to solve' src='data:image/png;base64,{img}'>"]
    else:
        sections += [
            _not_shown("no task was perfectly solved, so every curve would be flat at 0" if scored else empty)
        ]
    img = gnn_curves(store, figdir / "gnn_curves.png")
    if img:
        sections += [
            "<h2>GNN learning and forgetting curves</h2>",
            f"<img alt='gnn curves' src='data:image/png;base64,{img}'>",
        ]
    elif gnn_learners:  # they ran (their scores are in the tables above) but stored no curves
        absent.append(("GNN learning and forgetting curves", f"{', '.join(gnn_learners)} ran in this store "
                       "(scored in the tables above) but stored no learning or forgetting curves; "
                       "orch graphlog sweep stores them"))  # fmt: skip
    else:
        absent.append(("GNN learning and forgetting curves", "no GNN learner (gnn-...) ran in this store"))
    return sections
