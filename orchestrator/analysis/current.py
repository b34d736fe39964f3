"""Which stored results are current: the newest data per task, and the sweeps they come from.

Why: a job id hashes the dataset's content, so a rerun after a data fix (a malformed ``.dat``
corrected as the error said) runs every job of the changed game again under new ids, and the store
then holds two results per task, one on the old data and one on the new. Readers used to refuse
such a task ("mixed datasets"), which left the store unreadable after the fix. Here a result is
*superseded* when the same learner (name, parameters, budget) has a result on the same task
(benchmark, game, target) from newer data; readers keep the newest per task and say which sweeps
they read, and ``orch gc`` deletes the superseded rows on request. The benchmark
(:mod:`orchestrator.analysis.benchmarks`) is part of the task, so a GGP corpus's ``tictactoe``
never supersedes the IGGP ``tictactoe``. The dataset's path is not: a fixed dataset rerun from
another folder (or the same one spelled relative) still supersedes the old results.

"Newer" is decided by time: the dataset fingerprint whose latest row of the task finished last.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from orchestrator.analysis.benchmarks import benchmarks_of

TASK_KEY = ("learner", "params", "budget_s", "game", "target")
"""What identifies one learner's result on one task of one dataset (the fingerprint aside); the
benchmark and the dataset (:func:`task_keys`) complete it."""

COLUMNS = (*TASK_KEY, "dataset", "dataset_fingerprint", "sweep", "finished")
"""The columns :func:`newest_per_task` needs."""


@dataclass
class Currency:
    """What :func:`newest_per_task` kept and dropped: sweeps read, superseded rows, tasks and sweeps."""

    sweeps_read: dict[str, int] = field(default_factory=dict)
    """Sweep name -> rows kept from it."""
    superseded_rows: int = 0
    superseded_tasks: set[tuple] = field(default_factory=set)
    superseded_sweeps: dict[str, int] = field(default_factory=dict)
    """Sweep name -> rows of it dropped as superseded."""
    failed: dict[tuple[str, str], int] = field(default_factory=dict)
    """(status, learner) -> jobs read that ended error, oom or lost (a report's exit 1)."""

    def merge(self, other: Currency) -> None:
        """Add ``other`` (what another benchmark's rows gave) to this one: one line for a whole report."""
        for mine, theirs in (
            (self.sweeps_read, other.sweeps_read),
            (self.superseded_sweeps, other.superseded_sweeps),
        ):
            for sweep, n in theirs.items():
                mine[sweep] = mine.get(sweep, 0) + n
        for key, n in other.failed.items():
            self.failed[key] = self.failed.get(key, 0) + n
        self.superseded_rows += other.superseded_rows
        self.superseded_tasks |= other.superseded_tasks

    def failed_line(self) -> str | None:
        """``failed: ...`` naming the statuses and learners of failed jobs read; None without any."""
        if not self.failed:
            return None
        parts = ", ".join(f"{n} {status} ({learner})" for (status, learner), n in sorted(self.failed.items()))
        return (
            f"failed: {sum(self.failed.values())} job(s) read ended {parts}; they are scored as "
            "predicting false (orch status lists them)"
        )

    def line(self) -> str:
        """One line for a report: the sweeps read and what was left out as superseded."""
        read = ", ".join(f"{s} ({n} row(s))" for s, n in sorted(self.sweeps_read.items())) or "none"
        text = f"sweeps read: {read}"
        if self.superseded_rows:
            old = ", ".join(sorted(self.superseded_sweeps))
            text += (
                f"; {self.superseded_rows} superseded row(s) of {len(self.superseded_tasks)} task(s) "
                f"left out (older data, from {old}; `orch gc` deletes them)"
            )
        return text


def newest_per_task(table: pa.Table) -> tuple[pa.Table, Currency]:
    """``table`` (one row per job, with :data:`COLUMNS`) without the rows on superseded data.

    Per task (:func:`task_keys`), the fingerprint whose rows finished last wins; rows with any
    other fingerprint are superseded. Rows without a fingerprint count as their own dataset.
    """
    info = Currency()
    if table.num_rows == 0:
        return table, info
    keys = table.select([*TASK_KEY, "dataset_fingerprint", "finished"]).to_pylist()
    tasks = task_keys(table)
    newest: dict[tuple, tuple] = {}  # task key -> (finished, fingerprint)
    for r, task in zip(keys, tasks, strict=True):
        stamp = (r["finished"] is not None, r["finished"] or 0, r["dataset_fingerprint"] or "")
        if task not in newest or stamp > newest[task]:
            newest[task] = stamp
    keep = [newest[t][2] == (r["dataset_fingerprint"] or "") for r, t in zip(keys, tasks, strict=True)]
    sweeps = table["sweep"].to_pylist()
    read: dict[str, int] = defaultdict(int)
    dropped: dict[str, int] = defaultdict(int)
    for r, task, kept, sweep in zip(keys, tasks, keep, sweeps, strict=True):
        if kept:
            read[sweep or "(no sweep)"] += 1
        else:
            dropped[sweep or "(no sweep)"] += 1
            info.superseded_tasks.add((*task[:2], r["learner"], r["game"], r["target"]))
    info.sweeps_read, info.superseded_sweeps = dict(read), dict(dropped)
    info.superseded_rows = sum(dropped.values())
    return table.filter(pa.array(keep, pa.bool_())), info


def task_keys(table: pa.Table) -> list[tuple]:
    """Each row's task: (benchmark, *:data:`TASK_KEY`); a table without a ``dataset`` column (a
    caller that did not read it) counts as the IGGP benchmark."""
    datasets = table["dataset"].to_pylist() if "dataset" in table.column_names else [None] * table.num_rows
    rest = table.select(list(TASK_KEY)).to_pylist()
    return [
        (benchmark, *(r[k] for k in TASK_KEY))
        for benchmark, r in zip(benchmarks_of(datasets), rest, strict=True)
    ]


def superseded_rows(rows: pa.Table) -> pa.Array:
    """A boolean mask over every stored row (all attempts): True for a row ``orch gc`` may delete.

    A row is superseded when its job has a higher attempt (the latest attempt is what every reader
    uses) or when its task has a result on newer data (:func:`newest_per_task`).
    """
    if rows.num_rows == 0:
        return pa.array([], pa.bool_())
    ids = rows["job_id"].to_pylist()
    attempts = rows["attempt"].to_pylist()
    top: dict[str, int] = {}
    for job, attempt in zip(ids, attempts, strict=True):
        top[job] = max(top.get(job, attempt), attempt)
    older_attempt = [a < top[j] for j, a in zip(ids, attempts, strict=True)]
    latest = rows.filter(pc.invert(pa.array(older_attempt, pa.bool_())))
    current, _ = newest_per_task(latest)
    current_ids = set(current["job_id"].to_pylist())
    return pa.array(
        [old or j not in current_ids for j, old in zip(ids, older_attempt, strict=True)], pa.bool_()
    )
