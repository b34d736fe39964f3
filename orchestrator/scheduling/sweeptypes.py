"""What a sweep is asked to do and what it reports: the types shared by the scheduler's parts.

They live apart from :mod:`orchestrator.scheduling.scheduler` so that its parts (the actor pool, the
job queue and the recorder) can use them without importing the controller that wires them, which
would be an import cycle. :mod:`orchestrator.scheduling.scheduler` re-exports every name here, so
callers keep importing them from there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from orchestrator.scheduling.gpushare import DEFAULT_GPU_MEMORY_ESTIMATE
from orchestrator.scheduling.sweep import Job
from orchestrator.storage.claims import DEFAULT_LEASE_S

DEFAULT_MEMORY_ESTIMATE = 512 << 20


@dataclass
class SweepOptions:
    """How to run a sweep (none of this changes a job's id)."""

    sweep: str
    max_retries: int = 2
    memory_per_job: int | None = None
    memory_estimate: int | None = DEFAULT_MEMORY_ESTIMATE
    """Memory each worker reserves from Ray when no stored peak of its learners is known (None: none)."""
    gpus_per_job: float | None = None
    """Share of a GPU each GPU job's actor asks Ray for (None: sized from the stored ``peak_gpu``,
    see :mod:`orchestrator.scheduling.gpushare`)."""
    gpu_memory_per_job: int | None = None
    """GPU memory cap per job in bytes (None: the job's share of the card)."""
    gpu_memory_estimate: int | None = DEFAULT_GPU_MEMORY_ESTIMATE
    """GPU memory a job is assumed to need when its learner has no stored ``peak_gpu``."""
    mps: bool = False
    """Start a private NVIDIA MPS daemon for a local Ray (:mod:`orchestrator.scheduling.mps`)."""
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
    """What one run of a sweep did: counts per status, time, and each failure (for the CLI's summary
    and exit code, and for library callers)."""

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
