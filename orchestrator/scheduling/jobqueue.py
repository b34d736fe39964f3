"""The jobs of a sweep still to run: batching per task, claims, retries, and jobs other drivers hold.

Split from the scheduling loop (:mod:`orchestrator.scheduling.scheduler`) so that the rules that
decide *which job goes next* can be read, and tested, without Ray:

* **Batching.** Jobs are queued per actor shape (cpu, gpu) and per task (dataset, game, target):
  an actor keeps getting jobs of the task it already has in its cache. A batch holds about
  ``batch_seconds`` of work by the measured seconds per job of each learner (its budget until
  measured), at most ``max_batch`` jobs and at most a fair share of what is left per actor, so ten
  thousand tiny jobs cost a few hundred Ray calls while long jobs go one at a time.
* **Claims.** A job goes to a worker only once this driver holds its claim
  (:class:`orchestrator.storage.claims.Claims`). Jobs another live driver holds are *deferred*:
  they are claimed again every so often, until their row appears (counted ``elsewhere``) or their
  driver dies and the claim is taken over. A done marker whose rows never appeared (an orphan)
  makes the job run again as the next attempt.
* **Retries.** A job whose worker died is retried up to ``max_retries`` times. The jobs of a batch
  whose worker died are first rerun one per batch (*isolated*, counted as nothing yet), so that a
  death is charged to the job that caused it.
* **Leases.** Each turn of the loop renews this driver's heartbeat (:meth:`heartbeat`), so its
  claims stay its own while it lives.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict, deque
from collections.abc import Callable

from orchestrator.scheduling.sweep import Job
from orchestrator.scheduling.sweeptypes import SweepOptions
from orchestrator.storage.claims import Claims
from orchestrator.storage.store import ResultStore

Key = tuple[str, int]
"""(job id, attempt): what a claim and a done marker are for."""


def stored_attempts(store: ResultStore, job_ids: set[str]) -> dict[str, int]:
    """job id -> the highest attempt the store holds a row for (jobs without a row are left out)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    table = store.read(
        ["job_id", "attempt"], filter=pc.field("job_id").isin(pa.array(sorted(job_ids), pa.string()))
    )
    out: dict[str, int] = {}
    for jid, attempt in zip(table["job_id"].to_pylist(), table["attempt"].to_pylist(), strict=True):
        out[jid] = max(out.get(jid, 0), attempt)
    return out


