"""The sweep's learner actors: how many, where, with what reservations, and which are alive.

Split from the scheduling loop (:mod:`orchestrator.scheduling.scheduler`) the way Ray Tune keeps
its actor manager apart from its controller: the pool knows Ray's actors and resources, not jobs'
claims or rows. It starts one actor per CPU (GPU learners: as many as the GPUs hold at the job's
share), adds actors when the cluster gains room, tells which actors have started, sends a batch
to an actor and hands back what came of it, and kills actors that are lost. What a lost batch
means for its jobs is decided by the controller and the job queue.

Memory and GPU reservations are made here because they are what Ray places actors by:

* every actor reserves Ray's ``memory`` resource (:func:`memory_reservation`), so a node gets no
  more workers than its memory holds;
* a GPU actor asks for its share of a card (:func:`gpu_share`, rules in
  :mod:`orchestrator.scheduling.gpushare`), so several jobs share one card when they fit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from orchestrator.scheduling.gpushare import (
    RAY_RESOURCE_STEP,
    GpuShare,
    choose_share,
    gpu_actor_count,
    jobs_per_gpu,
    local_gpu_memory,
    ray_share,
)
from orchestrator.scheduling.mps import sharing_note
from orchestrator.scheduling.sweep import Job
from orchestrator.scheduling.sweeptypes import Progress, SweepOptions, notify
from orchestrator.scheduling.worker import JobLimits
from orchestrator.storage.store import ResultStore

BATCH_GRACE_S = 120
"""Seconds an actor gets beyond its batch's budgets and evaluation timeouts before it counts as hung."""
GROW_EVERY_S = 5.0
"""How often the pool looks for room for one more actor (asking Ray is not free)."""


def memory_reservation(ray: Any, store: ResultStore, learners: set[str], options: SweepOptions) -> int | None:
    """Bytes each worker reserves from Ray's ``memory`` resource, so a node is not overcommitted.

    Per learner: 1.25 x the highest peak resident memory stored for it, else ``memory_estimate``;
    the worker reserves the largest over the sweep's learners, at most ``memory_per_job`` (a job
    cannot use more) and at most the largest node's memory (so some worker can always start).
    """
    peaks = stored_peaks(store, learners, "peak_rss")
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


