"""How much of a GPU each GPU job gets, and how much GPU memory it may use.

A GNN job at the paper's batch size uses a sliver of a modern GPU, so a sweep runs many of them on
one GPU at once: each GPU actor asks Ray for ``share`` of a GPU (Ray's fractional GPUs), so
``floor(1 / share)`` actors share one card, and each job's GPU memory is capped at ``share`` x the
card's memory (the job's child enforces the cap; a job beyond it ends as ``oom``, the others go on).

The share is ``--gpus-per-job`` when given. Otherwise it is sized like the CPU memory reservation
(:func:`orchestrator.scheduling.scheduler.memory_reservation`): 1.25 x the highest stored
``peak_gpu`` of the sweep's GPU learners (else ``--gpu-memory-estimate``), as a fraction of the
card's memory, rounded up to ``1/k`` so that exactly ``k`` jobs fit, and at least 1/64. The card's
memory is read without CUDA (``nvidia-smi`` or NVML): the process that starts jobs must never
initialise CUDA, since a CUDA context does not survive a fork. Where nothing can tell (a CPU machine
whose Ray declares GPUs), the share is :data:`FALLBACK_SHARE`.

Everything here but :func:`local_gpu_memory` is a pure function, so the rules are unit-tested
without a GPU or Ray.
"""

from __future__ import annotations

import math
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

DEFAULT_GPU_MEMORY_ESTIMATE = 4 << 30
"""GPU memory a job of a learner with no stored ``peak_gpu`` is assumed to need (``--gpu-memory-estimate``)."""

FALLBACK_SHARE = 0.25
"""The share when the GPU's memory cannot be read and ``--gpus-per-job`` is not given: 4 jobs per GPU."""

MAX_JOBS_PER_GPU = 64
"""The smallest share is 1/64: beyond that per-job overhead (a CUDA context each) outweighs the gain."""

PEAK_HEADROOM = 1.25
"""A stored peak is scaled by this before it sizes a share (as the CPU memory reservation does)."""

RAY_RESOURCE_STEP = 1e-4
"""Ray keeps resource quantities to 4 decimals; a share is rounded down to it so ``k`` actors still fit."""


@dataclass(frozen=True)
class GpuShare:
    """What each GPU job gets: ``share`` of a GPU, at most ``cap_bytes`` of its memory (None: no cap),
    and ``how`` that was chosen, in words, for the sweep's start line."""

    share: float
    cap_bytes: int | None
    how: str

    def describe(self) -> str:
        """One line: ``GPU jobs: 1/8 GPU each (8 per GPU), GPU memory cap 17.5 GiB: <how>``."""
        cap = f"GPU memory cap {format_bytes(self.cap_bytes)}" if self.cap_bytes else "no GPU memory cap"
        return f"GPU jobs: {format_share(self.share)} GPU each ({jobs_per_gpu(self.share)} per GPU), {cap}: {self.how}"


def parse_share(text: str | float) -> float:
    """``"0.125"``, ``"1/8"`` or ``0.125`` -> 0.125; a share is in (0, 1]: a job gets at most one GPU."""
    try:
        value = float(Fraction(str(text).strip()))
    except (ValueError, ZeroDivisionError):
        raise ValueError(f"not a GPU share: {text!r} (examples: 0.25, 1/8, 1)") from None
    if not 0 < value <= 1:
        raise ValueError(f"a GPU share is more than 0 and at most 1 (one GPU per job), not {text!r}")
    return value


