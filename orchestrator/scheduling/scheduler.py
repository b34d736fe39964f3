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
   ``max_retries`` times, then recorded as failed (``lost``, ``oom``, or ``killed`` as its worker
   said). Nothing else is affected.
5. Only this process writes rows, in batches (every ``flush_rows`` rows or ``flush_seconds``), each
   write atomic. A driver killed mid-sweep loses at most its unflushed rows; rerunning the same
   command finds the rest stored and runs only what is missing, so each job is stored once.
6. Any number of drivers may run on one store: a job goes to a worker only once this driver holds
   its claim (:mod:`orchestrator.storage.claims`). Jobs another live driver holds are waited for (their row
   appears, or their driver dies and the claim is taken over), so every driver ends with the whole
   sweep stored, each job once. Rows are stored only by the holder of the job's current claim,
   checked when they are committed (:meth:`orchestrator.storage.claims.Claims.commit`), so a driver
   that was paused past its lease drops what another driver took over, and says so in one line.

Actors beyond the cluster's CPUs (``max_actors``) stay pending and get no jobs until they start:
on an autoscaling cluster they are the demand that adds nodes. Where Ray comes from (a private
loopback-only local Ray, or ``--address``) is :mod:`orchestrator.scheduling.raysession`; what ``orch status``
reads about running jobs is :mod:`orchestrator.storage.live`.

Who does what (split the way Ray Tune separates its controller from its actor manager, so that each
part can be read in one sitting and the rules that need no Ray are tested without it): steps 2 and
the lost actors of 4 are :mod:`orchestrator.scheduling.actorpool`; 3, the retries of 4 and the
claims of 6 are :mod:`orchestrator.scheduling.jobqueue`; 5 and the fenced commits of 6 are
:mod:`orchestrator.scheduling.recorder`. The controller here, :class:`_Scheduler`, owns the loop and
decides what each event means for the others. The types they share are
:mod:`orchestrator.scheduling.sweeptypes`, re-exported here.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Sequence
from typing import Any

from orchestrator.scheduling.actorpool import (
    ActorPool,
    BatchOutcome,
    Slot,
    actor_shape,
    gpu_memory_total,
    gpu_share,
    memory_reservation,
    stored_peaks,
)
from orchestrator.scheduling.jobqueue import JobQueue
from orchestrator.scheduling.mps import mps_daemon
from orchestrator.scheduling.raysession import SchedulerError, ray_session
from orchestrator.scheduling.recorder import Recorder
from orchestrator.scheduling.sweep import Job
from orchestrator.scheduling.sweeptypes import (
    DEFAULT_MEMORY_ESTIMATE,
    Failure,
    Progress,
    SilentProgress,
    SweepOptions,
    SweepResult,
    failure_reason,
    notify,
)
from orchestrator.scheduling.worker import JobRunner
from orchestrator.storage.claims import Claims
from orchestrator.storage.live import clear_live_jobs
from orchestrator.storage.schema import INFRA_STATUSES, STATUSES, result_row
from orchestrator.storage.store import ResultStore

__all__ = [
    "DEFAULT_MEMORY_ESTIMATE",
    "Failure",
    "Progress",
    "SchedulerError",
    "SilentProgress",
    "SweepOptions",
    "SweepResult",
    "failure_reason",
    "gpu_memory_total",
    "gpu_share",
    "memory_reservation",
    "notify",
    "plan",
    "run_sweep",
    "stop_on_signals",
    "stored_peaks",
]


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


