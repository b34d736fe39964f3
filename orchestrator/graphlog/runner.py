"""The actor body for GraphLog setup jobs: the one scheduler's :class:`~orchestrator.scheduling.worker.JobRunner`
counterpart for ``orch graphlog sweep`` (see :mod:`orchestrator.graphlog.jobs`).

Why a runner of its own: an IGGP job is one learner on one task, scored in a second process; a
GraphLog setup job trains and scores in turns over several worlds (continual: train world 1, score,
train world 2, score both, ...), so its results are the per-world rows the setup produces. It
still runs under the same supervisor as every IGGP job (:func:`procs.supervise.run_supervised`):
a child per job, killed at its hard deadline, memory-capped, and streaming what it has so
far to this process as it goes, so a killed job keeps the rows it reported. The child is *spawned*
(a fresh interpreter, as every GPU job's; see :mod:`orchestrator.scheduling.worker`): a fork of this
long-lived actor cannot be trusted with CUDA, so the work is a picklable :class:`SetupWork`, and
this process never touches the GPU (the device is named by the child).

The hard deadline is the budget plus the scoring allowance (``JobLimits.eval_timeout_s``, as IGGP
jobs get for scoring): the setup stops training at the budget itself and scores its best model, and
only a job that still has not finished by then is killed.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.graphlog.jobs import GraphLogJob, SweepSpec, detail_rows, legacy_job_ids, plan_jobs
from orchestrator.scheduling.gpushare import DEFAULT_GPU_MEMORY_ESTIMATE
from orchestrator.scheduling.scheduler import Progress, SweepOptions, SweepResult, run_sweep
from orchestrator.scheduling.sweep import Job, sweep_name
from orchestrator.scheduling.worker import JobLimits, node_name
from orchestrator.storage.schema import ResultRow, result_row
from orchestrator.storage.store import ResultStore
from procs.cuda import cuda_initialised, device_label
from procs.supervise import run_one


def _setup_rows(job: GraphLogJob, report: Callable[[dict], None]) -> list[dict]:
    """Run the job's setup (in the supervised child), reporting each row as the setup makes it."""
    from learners.gnn import setups
    from learners.gnn.data import WorldData
    from learners.gnn.modules import net_config
    from learners.gnn.train import TrainConfig
    from tasks.graphlog import GraphLogSource

    suite = GraphLogSource(job.directory).suite

    def load(names: tuple[str, ...]) -> list:
        return [WorldData.of_world(suite.load(n)) for n in names]

    cfg = net_config(job.model, dim=job.dim, seed=job.seed, dropout=job.dropout)
    tcfg = TrainConfig(epochs=job.epochs, batch_size=job.batch_size, seed=job.seed)
    return setups.run(
        job.setup, load(job.worlds), cfg, tcfg, job.cooperative_budget_s, load(job.heldout), list(job.shots),
        report=report,
    )  # fmt: skip


def _device() -> str:
    import torch

    from learners.gnn.train import pick_device, use_deterministic

    use_deterministic()  # before the child's first CUDA call: cuBLAS reads its workspace setting once
    dev = pick_device()  # the GPU when Ray gave this actor one (num_gpus), else the CPU
    return device_label(torch.cuda.get_device_name(dev) if dev.type == "cuda" else None)


@dataclass(frozen=True)
class DeviceReport:
    """The job's child says where it trains (``cuda (NAME)`` or ``cpu``)."""

    item: int
    device: str


@dataclass(frozen=True)
class RowReport:
    """One scored row of the setup, sent as soon as it is made (kept if the job is killed later)."""

    item: int
    row: dict


@dataclass(frozen=True)
class SetupWork:
    """The work of a setup job's spawned child (picklable): name the device, then run the setup."""

    spec: GraphLogJob

    def __call__(self, i: int, send: Callable[[Any], None]) -> tuple[str, Any]:
        send(DeviceReport(i, _device()))
        return "ok", _setup_rows(self.spec, lambda row: send(RowReport(i, row)))


