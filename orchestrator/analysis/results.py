"""Per-task results files: the committed figures behind docs/benchmarks.md, traceable to the code.

A *results file* (``docs/results/iggp/LEARNER_BUDGETs.csv``) holds one row per (game, target) for
one learner at one budget, exported from a store by ``orch bench iggp``. Why per task and not
only totals: anyone can rerun the documented command at HEAD and compare task by task, and a
comparison with a published system (:mod:`orchestrator.analysis.anchor`) is per task too.

How a task is scored here (the *like-for-like* rules, shared with ``orch report``):

* Strict scoring, sub-predicates pooled (as in :mod:`orchestrator.analysis.report`).
* A predicate whose job errored, or timed out before any model, is scored as predicting false
  for every atom (``extra.all_false``, stored by the worker), never left out; it is counted in
  ``errored_predicates``. A task is only missing when a predicate has no row (or no such counts).
* Every figure is given twice: as scored, and with the models the learner marked as made by its
  fallback (``extra.fallback``, e.g. ilasp's best partial cover) counted as failures, i.e. also
  scored as predicting false everywhere (``*_fallback_failed`` columns). For such a learner a job
  stopped at its budget (``timeout``) holds an unfinished anytime model, which counts as a
  fallback too: only models the learner returned as complete count in the second figure.
* A task whose test split has no positive or no negative atom is ``trivial``: its "perfect" says
  little, so summaries also give perfect without the trivial tasks.
* With several repeats, the counts and ``balanced_accuracy``/``perfect`` are those of the first run
  (seed 0, repeat 0); ``ba_mean``/``ba_std`` and ``perfect_runs`` cover all runs.

Every row records the commit and a hash of the learner's source files (:func:`source_hash`). The
CI test ``tests/orchestrator/analysis/test_results.py`` fails when a committed file's hash differs from the sources at
HEAD, unless its rows are marked ``stale`` (``orch bench stale``), which the docs then show.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import io
import json
import math
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from learners.base import CUT_BY_WORK
from learners.metrics import Counts, balanced_accuracy, pool
from orchestrator.analysis.locations import RESULTS_DIR as RESULTS_DIR  # re-exported for the docs generator
from orchestrator.analysis.locations import ROOT
from orchestrator.storage.schema import FINAL_STATUSES
from orchestrator.storage.store import ResultStore, StoreError
from tasks.task import TARGETS

SCORING_FILES = ("learners/metrics.py",)
"""Files besides the learner's own whose change changes every figure (the scoring)."""

COLUMNS = [
    "game", "target", "learner", "budget_s", "runs", "predicates",
    "balanced_accuracy", "perfect", "tp", "fp", "tn", "fn",
    "ba_fallback_failed", "perfect_fallback_failed", "errored_predicates", "fallback_predicates",
    "statuses", "trivial", "learn_s", "ba_mean", "ba_std", "perfect_runs",
    "commit", "source_hash", "stale",
]  # fmt: skip
"""The columns of a results file, in order."""


# --- the learner's sources -------------------------------------------------------------------------


def source_files(learner: str) -> list[str]:
    """Repository-relative source files that define ``learner``'s figures, sorted.

    The module that registers the learner family plus the scoring (:data:`SCORING_FILES`). When
    it lives in a subpackage such as ``learners/ilp`` (or is one, as ``learners/gnn``): the modules
    of that package it imports, directly or through each other (:func:`package_imports`), so that
    a change to ``learners/ilp/reference.py`` leaves ``ilasp``'s committed figures current while a
    change to ``learners/ilp/search.py`` marks them stale.
    """
    from learners.base import spec_for

    spec, _ = spec_for(learner)
    module = sys.modules[spec.factory.__module__]
    source = Path(module.__file__ or "")
    if len(spec.factory.__module__.split(".")) > 2 or source.name == "__init__.py":
        files = sorted(package_imports(source))
    else:
        files = [source]
    # a learner from another package (an ``orch.learners`` entry point) is named by its absolute path
    paths = {str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f) for f in files} | set(
        SCORING_FILES
    )
    return sorted(paths)


def package_imports(source: Path) -> set[Path]:
    """``source`` and every module of its package that it imports, transitively: any ``import``
    statement, at any depth (a lazy import inside a function counts). A package's ``__init__.py``
    is followed only from itself: importing ``learners.ilp.search`` runs ``learners/ilp/__init__.py``,
    but what that registers does not define the figures of the module imported."""
    package = source.parent
    found: set[Path] = set()
    todo = [source]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.add(path)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            for name in names:
                candidate = ROOT.joinpath(*name.split(".")).with_suffix(".py")
                if candidate.parent == package and candidate.name != "__init__.py" and candidate.is_file():
                    todo.append(candidate)
    return found