class _Scheduler:
    """The sweep's controller: owns the loop and wires its three parts, each in its own module.

    * :class:`~orchestrator.scheduling.actorpool.ActorPool`: the actors (lifecycle, placement,
      memory and GPU reservations, which are alive);
    * :class:`~orchestrator.scheduling.jobqueue.JobQueue`: which job goes next (batching, claims,
      retries, jobs other drivers hold, the lease);
    * :class:`~orchestrator.scheduling.recorder.Recorder`: the rows (buffered fenced commits,
      statuses, failures, progress).

    The controller only decides what an event means for the others: a batch that came back is
    recorded, a lost worker's batch is retried, a job out of retries is recorded as failed.
    """

    stop: threading.Event | None = None
    """Set by a signal (:func:`stop_on_signals`): the loop stops at its next turn."""

    def __init__(self, ray: Any, jobs: list[Job], attempts: dict[str, int], store: ResultStore,
                 options: SweepOptions, progress: Progress) -> None:  # fmt: skip
        self.ray, self.options = ray, options
        has_gpu = options.gpu if options.gpu is not None else ray.cluster_resources().get("GPU", 0) > 0
        shapes = {learner: actor_shape(learner, has_gpu) for learner in {j.learner for j in jobs}}
        self.claims = Claims(store, options.lease_s)
        self.recorder = Recorder(store, self.claims, options, progress)
        self.queue = JobQueue(jobs, shapes, attempts, store, self.claims, options, self.recorder.forget)
        self.pool = ActorPool(ray, options.runner or JobRunner, store, options, progress, shapes, has_gpu)
        self.progress = progress

    def _record(self, job: Job, row: dict) -> None:
        """Record the job's row, and let the queue learn its seconds for sizing the next batches."""
        seconds = self.recorder.record(
            job, row, self.queue.attempt(job), self.queue.retries.get(job.job_id, 0)
        )
        if seconds is not None:
            self.queue.observe(job.learner, seconds)

    def _retry_or_record(self, job: Job, shape: str, row: dict, reason: str) -> None:
        """The job's worker failed: retry it, or record ``row`` once it is out of retries."""
        if not self.queue.retry(job, shape):
            self._give_up(job, row, reason)

    def _give_up(self, job: Job, row: dict, reason: str) -> None:
        """Record a job that kept losing its worker, saying why and how often it was retried."""
        row.setdefault("status", "lost")
        row["error"] = f"{reason}; gave up after {self.options.max_retries} retries"
        self._record(job, row)

    def _lost(self, slot: Slot, batch: list[Job], reason: str, status: str = "lost") -> None:
        """The actor is gone (or hung past its watchdog): its whole batch is retried.

        ``status`` (lost, or oom when Ray's memory monitor killed it) is recorded for a job that
        keeps losing its worker after ``max_retries`` retries.
        """
        self.pool.discard(slot)
        for job in self.queue.lost_batch(batch, slot.shape):
            self._give_up(job, result_row(job.job_id, status=status), reason)

    def dispatch(self) -> None:
        """Give every idle actor a batch of jobs this driver could claim."""
        idle = self.pool.idle()
        served = {s.last_key for s in self.pool.slots if s.ref is not None}
        cut = self.queue.take_batches([(s.shape, s.last_key) for s in idle], served, len(self.pool.slots))
        for slot, (key, _) in zip(idle, cut, strict=True):
            slot.last_key = key
        wanted = [j for _, batch in cut for j in batch]
        if not wanted:
            return
        won = self.queue.claim(wanted)
        for slot, (_, batch) in zip(idle, cut, strict=True):
            batch = [j for j in batch if j.job_id in won]
            if batch:
                self.pool.send(slot, batch)

    def collect(self, timeout: float) -> None:
        """Record the rows of every batch that came back; retry the batches of lost workers."""
        for outcome in self.pool.collect(timeout):
            self._batch_back(outcome)

    def _batch_back(self, outcome: BatchOutcome) -> None:
        """What a batch's return means: rows to record, a runner bug, or a worker that is gone."""
        slot, batch, error = outcome.slot, outcome.batch, outcome.error
        if outcome.hung:
            self._lost(slot, batch, "the actor did not return within its batch deadline")
        elif isinstance(error, self.ray.exceptions.RayTaskError):
            # our job runner raised: a bug, not the jobs'
            for job in batch:
                failed = f"the job runner failed: {error}"
                self._record(job, result_row(job.job_id, status="error", error=failed))
        elif error is not None:
            # Anything else means the worker is gone: Ray's memory monitor (OutOfMemoryError), a
            # lost node, a SIGKILL (RayActorError). Never the jobs' result: retried elsewhere.
            self._lost(slot, batch, f"the worker died: {_one_line(error)}", _infra_status(self.ray, error))
        else:
            self._rows_back(slot.shape, batch, outcome.rows)

    def _rows_back(self, shape: str, batch: list[Job], rows: list[dict]) -> None:
        """Record each job's row; a job the worker says was killed or lost is retried first."""
        by_id = {row["job_id"]: row for row in rows}
        for job in batch:
            row = by_id.get(job.job_id)
            if row is None:
                missing = "the actor returned no row for this job"
                self._record(job, result_row(job.job_id, status="error", error=missing))
            elif row["status"] in ("lost", "killed"):
                self._retry_or_record(job, shape, row, row.get("error") or "killed")
            else:
                self._record(job, row)

    def flush(self, force: bool = False) -> None:
        """Renew the lease, commit the rows when due, and wait for other drivers' rows of the dropped."""
        self.queue.heartbeat()
        for job in self.recorder.flush(self.pool.learning, force):
            self.queue.defer(job)

    def _check_started(self) -> None:
        """An actor that failed to start is lost like any other (it has no batch yet)."""
        for slot, reason in self.pool.check_started():
            self._lost(slot, slot.batch, reason)

    def pending(self) -> bool:
        """Jobs queued, in flight, or waited for from another driver: the loop goes on."""
        return self.queue.pending() or self.pool.busy()

    def run(self) -> None:
        """Turn the loop until every job is recorded (or stored by another driver)."""
        self.pool.start_actors(self.queue.left)
        stalled_since = None
        while self.pending():
            if self.stop is not None and self.stop.is_set():
                raise KeyboardInterrupt
            self._check_started()
            self.queue.recheck_deferred()
            self.dispatch()
            self.collect(timeout=0.1)
            self.pool.watch()
            self.flush()
            self.progress.tick()
            self.pool.grow(self.queue.left)
            left = self.queue.left
            if not self.pool.any_ready() and any(left.values()):
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > self.options.stall_s:
                    raise SchedulerError(
                        f"no worker could start for {self.options.stall_s:.0f}s: the cluster has no room "
                        f"(resources {self.ray.cluster_resources()})"
                    )
                if not self.pool.slots:  # every actor was lost: ask for one more (demand for an autoscaler)
                    self.pool.new_actor(max(left, key=lambda shape: left[shape]))
            else:
                stalled_since = None

    def close(self) -> None:
        """Stop every actor (the rows are flushed after, by :func:`run_sweep`)."""
        self.pool.close()


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
    with contextlib.ExitStack() as running:
        mps = running.enter_context(mps_daemon(options.mps, local=options.address is None))
        if mps:
            notify(progress, "starting", mps)
        notify(progress, "starting", f"starting {where}")
        ray = running.enter_context(ray_session(options.address, options.num_cpus))
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
    result.statuses = dict(sched.recorder.statuses)
    result.wall_s = time.monotonic() - t0
    result.job_seconds = sched.recorder.total_job_seconds
    result.lost_actors = sched.pool.lost_actors
    result.retried = sum(sched.queue.retries.values())
    result.not_applicable = dict(sched.recorder.not_applicable)
    result.elsewhere = sched.queue.elsewhere
    result.failures = list(sched.recorder.failures)
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