class GraphLogRunner:
    """Runs batches of GraphLog setup jobs, each in its own supervised child; returns result rows.

    Wrapped with ``ray.remote`` by the scheduler (``SweepOptions.runner``).
    """

    def __init__(self, limits: JobLimits) -> None:
        self.limits = limits
        self.node = node_name()
        self.current: tuple[str, float] | None = None

    def info(self) -> dict:
        """Who this actor is; ``cuda_initialised`` must stay False (the GPU is used in spawned children)."""
        return {"pid": os.getpid(), "node": self.node, "cuda_initialised": cuda_initialised()}

    def current_job(self) -> tuple[str, float] | None:
        """(job id, wall-clock start) of the job running now, for the driver's running/queued count."""
        return self.current

    def run(self, jobs: list[Job]) -> list[ResultRow]:
        rows = []
        try:
            for job in jobs:
                self.current = (job.job_id, time.time())
                rows.append(self.run_one(job))
        finally:
            self.current = None
        return rows

    def run_one(self, job: Job) -> ResultRow:
        spec = GraphLogJob.of(job)
        reported: list[dict] = []
        device: list[str] = []

        def keep(message: Any) -> None:
            if isinstance(message, RowReport):
                reported.append(message.row)
            elif isinstance(message, DeviceReport):
                device.append(message.device)

        deadline = spec.budget_s + self.limits.eval_timeout_s
        t0 = time.monotonic()
        out = run_one(
            SetupWork(spec), deadline, self.limits.memory_bytes, keep, start_method="spawn",
            gpu_memory_bytes=self.limits.gpu_memory_bytes,
        )  # fmt: skip
        seconds = time.monotonic() - t0
        where = device[0] if device else None
        error = None
        got: list[dict] = []
        if out.kind == "ok":
            got = out.payload
            status = "timeout" if any(r.get("timeout") for r in got) else "ok"
            if status == "timeout":
                error = (
                    f"budget of {spec.budget_s:g}s ran out; scores are of the best-validation model so far "
                    "(the initial model if no epoch finished)"
                )
        elif out.kind == "timeout":
            got, status = reported, "timeout"
            error = (
                f"killed at the hard deadline ({spec.budget_s:g}s budget + {self.limits.eval_timeout_s:g}s "
                f"to score); {len(reported)} row(s) reported before"
            )
        elif out.kind in ("error", "oom"):
            tail = "".join(str(out.payload).splitlines(keepends=True)[-12:])
            status, error = out.kind, f"job {job.job_id} ({spec.label()}) failed:\n{tail}"
        else:
            status, why = out.died()
            error = f"job {job.job_id} ({spec.label()}): {why}"
        rows = detail_rows(spec, got, status, error, where, seconds)
        tests = [r["test_acc"] for r in rows if r["test_acc"] is not None]
        return result_row(
            job.job_id, status=status, learn_s=out.seconds, peak_rss=out.peak_rss, node=self.node,
            peak_gpu=out.peak_gpu or None, started=out.began, finished=out.ended, error=error,
            description=f"{spec.label()}: {len(rows)} scored row(s)"
            + (f", mean test accuracy {sum(tests) / len(tests):.3f}" if tests else ""),
            extra={"graphlog": rows, "device": where, "deadline_s": None if math.isinf(deadline) else deadline,
                   "start_method": "spawn"},
        )  # fmt: skip


# --- the sweep ------------------------------------------------------------------------------------------


def run_graphlog_sweep(
    spec: SweepSpec,
    store: ResultStore,
    *,
    rerun: bool = False,
    address: str | None = None,
    num_cpus: int | None = None,
    max_retries: int = 2,
    eval_timeout_s: float = 600.0,
    progress: Progress | None = None,
    gpus_per_job: float | None = None,
    gpu_memory_per_job: int | None = None,
    gpu_memory_estimate: int | None = DEFAULT_GPU_MEMORY_ESTIMATE,
    mps: bool = False,
) -> tuple[list[Job], SweepResult]:
    """Plan ``spec`` and run the jobs the store lacks (all with ``rerun``) through the one scheduler.

    Returns the planned jobs and what happened. Ctrl-C (or SIGTERM) stops cleanly: finished jobs
    are stored, and the same command resumes. A job stored by an orch before schema version 2
    (under ``graphlog/``) counts as stored. The ``gpu*`` arguments size each job's share of a GPU
    and its GPU memory cap (:mod:`orchestrator.scheduling.gpushare`; defaults from stored peaks);
    ``mps`` runs a private MPS daemon for a local Ray (:mod:`orchestrator.scheduling.mps`).
    """
    jobs = plan_jobs(spec)
    todo = jobs
    if not rerun:
        old = legacy_job_ids(store)
        todo = [j for j in jobs if json.loads(j.params)["legacy_id"] not in old]
    settings = {"graphlog": {k: v for k, v in spec.__dict__.items() if k != "directory"}}
    options = SweepOptions(
        "graphlog-" + sweep_name(jobs).removeprefix("sweep-"), max_retries=max_retries, eval_timeout_s=eval_timeout_s,
        rerun=rerun, address=address, num_cpus=num_cpus, runner=GraphLogRunner, spec=settings,
        gpus_per_job=gpus_per_job, gpu_memory_per_job=gpu_memory_per_job, gpu_memory_estimate=gpu_memory_estimate,
        mps=mps,
    )  # fmt: skip
    result = run_sweep(todo, store, options, progress)
    result.planned, result.skipped = len(jobs), result.skipped + len(jobs) - len(todo)
    return jobs, result