def stored_peaks(store: ResultStore, learners: set[str], column: str) -> dict[str, int]:
    """learner -> the highest ``column`` (``peak_rss`` or ``peak_gpu``) stored for it; learners
    without one are left out. An estimate only: a store that cannot say gives ``{}``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    peaks: dict[str, int] = {}
    try:
        table = store.read([column, "learner"], filter=pc.field("learner").isin(pa.array(sorted(learners))))
        for learner, peak in zip(table["learner"].to_pylist(), table[column].to_pylist(), strict=True):
            if peak:
                peaks[learner] = max(peaks.get(learner, 0), int(peak))
    except Exception:  # noqa: BLE001
        return {}
    return peaks


def gpu_memory_total(ray: Any, options: SweepOptions, timeout_s: float = 30.0) -> tuple[int | None, str]:
    """The memory of one of the cluster's GPUs (the smallest), and what said so, without CUDA.

    A local Ray's GPUs are this machine's (:func:`~orchestrator.scheduling.gpushare.local_gpu_memory`).
    On a cluster (``--address``) a tiny task on a GPU node asks there, taking a sliver of a GPU and
    no CPU; a cluster that cannot answer within ``timeout_s`` counts as unknown.
    """
    if options.address is None:
        return local_gpu_memory()
    probe = ray.remote(num_cpus=0, num_gpus=RAY_RESOURCE_STEP, max_retries=0)(local_gpu_memory)
    ref = probe.remote()
    done, _ = ray.wait([ref], timeout=timeout_s)
    if not done:
        ray.cancel(ref, force=True)
        return None, f"no GPU node answered within {timeout_s:g}s"
    try:
        total, source = ray.get(ref)
    except Exception as e:  # noqa: BLE001 (unknown, not fatal: the fallback share applies)
        return None, f"the GPU probe failed: {type(e).__name__}"
    return total, f"{source} on a GPU node"


def gpu_share(ray: Any, store: ResultStore, learners: set[str], options: SweepOptions) -> GpuShare:
    """The share of a GPU and the GPU memory cap of each job of ``learners`` (the sweep's GPU learners)."""
    known = options.gpus_per_job and options.gpu_memory_per_job  # both given: the card's size is not needed
    total, source = (None, "") if known else gpu_memory_total(ray, options)
    return choose_share(
        learners=learners, total_bytes=total, explicit_share=options.gpus_per_job,
        explicit_cap=options.gpu_memory_per_job, peaks=stored_peaks(store, learners, "peak_gpu"),
        estimate=options.gpu_memory_estimate, total_source=source,
    )  # fmt: skip


def actor_shape(learner: str, has_gpu: bool) -> str:
    """``gpu`` for a learner that asks for a GPU when the cluster has one, else ``cpu``: the kind of
    actor its jobs run on (jobs of one shape never go to an actor of the other)."""
    from learners.base import spec_for

    spec, _ = spec_for(learner)
    return "gpu" if has_gpu and spec.resources.get("num_gpus", 0) > 0 else "cpu"


@dataclass
class Slot:
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


@dataclass
class BatchOutcome:
    """What came of a busy actor's batch: its rows, the Ray error that ended the call, or ``hung``
    (it did not return within its batch deadline and is still busy)."""

    slot: Slot
    batch: list[Job]
    rows: list[dict] = field(default_factory=list)
    error: BaseException | None = None
    hung: bool = False


class ActorPool:
    """The learner actors of one sweep (see the module docstring for what it does and does not know)."""

    def __init__(self, ray: Any, runner: type, store: ResultStore, options: SweepOptions,
                 progress: Progress, shapes: dict[str, str], has_gpu: bool) -> None:  # fmt: skip
        """``runner`` is the actor body; ``shapes`` maps each of the sweep's learners to its actor shape."""
        self.ray, self.options, self.progress, self.has_gpu = ray, options, progress, has_gpu
        self.slots: list[Slot] = []
        self.lost_actors = 0
        self.grown_at = 0.0
        gpu_learners = {learner for learner, shape in shapes.items() if shape == "gpu"}
        self.gpu = gpu_share(ray, store, gpu_learners, options) if gpu_learners else None
        gpu_cap = self.gpu.cap_bytes if self.gpu else None
        self.limits = JobLimits(options.memory_per_job, options.eval_timeout_s, gpu_memory_bytes=gpu_cap)
        self.actor_class = ray.remote(runner)
        self.reserve = memory_reservation(ray, store, set(shapes), options)

    # lifecycle and placement

    def new_actor(self, shape: str) -> None:
        """Start one actor of ``shape``; it gets jobs once :meth:`check_started` finds it ready."""
        # Two threads: ``run`` works while ``current_job`` answers the driver's "which job now?".
        opts: dict[str, Any] = {"num_cpus": 1, "scheduling_strategy": "SPREAD", "max_restarts": 0,
                                "max_concurrency": 2}  # fmt: skip
        if self.reserve:  # Ray places no more workers on a node than its memory holds
            opts["memory"] = self.reserve
        if shape == "gpu":  # a fractional GPU (gpushare): several actors share one card
            opts["num_gpus"] = self._gpu_ask()
        actor = self.actor_class.options(**opts).remote(self.limits)
        self.slots.append(Slot(actor, shape, ready_ref=actor.info.remote()))

    def _gpu_ask(self) -> float:
        """The GPU a GPU actor asks Ray for (its share, as Ray keeps it)."""
        return ray_share(self.gpu.share if self.gpu else 1.0)

    def cap(self) -> int:
        """How many actors at most: the cluster's CPUs now, or ``max_actors`` (autoscaling demand)."""
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        return max(cpus, self.options.max_actors or 0, 1)

    def start_actors(self, left: dict[str, int]) -> None:
        """One actor per CPU; GPU learners: as many as the GPUs hold at the job's share (bounded by
        the CPUs), and CPU actors on the CPUs left. Actors beyond what the cluster has now stay
        pending, which is what makes an autoscaler add nodes; jobs go only to actors that started.
        ``left``: jobs still queued per shape (no more actors of a shape than it has jobs)."""
        total = self.ray.cluster_resources()
        gpus = total.get("GPU", 0) or (1 if self.has_gpu else 0)
        want_gpu = 0
        if self.has_gpu and self.gpu is not None:
            want_gpu = gpu_actor_count(gpus, self.gpu.share, self.cap(), left.get("gpu", 0))
            local = self.options.address is None
            note = sharing_note(jobs_per_gpu(self.gpu.share), self.options.mps, local)
            notify(self.progress, "starting", self.gpu.describe() + note)
        want_cpu = min(max(self.cap() - want_gpu, 1), left.get("cpu", 0))
        for shape, n in (("gpu", want_gpu), ("cpu", want_cpu)):
            for _ in range(n):
                self.new_actor(shape)
        self.grown_at = time.monotonic()

    def grow(self, left: dict[str, int]) -> None:
        """Add an actor when the cluster gained room (an autoscaled node, a replaced worker)."""
        now = time.monotonic()
        if now - self.grown_at < GROW_EVERY_S:
            return
        self.grown_at = now
        if len(self.slots) >= self.cap() or any(not s.ready for s in self.slots):
            return  # at the cap, or an actor is still starting (it may be taking that room)
        free = self.ray.available_resources()
        for shape in ("gpu", "cpu"):
            mine = sum(1 for s in self.slots if s.shape == shape)
            if left.get(shape, 0) <= mine:
                continue
            if free.get("CPU", 0) >= 1 and (shape == "cpu" or free.get("GPU", 0) >= self._gpu_ask()):
                self.new_actor(shape)
                return

    def check_started(self) -> list[tuple[Slot, str]]:
        """Mark the actors that started as ready; the ones that failed to start, with why (the
        caller treats them as lost: :meth:`discard`)."""
        pending = [s.ready_ref for s in self.slots if not s.ready]
        if not pending:
            return []
        done, _ = self.ray.wait(pending, num_returns=len(pending), timeout=0)
        failed = []
        for slot in [s for s in self.slots if not s.ready and s.ready_ref in set(done)]:
            try:
                self.ray.get(slot.ready_ref)
                slot.ready = True
            except self.ray.exceptions.RayError as e:
                failed.append((slot, f"the worker failed to start: {str(e).splitlines()[0][:300]}"))
        return failed

    def discard(self, slot: Slot) -> None:
        """The actor is gone (or hung past its watchdog): count it, kill it, forget it, and look for
        room for a replacement at once. Its batch is the caller's to retry."""
        self.lost_actors += 1
        self.set_current(slot, None)
        self.slots.remove(slot)
        try:
            self.ray.kill(slot.actor, no_restart=True)
        except Exception:
            pass
        self.grown_at = 0.0

    def close(self) -> None:
        """Kill every actor (the end of a sweep, or Ctrl-C)."""
        for slot in self.slots:
            try:
                self.ray.kill(slot.actor, no_restart=True)
            except Exception:
                pass
        self.slots = []

    # batches in flight

    def idle(self) -> list[Slot]:
        """The started actors with no batch: the ones to give work to now."""
        return [s for s in self.slots if s.ref is None and s.ready]

    def busy(self) -> bool:
        return any(s.ref is not None for s in self.slots)

    def any_ready(self) -> bool:
        return any(s.ready for s in self.slots)

    def send(self, slot: Slot, batch: list[Job]) -> None:
        """Give ``batch`` to the actor; it counts as hung once the batch's budgets, evaluation
        timeouts and a grace period have passed without an answer."""
        slot.batch, slot.sent = batch, time.monotonic()
        slot.deadline = (
            slot.sent + sum(j.budget_s + self.options.eval_timeout_s for j in batch) + BATCH_GRACE_S
        )
        slot.ref = slot.actor.run.remote(batch)
        self.progress.running(batch)

    def collect(self, timeout: float) -> list[BatchOutcome]:
        """Wait up to ``timeout`` for the first batch to return, then take every batch that has.

        Ray errors come back as :attr:`BatchOutcome.error` for the caller to judge; a hung actor's slot
        keeps its batch. Other exceptions (the driver's own bugs) propagate.
        """
        refs = [s.ref for s in self.slots if s.ref is not None]
        if not refs:
            time.sleep(min(timeout, 0.05))
            return []
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)  # wake at the first result
        if ready:
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        ready_set = set(ready)
        outcomes = []
        for slot in list(self.slots):
            if slot.ref is None:
                continue
            if slot.ref not in ready_set:
                if time.monotonic() > slot.deadline:
                    outcomes.append(BatchOutcome(slot, slot.batch, hung=True))
                continue
            ref, batch = slot.ref, slot.batch
            slot.ref, slot.batch, slot.poll_ref = None, [], None
            self.set_current(slot, None)
            try:
                outcomes.append(BatchOutcome(slot, batch, rows=self.ray.get(ref)))
            except self.ray.exceptions.RayError as e:
                outcomes.append(BatchOutcome(slot, batch, error=e))
        return outcomes

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
                self.set_current(slot, job, answer[1])

    def set_current(self, slot: Slot, job: Job | None, since: float = 0.0) -> None:
        """Tell the display that the slot's previous job left it and ``job`` (if any) learns there now."""
        if slot.current is not None:
            notify(self.progress, "ended", slot.current)
        slot.current = job
        if job is not None:
            notify(self.progress, "started", job, since)

    def learning(self) -> list[str]:
        """The ids of the jobs learning on a slot now (the rest of a batch is still waiting)."""
        return [s.current.job_id for s in self.slots if s.ref is not None and s.current is not None]
