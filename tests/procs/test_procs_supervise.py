"""`procs.supervise`: items under deadlines and memory caps in forked or spawned children.

Real processes; the GPU memory cap's handling is checked without a GPU by raising torch's own
out-of-memory error in the child (the GPU tests at the end run the real thing where CUDA is).
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from procs.env import GPU_MEMORY_CAP_ENV, JOB_PROCESS_ENV, MEMORY_CAP_ENV
from procs.supervise import End, Start, run_one, run_supervised

METHODS = ("fork", "spawn")


def _sleepy(i: int, send) -> tuple[str, object]:
    """Item 0 sleeps past any short deadline; the others answer at once with their environment."""
    if i == 0:
        time.sleep(600)
    send(("hello", i))
    return "ok", {k: os.environ.get(k) for k in (JOB_PROCESS_ENV, MEMORY_CAP_ENV, GPU_MEMORY_CAP_ENV)}


def _hoard(i: int, send) -> tuple[str, object]:
    """Item 0 touches 400 MiB and holds it; item 1 is small."""
    if i == 0:
        held = [np.ones(1 << 21) for _ in range(25)]  # 16 MiB each, every page touched
        time.sleep(30)
        return "ok", len(held)
    return "ok", "small"


def _gpu_oom(i: int, send) -> tuple[str, object]:
    """Item 0 runs out of GPU memory as torch says it (no GPU needed to raise the error)."""
    import torch

    if i == 0:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    return "ok", "next"


@pytest.mark.parametrize("method", METHODS)
def test_an_item_past_its_deadline_is_killed_and_the_next_goes_on(method):
    seen: list = []
    t0 = time.monotonic()
    first, second = run_supervised(2, _sleepy, lambda i: 1.0, 2**30, seen.append, start_method=method,
                                   gpu_memory_bytes=2**29)  # fmt: skip
    assert first.kind == "timeout" and 1.0 <= first.seconds < 3.0
    assert time.monotonic() - t0 < 30
    assert second.kind == "ok" and second.peak_gpu == 0
    # every child gets the caps and its parent's pid in its environment
    assert second.payload == {JOB_PROCESS_ENV: str(os.getpid()), MEMORY_CAP_ENV: str(2**30),
                              GPU_MEMORY_CAP_ENV: str(2**29)}  # fmt: skip
    starts = [m.item for m in seen if isinstance(m, Start)]
    assert starts == [0, 1] and ("hello", 1) in seen and not any(isinstance(m, End) for m in seen)


@pytest.mark.parametrize("method", METHODS)
def test_resident_memory_over_the_cap_is_oom_and_the_next_item_goes_on(method):
    first, second = run_supervised(2, _hoard, lambda i: 60.0, 128 * 2**20, start_method=method)
    assert first.kind == "oom" and "over the cap of 128 MiB" in first.payload
    assert first.peak_rss > 128 * 2**20 and first.seconds < 20
    assert (second.kind, second.payload) == ("ok", "small")


def test_running_out_of_gpu_memory_is_oom_naming_the_cap():
    pytest.importorskip("torch")
    first, second = run_supervised(2, _gpu_oom, lambda i: 60.0, None, start_method="spawn",
                                   gpu_memory_bytes=256 * 2**20)  # fmt: skip
    assert first.kind == "oom"
    assert first.payload.startswith(f"GPU memory ran out: over the cap of 256 MiB ({GPU_MEMORY_CAP_ENV})")
    assert "Tried to allocate 2.00 GiB" in first.payload
    assert (second.kind, second.payload) == ("ok", "next")  # in a fresh child


def test_spawn_needs_work_that_pickles():
    with pytest.raises(Exception, match="pickle|Pickl"):
        run_one(lambda i, send: ("ok", None), 5.0, start_method="spawn")


# --- on a GPU -------------------------------------------------------------------------------------------


def _cuda_alloc(i: int, send) -> tuple[str, object]:
    """Item 0 asks for 1 GiB of GPU memory; item 1 for 64 MiB."""
    import torch

    x = torch.ones((1 << 30) // 4 if i == 0 else (64 << 20) // 4, device="cuda")
    return "ok", float(x.sum().item())


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _has_cuda(), reason="needs CUDA")
def test_on_a_gpu_a_job_over_its_gpu_cap_is_oom_and_the_next_goes_on():
    first, second = run_supervised(2, _cuda_alloc, lambda i: 120.0, None, start_method="spawn",
                                   gpu_memory_bytes=512 * 2**20)  # fmt: skip
    assert first.kind == "oom" and "over the cap of 512 MiB" in first.payload, first.payload
    assert second.kind == "ok", second.payload
    assert 64 * 2**20 <= second.peak_gpu < 512 * 2**20


class _SlowWarmUp:
    """A work object whose ``prepare`` takes longer than the item's budget; item 1's warm-up fails."""

    def prepare(self, i: int) -> None:
        if i == 1:
            raise RuntimeError("warm-up broke")
        time.sleep(1.5)

    def __call__(self, i: int, send) -> tuple[str, object]:
        return "ok", i


@pytest.mark.parametrize("method", METHODS)
def test_the_warm_up_is_outside_the_items_deadline(method: str) -> None:
    """``prepare(i)`` runs before item i's clock starts: a 1.5 s warm-up under a 1 s budget is
    not a timeout; a warm-up that raises ends its item as an error, and the next item goes on."""
    out = run_supervised(3, _SlowWarmUp(), lambda i: 1.0, None, start_method=method)
    assert [o.kind for o in out] == ["ok", "error", "ok"]
    assert out[0].payload == 0 and out[0].seconds < 1.0
    assert "warm-up broke" in out[1].payload