class JobQueue:
    """The jobs still to run, and this driver's claims on them (see the module docstring)."""

    def __init__(self, jobs: list[Job], shapes: dict[str, str], attempts: dict[str, int], store: ResultStore,
                 claims: Claims, options: SweepOptions, on_new_attempt: Callable[[str], None]) -> None:  # fmt: skip
        """``shapes``: learner -> actor shape; ``attempts``: each job's previous attempt number (the
        queue renumbers a job whose attempt was orphaned, then calls ``on_new_attempt(job_id)``)."""
        self.store, self.claims, self.options = store, claims, options
        self.attempts = attempts
        self.on_new_attempt = on_new_attempt
        self.queues: dict[str, dict[tuple, deque[Job]]] = defaultdict(lambda: defaultdict(deque))
        # Each driver takes a task's jobs in its own random order, so drivers sharing a store rarely
        # reach for the same claim at once.
        for job in random.sample(list(jobs), len(jobs)):
            self.queues[shapes[job.learner]][job.task_key].append(job)
        self.shape_of = {j.job_id: shapes[j.learner] for j in jobs}
        self.left = {s: sum(len(q) for q in groups.values()) for s, groups in self.queues.items()}
        self.deferred: dict[str, Job] = {}  # claimed by another live driver: wait for its row
        self.deferred_at = 0.0
        self.elsewhere = 0
        self.job_seconds: dict[str, float] = {}  # learner -> moving average of seconds per job
        self.retries: dict[str, int] = defaultdict(int)
        self.isolate: set[str] = set()  # jobs whose batch lost its worker: rerun one at a time

    def pending(self) -> bool:
        """Jobs still queued, or waiting for another driver's row."""
        return any(self.left.values()) or bool(self.deferred)

    def attempt(self, job: Job) -> int:
        """The attempt number the job's next row gets."""
        return self.attempts.get(job.job_id, 0) + 1

    # batching

    def observe(self, learner: str, seconds: float) -> None:
        """A job of ``learner`` took ``seconds``: update the moving average batches are sized by."""
        old = self.job_seconds.get(learner)
        self.job_seconds[learner] = seconds if old is None else 0.8 * old + 0.2 * seconds

    def _estimate(self, job: Job) -> float:
        return self.job_seconds.get(job.learner, job.budget_s)

    def take_batches(self, idle: list[tuple[str, tuple | None]], served: set, workers: int) -> list[tuple]:
        """One batch per idle actor, given as ``(shape, last task key)``: a list of ``(task key,
        batch)`` in the same order (an empty batch when its shape has no jobs left). ``served``: the
        task keys busy actors work on (an idle actor prefers another task); ``workers``: the actors
        in the pool (each gets a fair share of what is left). The jobs count as taken only after
        every batch is cut, so the shares of one round are all cut from the same total."""
        batches = [self._take(shape, last_key, served, workers) for shape, last_key in idle]
        for (shape, _), (_, batch) in zip(idle, batches, strict=True):
            self.left[shape] -= len(batch)
        return batches

    def _take(self, shape: str, last_key: tuple | None, served: set, workers: int) -> tuple:
        groups = self.queues.get(shape, {})
        key = last_key if last_key in groups and groups[last_key] else None
        if key is None:
            nonempty = [k for k, q in groups.items() if q]
            if not nonempty:
                return last_key, []
            fresh = [k for k in nonempty if k not in served] or nonempty
            key = max(fresh, key=lambda k: len(groups[k]))
        queue, cost = groups[key], 0.0
        batch: list[Job] = []
        share = max(1, -(-self.left[shape] // max(1, workers)))
        while queue and len(batch) < min(self.options.max_batch, share):
            if queue[0].job_id in self.isolate:
                if not batch:
                    batch.append(queue.popleft())
                break  # a suspect job runs alone, so a worker death is pinned on the right job
            est = self._estimate(queue[0])
            if batch and cost + est > self.options.batch_seconds:
                break
            batch.append(queue.popleft())
            cost += est
        if not queue:
            del groups[key]
        return key, batch

    def requeue(self, job: Job, shape: str) -> None:
        """Put ``job`` back at the front of its task's queue (it goes out next)."""
        self.queues[shape][job.task_key].appendleft(job)
        self.left[shape] += 1

    # retries

    def lost_batch(self, batch: list[Job], shape: str) -> list[Job]:
        """The worker of ``batch`` died. A batch of several: which job killed it is unknown, so each
        is rerun alone and nothing is counted yet. A single job: retried (:meth:`retry`). Returns the
        jobs that ran out of retries, for the caller to record as failed."""
        if len(batch) > 1:
            for job in batch:
                self.isolate.add(job.job_id)
                self.requeue(job, shape)
            return []
        return [job for job in batch if not self.retry(job, shape)]

    def retry(self, job: Job, shape: str) -> bool:
        """Count one more worker failure of ``job`` and requeue it; False when it ran out of retries."""
        self.retries[job.job_id] += 1
        if self.retries[job.job_id] <= self.options.max_retries:
            self.requeue(job, shape)
            return True
        return False

    # claims

    def heartbeat(self) -> None:
        """Renew this driver's lease (cheap: the claims module renews at most every ``lease_s / 4``)."""
        self.claims.heartbeat()

    def _key(self, job: Job) -> Key:
        return (job.job_id, self.attempt(job))

    def claim(self, jobs: list[Job]) -> set[str]:
        """Claim ``jobs``; the ids this driver may run. Busy ones wait in ``deferred``."""
        outcome = self.claims.claim([self._key(j) for j in jobs])
        if outcome.taken_over:  # a dead driver's claim: it may have stored the row before dying
            stored = stored_attempts(self.store, {k[0] for k in outcome.taken_over})
            done_now = {k for k in outcome.taken_over if stored.get(k[0], 0) >= k[1]}
            self.claims.mark_stored(done_now)
            self.claims.release(done_now)
            outcome.won.difference_update(done_now)
            outcome.done.update(done_now)
        settled, busy, orphans = self._settle(outcome.done)
        for job in jobs:
            key = self._key(job)
            if key in outcome.busy or key in busy:
                self.deferred[job.job_id] = job
            elif key in orphans:  # marked, never stored (its driver died mid-commit): the next attempt
                self.attempts[job.job_id] = key[1]
                self.on_new_attempt(job.job_id)
                self.deferred[job.job_id] = job
            elif key in settled:
                self.deferred.pop(job.job_id, None)
                self.elsewhere += 1
        return {k[0] for k in outcome.won}

    def _settle(self, keys: set[Key]) -> tuple[set[Key], ...]:
        """Attempts marked as stored: (stored, being stored by a live driver, orphaned: never stored)."""
        if not keys:
            return set(), set(), set()
        settled = self.claims.settle(keys)
        orphans = set(settled.orphan)
        found: set[Key] = set()
        if orphans:  # a compaction may have merged the file the marker names: look in the store
            stored = stored_attempts(self.store, {k[0] for k in orphans})
            found = {k for k in orphans if stored.get(k[0], 0) >= k[1]}
        return settled.stored | found, settled.busy, orphans - found

    def defer(self, job: Job) -> None:
        """Wait for another driver's row of ``job`` (its result here was dropped at commit)."""
        self.deferred[job.job_id] = job

    def recheck_deferred(self) -> None:
        """Jobs another driver holds: claim those whose driver died, drop those it stored."""
        now = time.monotonic()
        if not self.deferred or now - self.deferred_at < min(1.0, self.options.lease_s / 4):
            return
        self.deferred_at = now
        jobs = list(self.deferred.values())
        won = self.claim(jobs)
        for job in jobs:
            if job.job_id in won:
                del self.deferred[job.job_id]
                self.requeue(job, self.shape_of[job.job_id])
