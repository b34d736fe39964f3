"""Result tables in the shape of the IGGP paper's Tables 3-5, computed from the store alone.

Scoring is strict (../shared/papers/notes.md): every atom listed under ``atoms:`` of the test file
is scored, and a task (game, target) is scored by pooling the counts of *all* its flattened
predicates into one balanced accuracy. Perfectly solved means exactly 1.0, which with integer
counts means no false positive and no false negative at all.

What counts:

* Each job's latest attempt (:meth:`ResultStore.latest`).
* ``ok`` and ``timeout`` rows count with their counts (a timeout holds its best model's counts).
* A failed job (``error``, ``oom``, ``killed``, a timeout before any model) is scored as
  predicting false for every atom (the counts the worker stores as ``extra.all_false``), never
  left out; the ``errored`` column counts such predicates.
* A task is *complete* for a learner when every predicate of the task has a row with counts. The
  predicates of a task are those in the sweep manifests plus those any learner has a row for.
  A task with a missing job, or a failed job from a store without ``all_false`` counts, is
  *incomplete*: it is left out of the means and shares, and every table has an ``incomplete``
  column so that learners are only compared on equal terms knowingly.
* Several seeds or repeats of one task are averaged: the task's balanced accuracy is their mean,
  and its "perfect" value the fraction of runs solved perfectly (an integer count for one run).
* Rows of one learner and task on different data (dataset fingerprints) are not mixed: without
  ``--sweep`` the newest data per task is read and the older rows are *superseded*
  (:mod:`orchestrator.analysis.current`); the report says which sweeps it read. With ``--sweep``
  a task of that sweep on two datasets is incomplete ("mixed datasets").
* A learner run with several budgets is shown once per budget, as ``learner (60s)``.
* Each benchmark (IGGP, the generated GGP corpus, GraphLog: :mod:`orchestrator.analysis.benchmarks`)
  is its own group of tables with its own means (:func:`benchmark_tables`), never pooled with
  another; a store of one benchmark reports as one group without a heading.
"""

from __future__ import annotations

import csv
import io
import json
import re
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pyarrow.compute as pc

from learners.metrics import Counts, pool
from orchestrator.analysis.benchmarks import IGGP, BenchmarkView, benchmarks_of, ordered, title
from orchestrator.analysis.current import Currency, newest_per_task
from orchestrator.analysis.results import target_key
from orchestrator.storage.schema import FINAL_STATUSES, GRAPHLOG_TARGET_PREFIX, NOT_APPLICABLE
from orchestrator.storage.store import ResultStore, StoreError

TABLES = ("learner", "target", "game", "task")
FORMATS = ("table", "csv", "json", "md")
STRICT_NOTE = (
    "Strict scoring: every atom under `atoms:` of each test file is scored; a task pools all its "
    "predicates; perfectly solved = balanced accuracy exactly 1.0. Incomplete tasks are excluded."
)

TITLES = {
    "incomplete": "incomplete tasks (left out of the tables above)",
    "like_for_like": "like for like (errored predicates scored as predicting false; "
    "fallback models also counted as failures; trivial tasks: no positive or no negative test atom)",
}

_ROW_COLUMNS = [
    "job_id",
    "sweep",
    "dataset",
    "dataset_fingerprint",
    "game",
    "target",
    "predicate",
    "learner",
    "budget_s",
    "seed",
    "repeat",
    "status",
    "params",
    "finished",
]