def source_hash(learner: str) -> str:
    """A short sha256 of ``learner``'s source files (paths and contents), as they are on disk."""
    digest = hashlib.sha256()
    for rel in source_files(learner):
        digest.update(rel.encode() + b"\0" + (ROOT / rel).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def git_commit(root: Path = ROOT) -> str:
    """The short HEAD commit, with ``+dirty`` when tracked files differ from it ("" without git).

    Results files (``docs/results``) do not count: they are what the benches write, so a bench
    run after another in the same checkout (the work-bound file, then the 60 s file) ran the
    committed code all the same.
    """
    results = RESULTS_DIR.parent.relative_to(ROOT).as_posix()
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", f":(exclude){results}"],
            cwd=root, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+dirty" if dirty else "")


# --- reading a store -------------------------------------------------------------------------------


@dataclass
class Predicate:
    """One job's outcome on one predicate: test counts if scored, else what all-false would score."""

    status: str
    counts: Counts | None
    all_false: Counts | None
    fallback: bool
    learn_s: float
    cut_by: str = ""
    """What cut a ``timeout``: the wall ``clock`` or a ``work`` bound (`learners.base.budget_cut`;
    rows stored before it was recorded say nothing)."""

    @property
    def status_key(self) -> str:
        """The status as a results file counts it: ``timeout-work`` for a work bound's cut, which
        reproduces on any machine, apart from ``timeout`` (the wall clock's, or not recorded)."""
        return "timeout-work" if self.status == "timeout" and self.cut_by == CUT_BY_WORK else self.status

    def scored(self, fallback_fails: bool = False) -> Counts | None:
        """The counts this predicate contributes; None when it cannot be scored at all."""
        if self.counts is not None and not (fallback_fails and self.fallback):
            return self.counts
        return self.all_false

    @property
    def errored(self) -> bool:
        return self.counts is None


@dataclass
class TaskRuns:
    """One learner at one budget on one task: ``runs[(seed, repeat)][predicate]``."""

    learner: str
    budget_s: float
    game: str
    target: str
    runs: dict[tuple[int, int], dict[str, Predicate]] = field(default_factory=dict)
    expected: set[str] = field(default_factory=set)
    """The task's predicates (sweep manifests and rows): a run lacking one is incomplete."""


def _counts(values: dict, prefix: str = "test_") -> Counts | None:
    keys = [f"{prefix}{c}" for c in ("tp", "fp", "tn", "fn")]
    if any(values.get(k) is None for k in keys):
        return None
    return Counts(*(int(values[k]) for k in keys))


def collect(
    store: ResultStore, learners: list[str] | None = None, sweep: str | None = None
) -> list[TaskRuns]:
    """Every (learner, budget, task) of the store with its latest row per job, parsed (without
    ``sweep``: the newest data per task, :func:`orchestrator.analysis.current.newest_per_task`)."""
    from orchestrator.analysis.current import COLUMNS, newest_per_task

    counts = [f"test_{c}" for c in ("tp", "fp", "tn", "fn")]
    cols = ["job_id", "sweep", "game", "target", "predicate", "learner", "budget_s", "seed", "repeat"]
    extra_cols = [c for c in COLUMNS if c not in cols]
    table = store.latest([*cols, "status", *counts, "learn_s", "extra", *extra_cols])
    if not sweep:
        table, _ = newest_per_task(table)
    expected: dict[tuple[str, str], set[str]] = defaultdict(set)
    for m in store.manifests().select(["game", "target", "predicate"]).to_pylist():
        expected[(m["game"], m["target"])].add(m["predicate"])
    out: dict[tuple, TaskRuns] = {}
    for r in table.to_pylist():
        expected[(r["game"], r["target"])].add(r["predicate"])
        if learners and r["learner"] not in learners or sweep and r["sweep"] != sweep:
            continue
        extra = json.loads(r["extra"] or "{}")
        scored = _counts(r) if r["status"] in FINAL_STATUSES else None
        nothing = _counts(extra.get("all_false") or {})
        key = (r["learner"], r["budget_s"], r["game"], r["target"])
        task = out.setdefault(key, TaskRuns(*key))
        # A learner that flags fallback models (ilasp) and was stopped at its budget holds an
        # unfinished anytime model: not a final answer either, so it counts with the fallbacks.
        fallback = bool(extra.get("fallback")) or (r["status"] == "timeout" and "fallback" in extra)
        task.runs.setdefault((r["seed"], r["repeat"]), {})[r["predicate"]] = Predicate(
            r["status"], scored, nothing, fallback, float(r["learn_s"] or 0.0), extra.get("cut_by", "")
        )
    for t in out.values():
        t.expected = expected[(t.game, t.target)]
    return sorted(out.values(), key=lambda t: (t.learner, t.budget_s, t.game, target_key(t.target)))


def target_key(target: str) -> int:
    """Where a target sorts: goal, legal, next, terminal, then any other."""
    return TARGETS.index(target) if target in TARGETS else len(TARGETS)


def _pooled(preds: dict[str, Predicate], fallback_fails: bool = False) -> Counts | None:
    parts = [p.scored(fallback_fails) for p in preds.values()]
    known = [c for c in parts if c is not None]
    return pool(known) if len(known) == len(parts) else None


def task_row(task: TaskRuns, commit: str = "", hash_: str = "") -> dict | None:
    """The results-file row of one task (None when some predicate cannot be scored at all)."""
    keys = sorted(task.runs)
    if any(not set(task.runs[k]) >= task.expected for k in keys):
        return None  # a predicate has no row yet: the task is not finished
    first = task.runs[keys[0]]
    c, strict = _pooled(first), _pooled(first, fallback_fails=True)
    maybe = [_pooled(task.runs[k]) for k in keys]
    pooled = [p for p in maybe if p is not None]
    if c is None or strict is None or len(pooled) != len(maybe):
        return None
    bas = [p.balanced_accuracy for p in pooled]
    mean = sum(bas) / len(bas)
    std = math.sqrt(sum((b - mean) ** 2 for b in bas) / (len(bas) - 1)) if len(bas) > 1 else 0.0
    statuses: dict[str, int] = defaultdict(int)
    for k in keys:
        for p in task.runs[k].values():
            statuses[p.status_key] += 1
    return {
        "game": task.game, "target": task.target, "learner": task.learner, "budget_s": f"{task.budget_s:g}",
        "runs": len(keys), "predicates": len(first),
        "balanced_accuracy": f"{c.balanced_accuracy:.6f}", "perfect": int(c.perfect),
        "tp": c.tp, "fp": c.fp, "tn": c.tn, "fn": c.fn,
        "ba_fallback_failed": f"{strict.balanced_accuracy:.6f}", "perfect_fallback_failed": int(strict.perfect),
        "errored_predicates": sum(p.errored for p in first.values()),
        "fallback_predicates": sum(p.fallback and not p.errored for p in first.values()),
        "statuses": ";".join(f"{s}={n}" for s, n in sorted(statuses.items())),
        "trivial": int(c.positives == 0 or c.negatives == 0),
        "learn_s": f"{sum(p.learn_s for p in first.values()):.1f}",
        "ba_mean": f"{mean:.6f}", "ba_std": f"{std:.6f}", "perfect_runs": sum(p.perfect for p in pooled),
        "commit": commit, "source_hash": hash_, "stale": "",
    }  # fmt: skip


# --- results files ---------------------------------------------------------------------------------


def file_name(learner: str, budget_s: float) -> str:
    return f"{learner}_{budget_s:g}s.csv"


EXISTING = ("replace", "merge", "refuse")
"""What :func:`export` does with a results file already there: ``replace`` it by this export's
rows; ``merge``: this export's tasks replace their rows and every other row is kept (a partial
rerun, ``--games``); ``refuse`` (the CLI's default) to write when the file holds a task outside
the export's ``tasks``, which a partial rerun would silently drop."""


class ExportRefused(ValueError):
    """Writing would drop rows of tasks the export does not cover (see :data:`EXISTING`)."""


def export(store: ResultStore, out_dir: Path, learners: list[str] | None = None, sweep: str | None = None,
           commit: str | None = None, tasks: set[tuple[str, str]] | None = None,
           predicates: dict[tuple[str, str], list[str]] | None = None, existing: str = "replace",
           ) -> dict[Path, tuple[int, int]]:  # fmt: skip
    """Write one results file per (learner, budget) of the store; returns path -> (rows, unscorable).

    Only ``tasks`` (game, target) when given. A task with a predicate that has no row, or no counts
    at all (a row from before ``extra.all_false``), is left out of the file and counted as unscorable.
    ``predicates`` (the dataset's, per task) fixes what a task is made of: rows of any other
    predicate name (a job planned under another spelling) are not part of it. ``existing`` says
    what happens to a file already there (:data:`EXISTING`); nothing is written when one refuses.
    """
    if existing not in EXISTING:
        raise ValueError(f"existing={existing!r}: one of {', '.join(EXISTING)}")
    commit = git_commit() if commit is None else commit
    groups: dict[tuple[str, float], list[TaskRuns]] = defaultdict(list)
    for t in collect(store, learners, sweep):
        if tasks is None or (t.game, t.target) in tasks:
            if predicates is not None and (t.game, t.target) in predicates:
                t.expected = set(predicates[(t.game, t.target)])
                t.runs = {k: {p: v for p, v in run.items() if p in t.expected} for k, run in t.runs.items()}
            groups[(t.learner, t.budget_s)].append(t)
    if not groups:
        raise StoreError(f"no results for {learners or 'any learner'} in {store.uri}")
    files = {}
    for (learner, budget), group in sorted(groups.items()):
        hash_ = source_hash(learner)
        rows = [r for t in group if (r := task_row(t, commit, hash_)) is not None]
        path = out_dir / file_name(learner, budget)
        files[path] = (with_existing(path, rows, tasks, existing), len(group) - len(rows))
    out_dir.mkdir(parents=True, exist_ok=True)
    for path, (rows, _) in files.items():
        write_rows(path, rows)
    return {path: (len(rows), unscorable) for path, (rows, unscorable) in files.items()}


def with_existing(
    path: Path, rows: list[dict], tasks: set[tuple[str, str]] | None, existing: str
) -> list[dict]:
    """``rows`` as they go into ``path``, given the rows the file already holds (:data:`EXISTING`)."""
    if existing == "replace" or not path.exists():
        return rows
    new = {(r["game"], r["target"]) for r in rows}
    covered = new if tasks is None else tasks | new
    old = read_rows(path)
    if existing == "refuse":
        outside = sorted({(r["game"], r["target"]) for r in old} - covered)
        if outside:
            shown = ", ".join(f"{g}/{t}" for g, t in outside[:3]) + (" ..." if len(outside) > 3 else "")
            raise ExportRefused(
                f"{path} holds {len(outside)} task(s) this export does not cover ({shown}): --merge keeps "
                "them (this export's tasks replace their rows), --replace drops them"
            )
        return rows
    kept = [r for r in old if (r["game"], r["target"]) not in new]
    return sorted([*kept, *rows], key=lambda r: (r["game"], target_key(r["target"])))


def write_rows(path: Path, rows: list[dict]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue())


def read_rows(path: Path) -> list[dict]:
    """The rows of a results file; a clear error names the file and line of a malformed one."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames != COLUMNS:
            raise ValueError(
                f"{path}:1: not a results file (columns {reader.fieldnames}, expected {COLUMNS})"
            )
        rows = list(reader)
    for i, r in enumerate(rows, start=2):
        if None in r.values() or None in r:
            raise ValueError(f"{path}:{i}: wrong number of fields")
    return rows


def _hash_now(current: dict[str, str], learner: str) -> str:
    """``learner``'s source hash, computed once per ``current`` (a file's rows share it: hashing
    parses the learner's package, and ``dict.setdefault`` would compute it for every row)."""
    if learner not in current:
        current[learner] = source_hash(learner)
    return current[learner]


def stale_rows(path: Path) -> list[tuple[int, str, str, str]]:
    """(line, learner, recorded hash, current hash) of rows whose source hash no longer matches and
    that are not marked stale."""
    current: dict[str, str] = {}
    out = []
    for i, r in enumerate(read_rows(path), start=2):
        now = _hash_now(current, r["learner"])
        if r["source_hash"] != now and not r["stale"]:
            out.append((i, r["learner"], r["source_hash"], now))
    return out


def mark_stale(path: Path) -> int:
    """Mark the rows of ``path`` whose learner sources changed as stale (``stale`` = current hash);
    returns how many rows were marked. A row marked at an earlier change is marked again with the
    hash of now, so that the file's own ``stale`` column never names sources HEAD no longer has
    (the docs' note, `stale_note`, derives the hash of now itself)."""
    rows = read_rows(path)
    current: dict[str, str] = {}
    marked = 0
    for r in rows:
        now = _hash_now(current, r["learner"])
        mark = f"sources now {now}"
        if r["source_hash"] != now and r["stale"] != mark:
            r["stale"] = mark
            marked += 1
    write_rows(path, rows)
    return marked


# --- summaries -------------------------------------------------------------------------------------


def perfect_count_ci(per_task_runs: list[tuple[int, int]], z: float = 1.96) -> tuple[float, float, float]:
    """Mean perfect count and a normal-approximation confidence interval over run-to-run noise.

    ``per_task_runs`` holds (perfect runs, runs) per task. Each task is taken as perfect with
    probability p_i = perfect runs / runs, independently; the count's variance is then
    sum p_i (1 - p_i), so the interval is mean ± z·sqrt(that), cut to [0, tasks]. With one run per task every p_i is
    0 or 1 and the interval has width 0: one run cannot measure noise (run ``--repeats 3``).
    """
    ps = [k / n for k, n in per_task_runs if n]
    mean = sum(ps)
    half = z * math.sqrt(sum(p * (1 - p) for p in ps))
    return mean, max(0.0, mean - half), min(float(len(ps)), mean + half)  # a count: within [0, tasks]


def summarise(rows: list[dict]) -> dict:
    """Figures over results-file rows: both scorings, errors, fallbacks, trivial tasks, noise."""
    n = len(rows)
    if not n:
        return {"tasks": 0}
    nontrivial = [r for r in rows if r["trivial"] in ("0", 0)]
    mean, lo, hi = perfect_count_ci([(int(r["perfect_runs"]), int(r["runs"])) for r in rows])
    return {
        "tasks": n,
        "balanced_accuracy": sum(float(r["balanced_accuracy"]) for r in rows) / n,
        "perfect": sum(int(r["perfect"]) for r in rows),
        "ba_fallback_failed": sum(float(r["ba_fallback_failed"]) for r in rows) / n,
        "perfect_fallback_failed": sum(int(r["perfect_fallback_failed"]) for r in rows),
        "errored_predicates": sum(int(r["errored_predicates"]) for r in rows),
        "fallback_predicates": sum(int(r["fallback_predicates"]) for r in rows),
        "predicates": sum(int(r["predicates"]) for r in rows),
        "trivial": n - len(nontrivial),
        "nontrivial": len(nontrivial),
        "perfect_nontrivial": sum(int(r["perfect"]) for r in nontrivial),
        "runs": min(int(r["runs"]) for r in rows),
        "ba_std_mean": sum(float(r["ba_std"]) for r in rows) / n,
        "perfect_mean": mean,
        "perfect_ci": (lo, hi),
    }


def stale_note(rows: list[dict]) -> str:
    """'' when every row's source hash matches the learner's sources now, else a visible STALE note."""
    if not rows:
        return ""
    recorded = {r["source_hash"] for r in rows}
    now = source_hash(rows[0]["learner"])
    if recorded == {now}:
        return ""
    marked = all(r["stale"] for r in rows)
    return f"**STALE{'' if marked else ' (unmarked)'}**: sources now {now}, figures from {', '.join(sorted(recorded))}"


def ba_of(row: dict) -> float:
    """Balanced accuracy recomputed from a row's counts (the test checks the stored value by it)."""
    return balanced_accuracy(int(row["tp"]), int(row["fp"]), int(row["tn"]), int(row["fn"]))


def like_for_like(store: ResultStore, sweep: str | None = None) -> list[dict]:
    """One row per (learner, budget): the figures as scored and with fallback models as failures,
    errored predicates (scored false), fallback predicates, trivial tasks, and the perfect count's
    noise over repeats. Tasks with a predicate that cannot be scored at all are ``unscorable``."""
    groups: dict[tuple[str, float], list[TaskRuns]] = defaultdict(list)
    for t in collect(store, None, sweep):
        groups[(t.learner, t.budget_s)].append(t)
    several = {learner for learner, _ in groups if sum(x == learner for x, _ in groups) > 1}
    out = []
    for (learner, budget), tasks in sorted(groups.items()):
        rows = [r for t in tasks if (r := task_row(t)) is not None]
        s = summarise(rows)
        label = f"{learner} ({budget:g}s)" if learner in several else learner
        entry = {"learner": label, "tasks": s["tasks"], "unscorable": len(tasks) - len(rows)}
        if rows:
            lo, hi = s["perfect_ci"]
            entry.update(
                {
                    "balanced_accuracy": s["balanced_accuracy"],
                    "perfect": s["perfect"],
                    "ba_fallback_failed": s["ba_fallback_failed"],
                    "perfect_fallback_failed": s["perfect_fallback_failed"],
                    "errored_predicates": s["errored_predicates"],
                    "fallback_predicates": s["fallback_predicates"],
                    "trivial_tasks": s["trivial"],
                    "perfect_nontrivial": f"{s['perfect_nontrivial']}/{s['nontrivial']}",
                    "runs": s["runs"],
                    "perfect_ci95": "n/a (1 run)"
                    if s["runs"] < 2
                    else f"{s['perfect_mean']:.1f} [{lo:.1f}, {hi:.1f}]",
                }
            )
        out.append(entry)
    return out
