"""The rows of a sweep: completed, counted, buffered and committed to the store, fenced.

Split from the scheduling loop (:mod:`orchestrator.scheduling.scheduler`) so that the one place
that writes rows can be read, and tested on a real local store, without Ray.

* Only the driver writes rows, in batches (every ``flush_rows`` rows or ``flush_seconds``), each
  write atomic: a driver killed mid-sweep loses at most its unflushed rows, and the rerun finds the
  rest stored.
* Each job is recorded at most once per run, whatever happens upstream (:meth:`Recorder.record`).
* Every flush is a **fenced commit** (docs/store.md, "fencing";
  :meth:`orchestrator.storage.claims.Claims.commit`): a row is stored only while this driver's
  claim is still the attempt's newest and no other driver marked the attempt stored, checked at
  commit time, so rows kept across a pause past the lease are checked too. Rows another driver
  took over are *dropped* (their counts are undone and the caller waits for the other driver's
  row); rows the claims module cannot decide yet stay buffered for the next flush.
* The counts the sweep reports (statuses, failures, learners a job did not apply to, seconds of
  work) and the progress display's ``finished`` event come from here, as rows are recorded.
"""

from __future__ import annotations

import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable

from orchestrator import __version__
from orchestrator.scheduling.sweep import Job
from orchestrator.scheduling.sweeptypes import Failure, Progress, SweepOptions, failure_reason
from orchestrator.storage.claims import Claims
from orchestrator.storage.live import write_live_jobs
from orchestrator.storage.schema import FINAL_STATUSES, INFRA_STATUSES, NOT_APPLICABLE, complete_row
from orchestrator.storage.store import ResultStore, StoreError, StoreFenced


def failure_kind(status: str, extra: dict) -> str:
    """infra (oom, lost, killed: not the learner's doing), input (bad data) or learner."""
    if status in INFRA_STATUSES:
        return "infra"
    return "input" if extra.get("failure") == "input" else "learner"


class Recorder:
    """Buffers the sweep's rows and commits them, fenced (see the module docstring)."""

    def __init__(self, store: ResultStore, claims: Claims, options: SweepOptions, progress: Progress) -> None:
        self.store, self.claims, self.options, self.progress = store, claims, options, progress
        self.buffer: list[dict] = []
        self.buffered_jobs: dict[str, Job] = {}
        self.flushed_at = time.monotonic()
        self.written: set[str] = set()
        self.statuses: dict[str, int] = defaultdict(int)
        self.failures: list[Failure] = []
        self.not_applicable: dict[str, dict] = {}
        self.total_job_seconds = 0.0

    def forget(self, job_id: str) -> None:
        """The job runs again as a new attempt (its previous one was orphaned): it may be recorded again."""
        self.written.discard(job_id)

    def record(self, job: Job, row: dict, attempt: int, worker_failures: int = 0) -> float | None:
        """Complete ``row`` (the job's fields, ``attempt``, the sweep, orch's version) and buffer it.

        ``worker_failures`` (the workers the job lost before) goes into the row's ``extra``. Returns
        the job's seconds of work, or None when the job was already recorded in this run (the row
        is ignored then).
        """
        if job.job_id in self.written:
            return None  # exactly once per run, whatever happens upstream
        self.written.add(job.job_id)
        extra = dict(row.pop("extra", None) or {})
        if worker_failures:
            extra["worker_failures"] = worker_failures
        full = complete_row(
            {**job.as_row(), **row},
            sweep=self.options.sweep,
            attempt=attempt,
            orch_version=__version__,
            extra=json.dumps(extra, sort_keys=True),
        )
        self.buffer.append(full)
        self.buffered_jobs[job.job_id] = job
        self._count(job, full, extra)
        seconds = (row.get("learn_s") or 0.0) + (row.get("eval_s") or 0.0)
        self.total_job_seconds += seconds
        self.progress.finished(job, full)
        return seconds

    def _count(self, job: Job, full: dict, extra: dict) -> None:
        self.statuses[full["status"]] += 1
        if full["status"] == NOT_APPLICABLE:
            seen = self.not_applicable.setdefault(job.learner, {"jobs": 0, "reason": full.get("error")})
            seen["jobs"] += 1
        elif full["status"] not in FINAL_STATUSES:
            kind = failure_kind(full["status"], extra)
            self.failures.append(
                Failure(job.label(), full["status"], kind, failure_reason(full.get("error")))
            )

    def flush(self, running: Callable[[], list[str]], force: bool = False) -> list[Job]:
        """Commit the buffer when it is due (``force``, ``flush_seconds`` passed, or ``flush_rows``
        rows), and then write the live-jobs file from ``running()`` (the ids learning now). Returns
        the jobs whose rows were dropped at commit: another driver holds them now."""
        due = time.monotonic() - self.flushed_at >= self.options.flush_seconds
        dropped: list[Job] = []
        if self.buffer and (force or due or len(self.buffer) >= self.options.flush_rows):
            dropped = self._commit()
        if force or due:
            self.flushed_at = time.monotonic()
            write_live_jobs(self.store, self.options.sweep, running())
        return dropped

    def _commit(self) -> list[Job]:
        """Store the buffered rows this driver may still store: fenced at commit time
        (:meth:`Claims.commit`), so rows kept across a pause past the lease are checked too."""
        name = self.store.new_part_name()
        verdict = self.claims.commit([(r["job_id"], r["attempt"]) for r in self.buffer], name)
        won, lost = set(verdict.won), set(verdict.lost)
        rows = [r for r in self.buffer if (r["job_id"], r["attempt"]) in won]
        try:
            self.store.write(rows, name)
        except StoreFenced:  # another driver found our markers orphaned and fenced the file out
            lost |= won
            won = set()
        except StoreError:
            self.claims.unmark(won)  # nothing was stored: the attempts are free again
            raise
        self.claims.release(won | lost)
        dropped = self._drop([r for r in self.buffer if (r["job_id"], r["attempt"]) in lost])
        self.buffer = [r for r in self.buffer if (r["job_id"], r["attempt"]) in verdict.later]
        return dropped

    def _drop(self, rows: list[dict]) -> list[Job]:
        """Forget results this driver may not store (another driver took the claim over, or stored
        the attempt, while this one was paused); the jobs wait for the other driver's row."""
        if not rows:
            return []
        jobs = []
        for row in rows:
            job = self.buffered_jobs[row["job_id"]]
            self.statuses[row["status"]] -= 1
            if not self.statuses[row["status"]]:
                del self.statuses[row["status"]]
            self.failures = [f for f in self.failures if f.label != job.label()]
            jobs.append(job)
        print(
            f"dropped {len(rows)} result(s) (e.g. {self.buffered_jobs[rows[0]['job_id']].label()}): "
            "another driver took their claims over or stored them while this one was paused",
            file=sys.stderr,
            flush=True,
        )
        return jobs