@dataclass
class TaskScore:
    """One learner on one task (game, target), over its runs.

    ``runs`` maps ``(seed, repeat)`` to ``{predicate: Counts}`` (``None`` for a job without
    counts); other modules (select, compare) read it in that shape.
    """

    learner: str
    game: str
    target: str
    runs: dict[tuple, dict[str, Counts | None]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    datasets: set[str | None] = field(default_factory=set)
    errored: int = 0
    """Predicates of failed jobs scored as predicting false everywhere (over all runs)."""

    def complete(self, predicates: set[str]) -> bool:
        return (
            bool(self.runs)
            and len(self.datasets) <= 1
            and all(
                set(preds) >= predicates and all(c is not None for c in preds.values())
                for preds in self.runs.values()
            )
        )

    def reason(self) -> str:
        """Why the task is incomplete: mixed data, the worst status among its jobs, or 'missing'."""
        if len(self.datasets) > 1:
            return "mixed datasets (use --sweep)"
        for status in ("error", "oom", "lost", "killed", "timeout"):
            if status in self.failures:
                return status if status != "timeout" else "timeout without a model"
        return "missing"

    def pooled(self) -> list[Counts]:
        return [pool(c for c in preds.values() if c is not None) for preds in self.runs.values()]


def _label(learner: str, budget: float | None, budgets: dict[str, set]) -> str:
    if len(budgets[learner]) > 1 and budget is not None:
        return f"{learner} ({budget:g}s)"
    return learner


def task_scores(
    store: ResultStore, sweep: str | None = None, split: str = "test", currency: Currency | None = None
) -> tuple[list, dict]:
    """Every (learner, game, target) with its runs, and each task's predicate set.

    Without ``sweep``, the newest data per task (:func:`orchestrator.analysis.current.newest_per_task`);
    ``currency``, when given, is filled with the sweeps read and the rows left out as superseded.
    """
    if split not in ("test", "validate"):
        raise StoreError(f"split must be 'test' or 'validate', not {split!r}")
    counts = [f"{split}_{c}" for c in ("tp", "fp", "tn", "fn")]
    rows = store.latest([*_ROW_COLUMNS, *counts, "extra"])
    manifests = store.manifests()
    # GraphLog setup jobs (orch graphlog sweep) score worlds, not tasks: `orch graphlog results`.
    rows = rows.filter(pc.invert(pc.starts_with(rows["target"], GRAPHLOG_TARGET_PREFIX)))
    if manifests.num_rows:
        manifests = manifests.filter(pc.invert(pc.starts_with(manifests["target"], GRAPHLOG_TARGET_PREFIX)))
    if sweep is not None:
        planned = manifests.filter(pc.field("sweep") == sweep)
        manifests = planned
        if planned.num_rows:
            rows = rows.filter(pc.is_in(rows["job_id"], planned["job_id"]))
        else:
            rows = rows.filter(pc.field("sweep") == sweep)
    else:
        rows, found = newest_per_task(rows)
        if currency is not None:
            currency.__dict__.update(found.__dict__)

    predicates: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in manifests.select(["game", "target", "predicate"]).to_pylist():
        predicates[(r["game"], r["target"])].add(r["predicate"])
    records = rows.to_pylist()
    budgets: dict[str, set] = defaultdict(set)
    for r in records:
        predicates[(r["game"], r["target"])].add(r["predicate"])
        budgets[r["learner"]].add(r["budget_s"])

    scores: dict[tuple, TaskScore] = {}
    not_applicable = set()  # (label, game, target): the learner said it does not apply to the task
    for r in records:
        label = _label(r["learner"], r["budget_s"], budgets)
        if r["status"] == NOT_APPLICABLE:
            not_applicable.add((label, r["game"], r["target"]))
            continue
        score = scores.setdefault((label, r["game"], r["target"]), TaskScore(label, r["game"], r["target"]))
        run = score.runs.setdefault((r["seed"], r["repeat"]), {})
        score.datasets.add(r["dataset_fingerprint"])
        values = [r[c] for c in counts]
        scored = r["status"] in FINAL_STATUSES and all(v is not None for v in values)
        run[r["predicate"]] = Counts(*values) if scored else _all_false(r["extra"], split)
        if not scored:
            score.failures.append(r["status"])
            if currency is not None and r["status"] not in FINAL_STATUSES:
                key = (r["status"], r["learner"])
                currency.failed[key] = currency.failed.get(key, 0) + 1
            score.errored += run[r["predicate"]] is not None
    # A learner that never ran some task of the sweep has an incomplete (missing) task there.
    for label in {s.learner for s in scores.values()}:
        for game, target in predicates:
            if (label, game, target) not in not_applicable:
                scores.setdefault((label, game, target), TaskScore(label, game, target))
    return sorted(
        scores.values(), key=lambda s: (s.learner, s.game, target_key(s.target), s.target)
    ), predicates


def _all_false(extra: str | None, split: str) -> Counts | None:
    """What predicting false everywhere scores on ``split`` (stored by the worker), if known."""
    nothing = json.loads(extra or "{}").get("all_false") or {}
    values = [nothing.get(f"{split}_{c}") for c in ("tp", "fp", "tn", "fn")]
    known = [int(v) for v in values if v is not None]
    return Counts(*known) if len(known) == 4 else None


def _summary(group: Iterable[tuple[TaskScore, set[str]]]) -> dict:
    bas, perfect, incomplete, errored = [], 0.0, 0, 0
    for score, preds in group:
        if not score.complete(preds):
            incomplete += 1
            continue
        errored += score.errored
        runs = score.pooled()
        bas.append(sum(c.balanced_accuracy for c in runs) / len(runs))
        perfect += sum(c.perfect for c in runs) / len(runs)
    n = len(bas)
    return {
        "tasks": n,
        "incomplete": incomplete,
        "balanced_accuracy": sum(bas) / n if n else None,
        "perfect": int(perfect) if perfect == int(perfect) else round(perfect, 3),
        "perfect_share": perfect / n if n else None,
        "errored": errored,
    }


def report_tables(
    store: ResultStore,
    by: Sequence[str] = ("learner", "target", "game"),
    sweep: str | None = None,
    split: str = "test",
    currency: Currency | None = None,
) -> dict[str, list[dict]]:
    """Tables keyed by name: ``learner`` (Table 3), ``target`` (learner x target, Table 4), ``game``
    (game x learner, Table 5), ``task`` (one row per learner and task), plus ``incomplete``
    (learner x reason: how many tasks were left out and why) and, with ``learner`` on test,
    ``like_for_like`` (:func:`orchestrator.analysis.results.like_for_like`)."""
    unknown = [b for b in by if b not in TABLES]
    if unknown:
        raise StoreError(f"unknown table(s) {unknown}; choose from {list(TABLES)}")
    scores, predicates = task_scores(store, sweep, split, currency)
    keyed = [(s, predicates[(s.game, s.target)]) for s in scores]

    def grouped(key) -> dict:
        groups: dict[tuple, list] = defaultdict(list)
        for item in keyed:
            groups[key(item[0])].append(item)
        return groups

    tables: dict[str, list[dict]] = {}
    if "learner" in by:
        tables["learner"] = [
            {"learner": k[0], **_summary(g)} for k, g in grouped(lambda s: (s.learner,)).items()
        ]
    if "target" in by:
        groups = grouped(lambda s: (s.learner, s.target))
        order = sorted(groups, key=lambda k: (k[0], target_key(k[1]), k[1]))
        tables["target"] = [{"learner": k[0], "target": k[1], **_summary(groups[k])} for k in order]
    if "game" in by:
        groups = grouped(lambda s: (s.game, s.learner))
        tables["game"] = [{"game": k[0], "learner": k[1], **_summary(groups[k])} for k in sorted(groups)]
    if "task" in by:
        tables["task"] = [
            {"learner": s.learner, "game": s.game, "target": s.target, **_summary([(s, p)])} for s, p in keyed
        ]
    if "learner" in by and split == "test":
        from orchestrator.analysis.results import like_for_like

        tables["like_for_like"] = like_for_like(store, sweep)
    reasons: dict[tuple[str, str], int] = defaultdict(int)
    for s, preds in keyed:
        if not s.complete(preds):
            reasons[(s.learner, s.reason())] += 1
    tables["incomplete"] = [{"learner": k[0], "reason": k[1], "tasks": v} for k, v in sorted(reasons.items())]
    return tables


def store_benchmarks(store: ResultStore, sweep: str | None = None) -> list[str]:
    """The benchmarks the report tables of ``store`` (or of its ``sweep``) read, in report order:
    those of its task rows and planned jobs (GraphLog setup jobs score worlds and are left out)."""
    tables = [
        store.latest(["dataset", "target", "sweep"]),
        store.manifests().select(["dataset", "target", "sweep"]),
    ]
    datasets: set[str | None] = set()
    for table in tables:
        if sweep is not None:
            table = table.filter(pc.field("sweep") == sweep)
        table = table.filter(pc.invert(pc.starts_with(table["target"], GRAPHLOG_TARGET_PREFIX)))
        datasets.update(table["dataset"].to_pylist())
    return ordered(benchmarks_of(datasets))


def benchmark_tables(
    store: ResultStore,
    by: Sequence[str] = ("learner", "target", "game"),
    sweep: str | None = None,
    split: str = "test",
    currency: Currency | None = None,
) -> dict[str, dict[str, list[dict]]]:
    """:func:`report_tables` per benchmark (:func:`store_benchmarks`), keyed by benchmark name.

    Why: the IGGP dataset and a generated GGP corpus can share game names and mean different
    things, so each benchmark's tables are computed on its rows alone (a
    :class:`~orchestrator.analysis.benchmarks.BenchmarkView`). A store of one benchmark (or none)
    is read as a whole, exactly as :func:`report_tables` reads it.
    """
    names = store_benchmarks(store, sweep)
    if len(names) <= 1:
        return {names[0] if names else IGGP: report_tables(store, by, sweep, split, currency)}
    out = {}
    for name in names:
        found = Currency()
        out[name] = report_tables(BenchmarkView(store, name), by, sweep, split, found)
        if currency is not None:
            currency.merge(found)
    return out


# --- rendering -------------------------------------------------------------------------------------


def percent(value: float | None) -> str:
    """A share as people read it in every table of orch (terminal, Markdown, HTML): ``94.5%``."""
    return "-" if value is None else f"{100 * value:.1f}%"


def perfect_cell(count: float | None, total: int | None) -> str:
    """Perfectly solved tasks as ``count/total (share)``: ``3/12 (25.0%)``; ``-`` without tasks.

    ``count`` may be fractional (repeats: the mean number of runs solved perfectly)."""
    if count is None or not total:
        return "-"
    shown = f"{count:g}" if float(count).is_integer() else f"{count:.2f}"
    return f"{shown}/{total} ({100 * count / total:.1f}%)"


def display_rows(rows: list[dict]) -> list[dict]:
    """Summary rows as a person reads them: balanced accuracy in percent and one ``perfect`` column
    as ``count/total (share)`` instead of a count beside a fraction (JSON and CSV keep raw numbers)."""
    out = []
    for r in rows:
        d = {}
        for key, value in r.items():
            if key == "balanced_accuracy":
                d["balanced accuracy"] = percent(value)
            elif key == "perfect" and "tasks" in r:
                d["perfectly solved"] = perfect_cell(value if r["tasks"] else None, r["tasks"])
            elif key == "ba_fallback_failed":
                d["balanced accuracy, fallback = failure"] = percent(value)
            elif key == "perfect_fallback_failed" and "tasks" in r:
                d["perfectly solved, fallback = failure"] = perfect_cell(
                    value if r["tasks"] else None, r["tasks"]
                )
            elif key != "perfect_share" or "tasks" not in r:
                d[PROSE.get(key, key.replace("_", " "))] = value
        out.append(d)
    return out


PROSE = {
    "errored": "errored predicates",
    "errored_predicates": "errored predicates",
    "fallback_predicates": "fallback predicates",
    "trivial_tasks": "trivial tasks",
    "perfect_nontrivial": "perfectly solved, non-trivial tasks",
    "perfect_ci95": "perfectly solved, 95% interval",
}
"""Column names as people read them (text, Markdown and HTML tables; JSON and CSV keep the keys)."""

TEXT_WIDTH = 120
"""The widest a text table may be before its headers wrap, then its rows turn into columns."""


_NUMBER = re.compile(r"^-$|^[\d.]+%?$|^[\d.]+/\d+ \([\d.]+%\)$")


def _cell(column: str, value) -> str:
    if value is None:
        return "-"
    if column in ("balanced_accuracy", "perfect_share", "ba_fallback_failed") and isinstance(value, float):
        return percent(value)
    if isinstance(value, float):  # never 16 digits: 4 significant ones say as much here
        return f"{value:.4g}"
    return str(value)


def _wrap(header: str, width: int) -> list[str]:
    """``header`` in lines of at most ``width`` characters, broken at spaces (a longer word stays whole)."""
    lines: list[str] = []
    for word in header.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _text_table(rows: list[dict]) -> list[str]:
    """Aligned columns; wider than :data:`TEXT_WIDTH`, the headers wrap, and if that is not enough
    each row becomes a column (:func:`_transposed`), so a pipe or a log never gets 300-character lines."""
    columns = list(rows[0])
    cells = [[_cell(c, r[c]) for c in columns] for r in rows]
    body = [max((len(row[i]) for row in cells), default=0) for i in range(len(columns))]
    widths = [max(len(c), b) for c, b in zip(columns, body, strict=True)]
    headers = [[c] for c in columns]
    if sum(widths) + 2 * (len(widths) - 1) > TEXT_WIDTH:
        widths = [max(b, max(len(w) for w in c.split(" "))) for c, b in zip(columns, body, strict=True)]
        headers = [_wrap(c, w) for c, w in zip(columns, widths, strict=True)]
        if sum(widths) + 2 * (len(widths) - 1) > TEXT_WIDTH:
            return _transposed(columns, cells)
    numeric = [
        all(isinstance(r[c], int | float) or r[c] is None or _NUMBER.match(str(r[c])) for r in rows)
        for c in columns
    ]

    def line(values: list[str]) -> str:
        return "  ".join(
            v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)
        ).rstrip()

    depth = max(len(h) for h in headers)
    # headers bottom-aligned, so that the last line of every header sits on the rule
    head = [
        line([h[i - depth + len(h)] if i >= depth - len(h) else "" for h in headers]) for i in range(depth)
    ]
    return [*head, line(["-" * w for w in widths]), *(line(r) for r in cells)]


