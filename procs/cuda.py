"""CUDA and child processes: the check before a fork, and the GPU memory cap and peak inside a child.

A child forked from a process that initialised CUDA cannot use the GPU (``CUDA error: initialization
error``), and on a long-lived multi-threaded Ray worker even a fork of a process that never did was
seen to fail (issue 26). So GPU jobs start in spawned children, and every fork first asks
:func:`cuda_initialised`, which reads torch's own flag and never initialises CUDA itself: torch is
looked at only if this process already imported it.

Inside a child (see :mod:`procs.supervise`): when :data:`procs.env.GPU_MEMORY_CAP_ENV` is set and
CUDA is available, torch's caching allocator is capped to that many bytes of each visible device
(``set_per_process_memory_fraction``), so one job over its share fails alone as ``oom`` and the other
jobs on the GPU go on. The item's peak is ``max_memory_allocated`` (0 when CUDA was not used).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

from procs.env import GPU_MEMORY_CAP_ENV


class CudaForkError(RuntimeError):
    """A fork was asked of a process that has initialised CUDA (the child could not use the GPU)."""


FORK_REFUSED = (
    "this process has initialised CUDA; a forked child cannot use the GPU: "
    "start GPU jobs with start_method='spawn'"
)


def _torch() -> ModuleType | None:
    """torch if this process already imported it; never imports it."""
    return sys.modules.get("torch")


def cuda_initialised() -> bool:
    """True only if torch is imported here and has initialised CUDA in this process."""
    torch = _torch()
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_initialized())
    except Exception:  # noqa: BLE001 (a torch without CUDA support, or half imported: no CUDA)
        return False


def refuse_fork_after_cuda() -> None:
    """Raise :class:`CudaForkError` before a fork that would give the child a broken CUDA."""
    if cuda_initialised():
        raise CudaForkError(FORK_REFUSED)


def gpu_memory_cap() -> int | None:
    """The GPU memory cap of this process (bytes) from its environment, None when uncapped."""
    text = os.environ.get(GPU_MEMORY_CAP_ENV)
    return int(text) if text else None


_capped: set[int] = set()


def apply_gpu_memory_cap() -> int | None:
    """Cap torch's allocator on every visible device to the environment's cap (once per process).

    Imports torch only when a cap is set; does nothing where CUDA is not available. Returns the cap.
    """
    cap = gpu_memory_cap()
    if cap is None or os.getpid() in _capped:
        return cap
    import torch

    if torch.cuda.is_available():
        for device in range(torch.cuda.device_count()):
            total = torch.cuda.get_device_properties(device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total), device)
    _capped.add(os.getpid())
    return cap


def reset_gpu_peak() -> None:
    """Start a new GPU peak for the next item (only where this process already uses CUDA)."""
    if cuda_initialised():
        torch = _torch()
        assert torch is not None
        for device in range(torch.cuda.device_count()):
            torch.cuda.reset_peak_memory_stats(device)


def gpu_peak() -> int:
    """Peak bytes torch allocated on the GPUs since the last reset (0 when CUDA is unused here)."""
    if not cuda_initialised():
        return 0
    torch = _torch()
    assert torch is not None
    return sum(int(torch.cuda.max_memory_allocated(d)) for d in range(torch.cuda.device_count()))


def gpu_used() -> str | None:
    """The name of the GPU this process computes on (``NVIDIA H200``), None when it has not initialised
    CUDA: where an item ran, read from the process rather than claimed by the work."""
    if not cuda_initialised():
        return None
    torch = _torch()
    assert torch is not None
    return str(torch.cuda.get_device_name(torch.cuda.current_device()))


def device_label(gpu: str | None) -> str:
    """How rows name where a job ran: ``cuda (NAME)`` for the GPU NAME, else ``cpu``."""
    return f"cuda ({gpu})" if gpu else "cpu"


def is_gpu_oom(exc: BaseException) -> bool:
    """Whether ``exc`` is torch running out of GPU memory (its own cap or the device's)."""
    torch = _torch()
    oom = getattr(torch, "OutOfMemoryError", None) or getattr(
        getattr(torch, "cuda", None), "OutOfMemoryError", None
    )
    if isinstance(oom, type) and isinstance(exc, oom):
        return True
    return "CUDA out of memory" in str(exc)


def gpu_oom_message(traceback_text: str) -> str:
    """The ``oom`` payload of an item that ran out of GPU memory: the cap first, then the traceback."""
    cap = gpu_memory_cap()
    where = f"over the cap of {cap / 2**20:.0f} MiB ({GPU_MEMORY_CAP_ENV})" if cap else "the device is full"
    return f"GPU memory ran out: {where}\n{traceback_text}"