def share_for(need_bytes: int, total_bytes: int) -> float:
    """The largest ``1/k`` (k jobs per GPU, 1 <= k <= 64) whose memory holds ``need_bytes``."""
    if need_bytes <= 0 or total_bytes <= 0:
        raise ValueError(f"GPU memory sizes must be positive (need {need_bytes}, total {total_bytes})")
    k = min(max(total_bytes // need_bytes, 1), MAX_JOBS_PER_GPU)
    return 1 / k


def jobs_per_gpu(share: float) -> int:
    """How many actors of ``share`` one GPU holds (1/3 -> 3, 0.3 -> 3, 1 -> 1)."""
    return max(int(math.floor(1 / ray_share(share) + 1e-9)), 1)


def ray_share(share: float) -> float:
    """``share`` as Ray is asked for it: rounded down to Ray's resource step, so 1/3 -> 0.3333 and
    three actors fit on one GPU (Ray would round 0.33335 up, and only two would)."""
    return max(math.floor(share / RAY_RESOURCE_STEP + 1e-6) * RAY_RESOURCE_STEP, RAY_RESOURCE_STEP)


def gpu_actor_count(gpus: float, share: float, cpus: int, jobs_left: int) -> int:
    """GPU actors to start: as many as the cluster's GPUs hold at ``share`` each, no more than its
    CPUs (each actor takes a CPU) or the GPU jobs left."""
    per_gpu_slots = int(math.floor(gpus + 1e-9)) * jobs_per_gpu(share)
    fraction_left = gpus - math.floor(gpus + 1e-9)  # a fractional GPU total (rare): what it holds too
    slots = per_gpu_slots + int(math.floor(max(fraction_left, 0) / ray_share(share) + 1e-9))
    return max(min(slots, cpus, jobs_left), 0)


def cap_bytes(share: float, total_bytes: int) -> int:
    """The GPU memory a job of ``share`` may use: its part of the card."""
    return int(share * total_bytes)


def _need(peaks: Mapping[str, int], learners: set[str], estimate: int | None) -> tuple[int | None, str]:
    """Bytes a job of the sweep's GPU learners needs (1.25 x the highest stored peak, else the
    estimate for learners without one), and where that came from."""
    need, said = 0, []
    for learner in sorted(learners):
        if peaks.get(learner):
            need = max(need, int(peaks[learner] * PEAK_HEADROOM))
            said.append(f"{learner} peaked at {format_bytes(peaks[learner])}")
        elif estimate:
            need = max(need, estimate)
            said.append(f"{learner} has no stored peak, estimate {format_bytes(estimate)}")
    return (need or None), "; ".join(said)


def choose_share(
    *,
    learners: set[str],
    total_bytes: int | None,
    explicit_share: float | None = None,
    explicit_cap: int | None = None,
    peaks: Mapping[str, int] | None = None,
    estimate: int | None = DEFAULT_GPU_MEMORY_ESTIMATE,
    total_source: str = "",
) -> GpuShare:
    """The share and memory cap of each GPU job of a sweep, and why.

    ``learners`` are the sweep's GPU learners, ``peaks`` their stored ``peak_gpu`` (bytes),
    ``total_bytes`` the memory of one GPU (None: unknown, ``total_source`` says where it was read).
    An explicit share wins; else an explicit cap sizes it; else the stored peaks or the estimate
    do. The cap is the explicit one, else the share of the card (none when the card is unknown).
    """
    card = (
        f"{format_bytes(total_bytes)} GPU{f' ({total_source})' if total_source else ''}"
        if total_bytes
        else ""
    )
    if explicit_share is not None:
        share, how = explicit_share, "--gpus-per-job" + (f" on a {card}" if card else "")
    elif total_bytes is None:
        share = FALLBACK_SHARE
        how = (
            f"the GPU's memory is unknown ({total_source or 'not read'}), default share {format_share(share)}"
        )
    elif explicit_cap is not None:
        share, how = share_for(explicit_cap, total_bytes), f"--gpu-memory-per-job on a {card}"
    else:
        need, why = _need(peaks or {}, learners, estimate)
        if need is None:
            share, how = 1.0, "no stored peak and no estimate: a whole GPU"
        else:
            share = share_for(need, total_bytes)
            how = f"{PEAK_HEADROOM:g} x {format_bytes(need / PEAK_HEADROOM)} of a {card} ({why})"
    if explicit_cap is not None:
        cap: int | None = explicit_cap
    else:
        cap = cap_bytes(share, total_bytes) if total_bytes else None
    return GpuShare(share, cap, how)


def format_share(share: float) -> str:
    """``0.125`` -> ``1/8``; a share that is no unit fraction stays a decimal (``0.3``)."""
    k = round(1 / share)
    return f"1/{k}" if abs(1 / k - share) < 1e-9 and k > 1 else f"{share:g}"


def format_bytes(n: float) -> str:
    """``1.5 GiB``, ``640 MiB``: sizes for the start line."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{int(n)} B"


def parse_memory_totals(text: str) -> int | None:
    """The smallest GPU's memory in bytes from ``nvidia-smi --query-gpu=memory.total
    --format=csv,noheader,nounits`` output (one MiB figure per GPU); None when there is none."""
    totals = [
        int(float(line.strip())) << 20
        for line in text.splitlines()
        if line.strip().replace(".", "").isdigit()
    ]
    return min(totals) if totals else None


def local_gpu_memory(timeout_s: float = 10.0) -> tuple[int | None, str]:
    """The memory of this machine's smallest GPU, and what said so, without initialising CUDA:
    NVML when ``pynvml`` is importable, else ``nvidia-smi``; ``(None, why)`` when neither can tell."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            count = pynvml.nvmlDeviceGetCount()
            totals = [
                pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).total
                for i in range(count)
            ]
        finally:
            pynvml.nvmlShutdown()
        if totals:
            return int(min(totals)), "NVML"
    except Exception:  # noqa: BLE001 (no NVML, no driver: try nvidia-smi)
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "no nvidia-smi"
    try:
        out = subprocess.run(
            [smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=timeout_s, check=True,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"nvidia-smi failed: {type(e).__name__}"
    total = parse_memory_totals(out.stdout)
    return total, "nvidia-smi" if total else "nvidia-smi lists no GPU"