def _transposed(columns: list[str], cells: list[list[str]]) -> list[str]:
    """A table too wide for :data:`TEXT_WIDTH` as one line per column, one column per row (the first
    column's values head them), in blocks of as many rows as fit."""
    label = max(len(c) for c in columns[1:])
    widths = [max(len(row[i]) for i in range(len(columns))) for row in cells]
    out: list[str] = []
    start = 0
    while start < len(cells):
        end, used = start, label
        while end < len(cells) and (end == start or used + 2 + widths[end] <= TEXT_WIDTH):
            used += 2 + widths[end]
            end += 1
        block = range(start, end)
        out.append(" " * label + "".join("  " + cells[j][0].rjust(widths[j]) for j in block))
        out.append(" " * label + "".join("  " + "-" * widths[j] for j in block))
        for i, c in enumerate(columns[1:], start=1):
            out.append(c.ljust(label) + "".join("  " + cells[j][i].rjust(widths[j]) for j in block))
        out.append("")
        start = end
    return out[:-1]


def _md_table(rows: list[dict]) -> list[str]:
    columns = list(rows[0])
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---" for _ in columns) + "|",
        *("| " + " | ".join(_cell(c, r[c]) for c in columns) + " |" for r in rows),
    ]


def render(tables: dict[str, list[dict]], format: str = "table") -> str:
    """``tables`` as text: ``table`` (aligned columns), ``md``, ``csv`` (tables separated by a
    ``# name`` line) or ``json`` (raw numbers, shares as fractions)."""
    if format == "json":
        return json.dumps({"note": STRICT_NOTE, **tables}, indent=2)
    _check_format(format)
    if format == "csv":
        return "\n".join(_csv_lines(tables)) + "\n"
    out = _table_lines(tables, format)
    if not any(tables.values()):
        out.append("no results in the store")
    out.append(STRICT_NOTE)
    return "\n".join(out) + "\n"


