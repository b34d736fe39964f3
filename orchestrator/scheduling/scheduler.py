"""The driver of a sweep: fan jobs out to Ray actors, enforce retries, write rows, resume.

How a sweep runs:

1. :func:`plan` drops every job the store already holds (resume) and numbers the attempts.
2. One learner actor per CPU (or GPU, for learners that ask for one when the cluster has it) is
   started with the SPREAD strategy, so a multi-node cluster gets work on every node.
3. Jobs are grouped by task (dataset, game, target) and an actor keeps getting jobs of the task it
   already has in its cache. Jobs go out in batches sized from the measured job time (about
   ``batch_seconds`` of work per Ray call), so ten thousand tiny jobs cost a few hundred Ray calls
   while long jobs go one at a time.
4. The actor enforces budgets itself (see :mod:`orchestrator.scheduling.worker`); the driver only watches for
   lost actors. The jobs of a batch whose actor died (a SIGKILLed worker, a lost node) are rerun
   one per batch, so that a death is charged to the job that caused it; a job is retried up to
   ``max_retries`` times, then recorded as ``killed``. Nothing else is affected.
5. Only this process writes rows, in batches (every ``flush_rows`` rows or ``flush_seconds``), each
   write atomic. A driver killed mid-sweep loses at most its unflushed rows; rerunning the same
   command finds the rest stored and runs only what is missing, so each job is stored once.
6. Any number of drivers may run on one store: a job goes to a worker only once this driver holds
   its claim (:mod:`orchestrator.storage.claims`). Jobs another live driver holds are waited for (their row
   appears, or their driver dies and the claim is taken over), so every driver ends with the whole
   sweep stored, each job once.

Actors beyond the cluster's CPUs (``max_actors``) stay pending and get no jobs until they start:
on an autoscaling cluster they are the demand that adds nodes. Where Ray comes from (a private
loopback-only local Ray, or ``--address``) is :mod:`orchestrator.scheduling.raysession`; what ``orch status``
reads about running jobs is :mod:`orchestrator.storage.live`.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import threading
import time
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from orchestrator import __version__
from orchestrator.scheduling.raysession import SchedulerError, ray_session
from orchestrator.scheduling.sweep import Job
from orchestrator.scheduling.worker import JobLimits, JobRunner
from orchestrator.storage.claims import DEFAULT_LEASE_S, Claims
from orchestrator.storage.live import clear_live_jobs, write_live_jobs
from orchestrator.storage.schema import (
    FINAL_STATUSES,
    INFRA_STATUSES,
    NOT_APPLICABLE,
    STATUSES,
    complete_row,
    result_row,
)
from orchestrator.storage.store import ResultStore

DEFAULT_MEMORY_ESTIMATE = 512 << 20


@dataclass
class SweepOptions:
    """How to run a sweep (none of this changes a job's id)."""

    sweep: str
    max_retries: int = 2
    memory_per_job: int | None = None
    memory_estimate: int | None = DEFAULT_MEMORY_ESTIMATE
    """Memory each worker reserves from Ray when no stored peak of its learners is known (None: none)."""
    eval_timeout_s: float = 600.0
    retry_failed: bool = False
    retry_timeouts: bool = False
    address: str | None = None
    num_cpus: int | None = None
    flush_rows: int = 2000
    flush_seconds: float = 2.0
    batch_seconds: float = 0.5
    max_batch: int = 500
    max_actors: int | None = None
    gpu: bool | None = None
    stall_s: float = 600.0
    lease_s: float = DEFAULT_LEASE_S
    spec: dict = field(default_factory=dict)
    rerun: bool = False
    """Run every job again, stored or not (a new attempt each)."""
    runner: type | None = None
    """The actor body (``runner(limits)`` with ``info()``, ``current_job()`` and ``run(jobs) -> rows``); default
    :class:`orchestrator.scheduling.worker.JobRunner`. GraphLog setup jobs use their own (graphlog_runner)."""


@dataclass(frozen=True)
class Failure:
    """One failed job, for the terminal: ``kind`` is infra (oom, lost), input (bad data) or learner."""

    label: str
    status: str
    kind: str
    reason: str


def failure_reason(error: str | None) -> str:
    """One line saying why a job failed: a traceback's last line, else the message's first."""
    lines = [line.strip() for line in (error or "").splitlines() if line.strip()]
    if not lines:
        return "no reason recorded"
    if lines[0].startswith("Traceback") or (len(lines) > 1 and lines[1].startswith("Traceback")):
        return lines[0] if not lines[0].startswith("Traceback") else lines[-1]
    return lines[0]


@dataclass
class SweepResult:
    planned: int
    skipped: int
    statuses: dict[str, int]
    wall_s: float
    job_seconds: float
    interrupted: bool = False
    lost_actors: int = 0
    retried: int = 0
    not_applicable: dict[str, dict] = field(default_factory=dict)
    """Learner -> {"jobs": how many it did not apply to, "reason": the first job's reason}."""
    elsewhere: int = 0
    """Planned jobs that another driver on the same store ran meanwhile."""
    failures: list[Failure] = field(default_factory=list)
    """Every job of this run that did not end ok or timeout, in the order they finished."""

    @property
    def infra_failures(self) -> int:
        return sum(1 for f in self.failures if f.kind == "infra")

    @property
    def input_failures(self) -> int:
        return sum(1 for f in self.failures if f.kind == "input")

    @property
    def finished(self) -> int:
        return sum(self.statuses.values())


class Progress(Protocol):
    """What the scheduler tells a progress display (see :mod:`orchestrator.scheduling.progress`)."""

    def begin(self, total: int, skipped: int) -> None: ...

    def running(self, jobs: Sequence[Job]) -> None:
        """``jobs`` went to a worker; they wait there until :meth:`started` says one runs."""

    def finished(self, job: Job, row: dict) -> None: ...

    def tick(self) -> None: ...

    def end(self, result: SweepResult) -> None: ...


def notify(progress: Any, event: str, *args: Any) -> None:
    """Call ``progress.<event>(*args)`` when the display has it. Optional events, so that older
    displays keep working: ``starting(text)`` (what the sweep waits for, e.g. Ray coming up),
    ``started(job, since)`` (the job now learns on its slot, since that wall-clock time) and
    ``ended(job)`` (it left its slot; its row comes with the rest of its batch)."""
    method = getattr(progress, event, None)
    if method is not None:
        method(*args)


class SilentProgress:
    """Progress that shows nothing (library use, ``--json``)."""

    def begin(self, total: int, skipped: int) -> None:
        pass

    def running(self, jobs: Sequence[Job]) -> None:
        pass

    def finished(self, job: Job, row: dict) -> None:
        pass

    def tick(self) -> None:
        pass

    def end(self, result: SweepResult) -> None:
        pass


# --- resume ----------------------------------------------------------------------------------------


def plan(jobs: Sequence[Job], store: ResultStore, options: SweepOptions) -> tuple[list[Job], dict[str, int]]:
    """The jobs still to run, and each job's previous attempt number.

    A stored job is skipped, unless its latest row is an infrastructure failure (oom, lost,
    killed: not the learner's doing), which is always run again. ``retry_failed`` also re-runs the
    learner's own errors; ``retry_timeouts`` also re-runs timeouts. A re-run writes a new row with
    attempt + 1.
    """
    latest = store.latest(["job_id", "status", "attempt"])
    status = dict(zip(latest["job_id"].to_pylist(), latest["status"].to_pylist(), strict=True))
    attempts = dict(zip(latest["job_id"].to_pylist(), latest["attempt"].to_pylist(), strict=True))
    rerun = set(INFRA_STATUSES)
    if options.retry_failed:
        rerun.add("error")
    if options.retry_timeouts:
        rerun.add("timeout")
    if options.rerun:
        rerun |= STATUSES
    todo, seen = [], set()
    for job in jobs:
        if job.job_id in seen:
            continue
        seen.add(job.job_id)
        if job.job_id not in status or status[job.job_id] in rerun:
            todo.append(job)
    return todo, attempts


# --- the driver loop ---------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0][:300] if text else ''}"


def _infra_status(ray: Any, exc: BaseException) -> str:
    """``oom`` when Ray killed the worker for memory (its memory monitor), else ``lost``."""
    oom = getattr(ray.exceptions, "OutOfMemoryError", ())
    text = str(exc).lower()
    if (oom and isinstance(exc, oom)) or any(w in text for w in ("out of memory", "outofmemory", "memory pressure",
                                                                 "low on memory", "memory monitor")):  # fmt: skip
        return "oom"
    return "lost"


def memory_reservation(ray: Any, store: ResultStore, learners: set[str], options: SweepOptions) -> int | None:
    """Bytes each worker reserves from Ray's ``memory`` resource, so a node is not overcommitted.

    Per learner: 1.25 x the highest peak resident memory stored for it, else ``memory_estimate``;
    the worker reserves the largest over the sweep's learners, at most ``memory_per_job`` (a job
    cannot use more) and at most the largest node's memory (so some worker can always start).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    peaks: dict[str, int] = {}
    try:
        table = store.read(
            ["learner", "peak_rss"], filter=pc.field("learner").isin(pa.array(sorted(learners)))
        )
        for learner, peak in zip(table["learner"].to_pylist(), table["peak_rss"].to_pylist(), strict=True):
            if peak:
                peaks[learner] = max(peaks.get(learner, 0), int(peak))
    except Exception:  # an estimate only: a store that cannot say gives the default
        peaks = {}
    per = [int(peaks[lr] * 1.25) if lr in peaks else options.memory_estimate for lr in learners]
    known = [m for m in per if m]
    if not known:
        return None
    reserve = max(known)
    if options.memory_per_job:
        reserve = min(reserve, options.memory_per_job)
    nodes = [n.get("Resources", {}).get("memory", 0) for n in ray.nodes() if n.get("Alive")]
    if nodes and max(nodes) > 0:
        reserve = min(reserve, int(max(nodes)))
    return max(reserve, 1)


def _shape(learner: str, has_gpu: bool) -> str:
    from learners.base import spec_for

    spec, _ = spec_for(learner)
    return "gpu" if has_gpu and spec.resources.get("num_gpus", 0) > 0 else "cpu"


@dataclass
class _Slot:
    """One learner actor and the batch it is working on."""

    actor: Any
    shape: str
    ref: Any = None
    batch: list[Job] = field(default_factory=list)
    sent: float = 0.0
    deadline: float = 0.0
    last_key: tuple | None = None
    ready_ref: Any = None
    ready: bool = False
    current: Job | None = None  # the job of the batch learning now (polled from the actor)
    poll_ref: Any = None
    polled: float = 0.0


class _Scheduler:
    def __init__(self, ray: Any, jobs: list[Job], attempts: dict[str, int], store: ResultStore,
                 options: SweepOptions, progress: Progress) -> None:  # fmt: skip
        self.ray, self.store, self.options, self.progress = ray, store, options, progress
        self.attempts = attempts
        self.has_gpu = options.gpu if options.gpu is not None else ray.cluster_resources().get("GPU", 0) > 0
        self.queues: dict[str, dict[tuple, deque[Job]]] = defaultdict(lambda: defaultdict(deque))
        shapes = {learner: _shape(learner, self.has_gpu) for learner in {j.learner for j in jobs}}
        # Each driver takes a task's jobs in its own random order, so drivers sharing a store rarely
        # reach for the same claim at once.
        for job in random.sample(list(jobs), len(jobs)):
            self.queues[shapes[job.learner]][job.task_key].append(job)
        self.shape_of = {j.job_id: shapes[j.learner] for j in jobs}
        self.claims = Claims(store, options.lease_s)
        self.deferred: dict[str, Job] = {}  # claimed by another live driver: wait for its row
        self.deferred_at = 0.0
        self.elsewhere = 0
        self.failures: list[Failure] = []
        self.left = {s: sum(len(q) for q in groups.values()) for s, groups in self.queues.items()}
        self.slots: list[_Slot] = []
        self.job_seconds: dict[str, float] = {}  # learner -> moving average of seconds per job
        self.retries: dict[str, int] = defaultdict(int)
        self.isolate: set[str] = set()  # jobs whose batch lost its worker: rerun one at a time
        self.buffer: list[dict] = []
        self.flushed_at = time.monotonic()
        self.written: set[str] = set()
        self.statuses: dict[str, int] = defaultdict(int)
        self.total_job_seconds = 0.0
        self.lost_actors = 0
        self.not_applicable: dict[str, dict] = {}
        self.grown_at = 0.0
        limits = JobLimits(options.memory_per_job, options.eval_timeout_s)
        self.actor_class = ray.remote(options.runner or JobRunner)
        self.limits = limits
        self.reserve = memory_reservation(ray, store, {j.learner for j in jobs}, options)

    # actors

    def _new_actor(self, shape: str) -> None:
        # Two threads: ``run`` works while ``current_job`` answers the driver's "which job now?".
        opts: dict[str, Any] = {"num_cpus": 1, "scheduling_strategy": "SPREAD", "max_restarts": 0,
                                "max_concurrency": 2}  # fmt: skip
        if self.reserve:  # Ray places no more workers on a node than its memory holds
            opts["memory"] = self.reserve
        if shape == "gpu":
            opts["num_gpus"] = 1  # the cap is on resident memory, so it holds for CUDA jobs too
        actor = self.actor_class.options(**opts).remote(self.limits)
        self.slots.append(_Slot(actor, shape, ready_ref=actor.info.remote()))

    def _cap(self) -> int:
        """How many actors at most: the cluster's CPUs now, or ``max_actors`` (autoscaling demand)."""
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        return max(cpus, self.options.max_actors or 0, 1)

    def start_actors(self) -> None:
        """One actor per CPU (GPU learners: per GPU). Actors beyond what the cluster has now stay
        pending, which is what makes an autoscaler add nodes; jobs go only to actors that started."""
        total = self.ray.cluster_resources()
        gpus = int(total.get("GPU", 0)) or (1 if self.has_gpu else 0)
        want_gpu = min(gpus, self.left.get("gpu", 0)) if self.has_gpu else 0
        want_cpu = min(max(self._cap() - want_gpu, 1), self.left.get("cpu", 0))
        for shape, n in (("gpu", want_gpu), ("cpu", want_cpu)):
            for _ in range(n):
                self._new_actor(shape)
        self.grown_at = time.monotonic()

    def grow(self) -> None:
        """Add an actor when the cluster gained room (an autoscaled node, a replaced worker)."""
        now = time.monotonic()
        if now - self.grown_at < 5.0:
            return
        self.grown_at = now
        if len(self.slots) >= self._cap() or any(not s.ready for s in self.slots):
            return  # at the cap, or an actor is still starting (it may be taking that room)
        free = self.ray.available_resources()
        for shape in ("gpu", "cpu"):
            mine = sum(1 for s in self.slots if s.shape == shape)
            if self.left.get(shape, 0) <= mine:
                continue
            if free.get("CPU", 0) >= 1 and (shape == "cpu" or free.get("GPU", 0) >= 1):
                self._new_actor(shape)
                return

    def _check_started(self) -> None:
        pending = [s.ready_ref for s in self.slots if not s.ready]
        if not pending:
            return
        done, _ = self.ray.wait(pending, num_returns=len(pending), timeout=0)
        for slot in [s for s in self.slots if not s.ready and s.ready_ref in set(done)]:
            try:
                self.ray.get(slot.ready_ref)
                slot.ready = True
            except self.ray.exceptions.RayError as e:
                self._lost(slot, f"the worker failed to start: {str(e).splitlines()[0][:300]}")

    # batches

    def _estimate(self, job: Job) -> float:
        return self.job_seconds.get(job.learner, job.budget_s)

    def _take(self, slot: _Slot) -> list[Job]:
        groups = self.queues.get(slot.shape, {})
        key = slot.last_key if slot.last_key in groups and groups[slot.last_key] else None
        if key is None:
            served = {s.last_key for s in self.slots if s is not slot and s.ref is not None}
            nonempty = [k for k, q in groups.items() if q]
            if not nonempty:
                return []
            fresh = [k for k in nonempty if k not in served] or nonempty
            key = max(fresh, key=lambda k: len(groups[k]))
        queue, cost = groups[key], 0.0
        batch: list[Job] = []
        share = max(1, -(-self.left[slot.shape] // max(1, len(self.slots))))
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
        slot.last_key = key
        return batch

    def _key(self, job: Job) -> tuple[str, int]:
        return (job.job_id, self.attempts.get(job.job_id, 0) + 1)

    def _claim(self, jobs: list[Job]) -> set[str]:
        """Claim ``jobs``; the ids this driver may run. Busy ones wait in ``deferred``."""
        outcome = self.claims.claim([self._key(j) for j in jobs])
        if outcome.taken_over:  # a dead driver's claim: it may have stored the row before dying
            stored = self._stored({k[0] for k in outcome.taken_over})
            done_now = {k for k in outcome.taken_over if stored.get(k[0], 0) >= k[1]}
            self.claims.release(done_now, done=True)
            outcome.won.difference_update(done_now)
            outcome.done.update(done_now)
        for job in jobs:
            key = self._key(job)
            if key in outcome.busy:
                self.deferred[job.job_id] = job
            elif key in outcome.done:
                self.deferred.pop(job.job_id, None)
                self.elsewhere += 1
        return {k[0] for k in outcome.won}

    def _stored(self, job_ids: set[str]) -> dict[str, int]:
        import pyarrow as pa
        import pyarrow.compute as pc

        table = self.store.read(
            ["job_id", "attempt"], filter=pc.field("job_id").isin(pa.array(sorted(job_ids), pa.string()))
        )
        out: dict[str, int] = {}
        for jid, attempt in zip(table["job_id"].to_pylist(), table["attempt"].to_pylist(), strict=True):
            out[jid] = max(out.get(jid, 0), attempt)
        return out

    def recheck_deferred(self) -> None:
        """Jobs another driver holds: claim those whose driver died, drop those it stored."""
        now = time.monotonic()
        if not self.deferred or now - self.deferred_at < min(1.0, self.options.lease_s / 4):
            return
        self.deferred_at = now
        jobs = list(self.deferred.values())
        won = self._claim(jobs)
        for job in jobs:
            if job.job_id in won:
                del self.deferred[job.job_id]
                self.requeue(job, self.shape_of[job.job_id])

    def dispatch(self) -> None:
        idle = [s for s in self.slots if s.ref is None and s.ready]
        batches = [(slot, self._take(slot)) for slot in idle]
        for slot, batch in batches:
            self.left[slot.shape] -= len(batch)
        wanted = [j for _, batch in batches for j in batch]
        if not wanted:
            return
        won = self._claim(wanted)
        for slot, batch in batches:
            batch = [j for j in batch if j.job_id in won]
            if not batch:
                continue
            slot.batch, slot.sent = batch, time.monotonic()
            slot.deadline = slot.sent + sum(j.budget_s + self.options.eval_timeout_s for j in batch) + 120
            slot.ref = slot.actor.run.remote(batch)
            self.progress.running(batch)

    def watch(self, every: float = 0.5) -> None:
        """Learn which job of each busy slot's batch is running (the rest of the batch waits)."""
        now = time.monotonic()
        for slot in self.slots:
            if slot.ref is not None and slot.poll_ref is None and now - slot.polled >= every:
                slot.poll_ref, slot.polled = slot.actor.current_job.remote(), now
        refs = [s.poll_ref for s in self.slots if s.poll_ref is not None]
        if not refs:
            return
        done = set(self.ray.wait(refs, num_returns=len(refs), timeout=0)[0])
        for slot in self.slots:
            if slot.poll_ref is None or slot.poll_ref not in done:
                continue
            ref, slot.poll_ref = slot.poll_ref, None
            try:
                answer = self.ray.get(ref)
            except self.ray.exceptions.RayError:
                continue  # a lost actor is found by collect()
            job = next((j for j in slot.batch if answer and j.job_id == answer[0]), None)
            if job is not None and job is not slot.current:
                self._set_current(slot, job, answer[1])

    def _set_current(self, slot: _Slot, job: Job | None, since: float = 0.0) -> None:
        if slot.current is not None:
            notify(self.progress, "ended", slot.current)
        slot.current = job
        if job is not None:
            notify(self.progress, "started", job, since)

    def requeue(self, job: Job, shape: str) -> None:
        self.queues[shape][job.task_key].appendleft(job)
        self.left[shape] += 1

    # results

    def _record(self, job: Job, row: dict) -> None:
        if job.job_id in self.written:
            return  # exactly once per run, whatever happens upstream
        self.written.add(job.job_id)
        extra = dict(row.pop("extra", None) or {})
        if self.retries.get(job.job_id):
            extra["worker_failures"] = self.retries[job.job_id]
        full = complete_row(
            {**job.as_row(), **row},
            sweep=self.options.sweep,
            attempt=self.attempts.get(job.job_id, 0) + 1,
            orch_version=__version__,
            extra=json.dumps(extra, sort_keys=True),
        )
        self.buffer.append(full)
        self.statuses[full["status"]] += 1
        if full["status"] == NOT_APPLICABLE:
            seen = self.not_applicable.setdefault(job.learner, {"jobs": 0, "reason": full.get("error")})
            seen["jobs"] += 1
        elif full["status"] not in FINAL_STATUSES:
            kind = ("infra" if full["status"] in INFRA_STATUSES
                    else "input" if extra.get("failure") == "input" else "learner")  # fmt: skip
            self.failures.append(
                Failure(job.label(), full["status"], kind, failure_reason(full.get("error")))
            )
        seconds = (row.get("learn_s") or 0.0) + (row.get("eval_s") or 0.0)
        self.total_job_seconds += seconds
        old = self.job_seconds.get(job.learner)
        self.job_seconds[job.learner] = seconds if old is None else 0.8 * old + 0.2 * seconds
        self.progress.finished(job, full)

    def _retry_or_record(self, job: Job, shape: str, row: dict, reason: str) -> None:
        self.retries[job.job_id] += 1
        if self.retries[job.job_id] <= self.options.max_retries:
            self.requeue(job, shape)
        else:
            row.setdefault("status", "lost")
            row["error"] = f"{reason}; gave up after {self.options.max_retries} retries"
            self._record(job, row)

    def _lost(self, slot: _Slot, reason: str, status: str = "lost") -> None:
        """The actor is gone (or hung past its watchdog): its whole batch is retried.

        ``status`` (lost, or oom when Ray's memory monitor killed it) is recorded for a job that
        keeps losing its worker after ``max_retries`` retries.
        """
        self.lost_actors += 1
        self._set_current(slot, None)
        self.slots.remove(slot)
        try:
            self.ray.kill(slot.actor, no_restart=True)
        except Exception:
            pass
        if len(slot.batch) > 1:  # which job killed it is unknown: rerun each alone, count nothing yet
            for job in slot.batch:
                self.isolate.add(job.job_id)
                self.requeue(job, slot.shape)
        else:
            for job in slot.batch:
                self._retry_or_record(job, slot.shape, result_row(job.job_id, status=status), reason)
        self.grown_at = 0.0  # look for room for a replacement at once

    def collect(self, timeout: float) -> None:
        refs = [s.ref for s in self.slots if s.ref is not None]
        if not refs:
            time.sleep(min(timeout, 0.05))
            return
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)  # wake at the first result
        if ready:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        ready_set = set(ready)
        for slot in list(self.slots):
            if slot.ref is None:
                continue
            if slot.ref not in ready_set:
                if time.monotonic() > slot.deadline:
                    self._lost(slot, "the actor did not return within its batch deadline")
                continue
            ref, batch = slot.ref, slot.batch
            slot.ref, slot.batch, slot.poll_ref = None, [], None
            self._set_current(slot, None)
            try:
                rows = self.ray.get(ref)
            except self.ray.exceptions.RayTaskError as e:  # our job runner raised: a bug, not the jobs'
                for job in batch:
                    self._record(
                        job, result_row(job.job_id, status="error", error=f"the job runner failed: {e}")
                    )
                continue
            except self.ray.exceptions.RayError as e:
                # Anything else means the worker is gone: Ray's memory monitor (OutOfMemoryError), a
                # lost node, a SIGKILL (RayActorError). Never the jobs' result: retried elsewhere.
                slot.batch = batch
                self._lost(slot, f"the worker died: {_one_line(e)}", _infra_status(self.ray, e))
                continue
            by_id = {row["job_id"]: row for row in rows}
            for job in batch:
                row = by_id.get(job.job_id)
                if row is None:
                    self._record(
                        job,
                        result_row(
                            job.job_id, status="error", error="the actor returned no row for this job"
                        ),
                    )
                elif row["status"] in ("lost", "killed"):
                    self._retry_or_record(job, slot.shape, row, row.get("error") or "killed")
                else:
                    self._record(job, row)

    def flush(self, force: bool = False) -> None:
        due = time.monotonic() - self.flushed_at >= self.options.flush_seconds
        self.claims.heartbeat()
        if self.buffer and (force or due or len(self.buffer) >= self.options.flush_rows):
            keys = [(r["job_id"], r["attempt"]) for r in self.buffer]
            if self.claims.lapsed:  # stalled past our lease: store only what no one took over
                held = self.claims.still_held(keys)
                self.claims.release([k for k in keys if k not in held], done=False)
                self.buffer = [r for r in self.buffer if (r["job_id"], r["attempt"]) in held]
                keys = [k for k in keys if k in held]
                self.claims.lapsed = False
            self.store.write(self.buffer)
            self.claims.release(keys, done=True)
            self.buffer = []
        if force or due:
            self.flushed_at = time.monotonic()
            # running = learning on a slot now; the rest of a batch is still waiting (remaining)
            in_flight = [s.current.job_id for s in self.slots if s.ref is not None and s.current is not None]
            write_live_jobs(self.store, self.options.sweep, in_flight)

    def pending(self) -> bool:
        return any(self.left.values()) or any(s.ref is not None for s in self.slots) or bool(self.deferred)

    stop: threading.Event | None = None

    def run(self) -> None:
        self.start_actors()
        stalled_since = None
        while self.pending():
            if self.stop is not None and self.stop.is_set():
                raise KeyboardInterrupt
            self._check_started()
            self.recheck_deferred()
            self.dispatch()
            self.collect(timeout=0.1)
            self.watch()
            self.flush()
            self.progress.tick()
            self.grow()
            if not any(s.ready for s in self.slots) and any(self.left.values()):
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > self.options.stall_s:
                    raise SchedulerError(
                        f"no worker could start for {self.options.stall_s:.0f}s: the cluster has no room "
                        f"(resources {self.ray.cluster_resources()})"
                    )
                if not self.slots:  # every actor was lost: ask for one more (demand for an autoscaler)
                    self._new_actor(max(self.left, key=lambda shape: self.left[shape]))
            else:
                stalled_since = None

    def close(self) -> None:
        for slot in self.slots:
            try:
                self.ray.kill(slot.actor, no_restart=True)
            except Exception:
                pass
        self.slots = []


def run_sweep(
    jobs: Sequence[Job],
    store: ResultStore,
    options: SweepOptions,
    progress: Progress | None = None,
) -> SweepResult:
    """Run every job of a sweep that the store does not hold yet; return what happened.

    Ctrl-C stops it cleanly: rows of finished jobs are written, the actors are stopped, and the
    result says ``interrupted``. Rerun the same command to finish the sweep.
    """
    progress = progress or SilentProgress()
    t0 = time.monotonic()
    todo, attempts = plan(jobs, store, options)
    skipped = len(jobs) - len(todo)
    store.write_manifest({"sweep": options.sweep, "jobs": [_manifest_row(j) for j in jobs], **options.spec})
    progress.begin(len(todo), skipped)
    result = SweepResult(len(jobs), skipped, {}, 0.0, 0.0)
    if not todo:
        result.wall_s = time.monotonic() - t0
        progress.end(result)
        return result
    where = f"the Ray cluster at {options.address}" if options.address else "a local Ray"
    notify(progress, "starting", f"starting {where}")
    with ray_session(options.address, options.num_cpus) as ray:
        sched = _Scheduler(ray, todo, attempts, store, options, progress)
        notify(progress, "starting", "starting the workers")
        try:
            with stop_on_signals() as stop:
                sched.stop = stop
                sched.run()
        except KeyboardInterrupt:
            result.interrupted = True
        finally:
            sched.close()
            try:
                sched.flush(force=True)
            finally:
                sched.claims.close()  # unfinished jobs are free for the next driver at once
                clear_live_jobs(store, options.sweep)
    result.statuses = dict(sched.statuses)
    result.wall_s = time.monotonic() - t0
    result.job_seconds = sched.total_job_seconds
    result.lost_actors = sched.lost_actors
    result.retried = sum(sched.retries.values())
    result.not_applicable = dict(sched.not_applicable)
    result.elsewhere = sched.elsewhere
    result.failures = list(sched.failures)
    progress.end(result)
    return result


@contextlib.contextmanager
def stop_on_signals():
    """Ctrl-C and SIGTERM set an event that the scheduling loop checks on every turn.

    Installed after Ray has started, so no handler of Ray's replaces it, and a signal that arrives
    while the driver waits inside a Ray call is not lost: the loop sees it within ~0.1 s. Outside
    the main thread (library use) nothing is installed.
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    handler = lambda signum, frame: stop.set()  # noqa: E731
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, h in previous.items():
            signal.signal(sig, h)


def _manifest_row(job: Job) -> dict:
    return job.as_row()