def render_benchmarks(groups: dict[str, dict[str, list[dict]]], format: str = "table") -> str:
    """:func:`benchmark_tables` as text: one group of tables per benchmark, headed by its name and
    with its own means (JSON: ``{"note", "benchmarks": {name: tables}}``; CSV: ``# name/table``).
    One group renders exactly as :func:`render` renders its tables."""
    if len(groups) <= 1:
        return render(next(iter(groups.values()), {}), format)
    if format == "json":
        return json.dumps({"note": STRICT_NOTE, "benchmarks": groups}, indent=2)
    _check_format(format)
    if format == "csv":
        return (
            "\n".join(line for name, tables in groups.items() for line in _csv_lines(tables, f"{name}/"))
            + "\n"
        )
    out: list[str] = []
    for name, tables in groups.items():
        heading = f"Benchmark: {title(name)}"
        out += [f"# {heading}", ""] if format == "md" else [heading, "=" * len(heading)]
        out += _table_lines(tables, format) or ["no results of this benchmark", ""]
    out.append(STRICT_NOTE)
    return "\n".join(out) + "\n"


def _check_format(format: str) -> None:
    if format not in FORMATS:
        raise StoreError(f"unknown format {format!r}; choose from {list(FORMATS)}")


def _csv_lines(tables: dict[str, list[dict]], prefix: str = "") -> list[str]:
    """Each non-empty table as CSV after a ``# {prefix}{name}`` line."""
    out: list[str] = []
    for name, rows in tables.items():
        if rows:
            buf = io.StringIO()
            writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
            out += [f"# {prefix}{name}", buf.getvalue().rstrip("\n")]
    return out


def _table_lines(tables: dict[str, list[dict]], format: str) -> list[str]:
    """Each non-empty table under its title, as aligned text or Markdown (``format``)."""
    out: list[str] = []
    for name, rows in tables.items():
        if not rows:
            continue
        heading = TITLES.get(name, f"by {name}")
        out.append(f"## {heading}" if format == "md" else textwrap.fill(f"{heading}:", TEXT_WIDTH))
        shown = display_rows(rows)
        out += _md_table(shown) if format == "md" else _text_table(shown)
        out.append("")
    return out
