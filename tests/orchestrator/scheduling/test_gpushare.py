"""Many GPU jobs per GPU: the share and memory-cap rules (pure), and fractional placement on a real
local Ray that declares GPUs on a CPU machine (``ray.init(num_gpus=2)``), so CI without a GPU runs it."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest
from store_rows import row
from sweep_helpers import write_tiny_dataset

from orchestrator.cli.gpuflags import gpu_options
from orchestrator.scheduling.gpushare import (
    DEFAULT_GPU_MEMORY_ESTIMATE,
    FALLBACK_SHARE,
    MAX_JOBS_PER_GPU,
    PEAK_HEADROOM,
    cap_bytes,
    choose_share,
    format_share,
    gpu_actor_count,
    jobs_per_gpu,
    local_gpu_memory,
    parse_memory_totals,
    parse_share,
    ray_share,
    share_for,
)
from orchestrator.scheduling.raysession import loopback_only
from orchestrator.scheduling.scheduler import (
    SilentProgress,
    SweepOptions,
    gpu_share,
    run_sweep,
    stored_peaks,
)
from orchestrator.scheduling.sweep import SweepError, build_jobs
from orchestrator.storage.store import ResultStore
from tasks.iggp import Dataset

GIB = 1 << 30
CARD = 80 * GIB  # any card size: the rules are relative to it


# --- the rules ------------------------------------------------------------------------------------


def test_parse_share_accepts_decimals_and_fractions_in_zero_to_one() -> None:
    assert parse_share("0.125") == parse_share("1/8") == parse_share(0.125) == 1 / 8
    assert parse_share("1") == 1.0
    for bad in ("0", "-0.5", "1.5", "2", "half", "1/0", ""):
        with pytest.raises(ValueError, match="GPU share"):
            parse_share(bad)


def test_share_is_the_largest_unit_fraction_that_holds_the_need() -> None:
    assert share_for(CARD // 8, CARD) == 1 / 8
    assert share_for(CARD // 8 + 1, CARD) == 1 / 7  # a byte more and only 7 fit
    assert share_for(2 * CARD, CARD) == 1.0  # more than a card: a whole GPU, never more
    assert share_for(1, CARD) == 1 / MAX_JOBS_PER_GPU  # clamped
    with pytest.raises(ValueError):
        share_for(0, CARD)


def test_ray_is_asked_for_a_share_that_k_actors_fit() -> None:
    for k in (1, 2, 3, 7, 8, 64):
        assert k * ray_share(1 / k) <= 1.0 and jobs_per_gpu(1 / k) == k
    assert jobs_per_gpu(0.3) == 3 and format_share(0.3) == "0.3" and format_share(1 / 8) == "1/8"


def test_gpu_actors_fill_the_gpus_bounded_by_cpus_and_jobs() -> None:
    assert gpu_actor_count(gpus=2, share=0.5, cpus=4, jobs_left=10) == 4
    assert gpu_actor_count(gpus=2, share=0.5, cpus=3, jobs_left=10) == 3
    assert gpu_actor_count(gpus=2, share=0.5, cpus=16, jobs_left=1) == 1
    assert gpu_actor_count(gpus=1, share=1 / 8, cpus=16, jobs_left=100) == 8
    assert gpu_actor_count(gpus=1, share=1 / 3, cpus=16, jobs_left=100) == 3
    assert gpu_actor_count(gpus=1, share=1.0, cpus=16, jobs_left=100) == 1


def test_default_share_comes_from_the_stored_peak_of_the_learners() -> None:
    peak = CARD // 10  # x 1.25 = CARD / 8
    got = choose_share(
        learners={"gnn-a", "gnn-b"}, total_bytes=CARD, peaks={"gnn-a": peak, "gnn-b": peak // 2}
    )
    assert got.share == share_for(int(peak * PEAK_HEADROOM), CARD) == 1 / 8
    assert got.cap_bytes == cap_bytes(got.share, CARD) == CARD // 8
    assert "gnn-a" in got.how and "1/8 GPU each (8 per GPU)" in got.describe()
    # a learner without a peak counts with the estimate; the largest need wins
    mixed = choose_share(
        learners={"gnn-a", "new"}, total_bytes=CARD, peaks={"gnn-a": GIB}, estimate=CARD // 3
    )
    assert mixed.share == 1 / 3 and "no stored peak" in mixed.how
    alone = choose_share(learners={"new"}, total_bytes=CARD, peaks={})
    assert alone.share == share_for(DEFAULT_GPU_MEMORY_ESTIMATE, CARD)


def test_explicit_share_and_cap() -> None:
    half = choose_share(learners={"g"}, total_bytes=CARD, explicit_share=0.5, peaks={"g": CARD})
    assert (half.share, half.cap_bytes) == (0.5, CARD // 2) and "--gpus-per-job" in half.how
    capped = choose_share(learners={"g"}, total_bytes=CARD, explicit_cap=CARD // 5)
    assert (capped.share, capped.cap_bytes) == (1 / 5, CARD // 5)
    both = choose_share(learners={"g"}, total_bytes=None, explicit_share=0.25, explicit_cap=GIB)
    assert (both.share, both.cap_bytes) == (0.25, GIB)


def test_unknown_card_falls_back_and_says_so() -> None:
    got = choose_share(learners={"g"}, total_bytes=None, peaks={"g": GIB}, total_source="no nvidia-smi")
    assert got.share == FALLBACK_SHARE and got.cap_bytes is None
    assert "unknown (no nvidia-smi)" in got.how and "no GPU memory cap" in got.describe()
    explicit = choose_share(learners={"g"}, total_bytes=None, explicit_share=0.5)
    assert (explicit.share, explicit.cap_bytes) == (0.5, None)


def test_nvidia_smi_output_and_cli_values() -> None:
    assert parse_memory_totals("81559\n143771\n") == 81559 << 20  # the smallest card
    assert parse_memory_totals("") is None and parse_memory_totals("No devices were found") is None
    assert gpu_options("1/4", "6GiB", "none", mps=True) == {
        "gpus_per_job": 0.25, "gpu_memory_per_job": 6 * GIB, "gpu_memory_estimate": None, "mps": True,
    }  # fmt: skip
    with pytest.raises(SweepError, match="--gpus-per-job"):
        gpu_options("2", None, "4GiB")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--games", "alpha", "--learners", "noop", "--gpus-per-job", "2"],
        ["graphlog", "sweep", "nowhere", "--setups", "supervised", "--gpus-per-job", "0"],
    ],
)
def test_both_sweep_commands_refuse_a_bad_share_before_ray_starts(argv: list[str], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from orchestrator.cli import app

    out = CliRunner().invoke(app, [*argv, "--store", str(tmp_path / "store")])
    assert out.exit_code != 0 and "--gpus-per-job" in out.output, out.output
    assert not (tmp_path / "store").exists()


def test_reading_the_card_never_imports_torch() -> None:
    """The process that starts jobs must not initialise CUDA: the probe uses nvidia-smi or NVML only."""
    code = (
        "import sys; from orchestrator.scheduling.gpushare import local_gpu_memory; "
        "total, source = local_gpu_memory(); assert 'torch' not in sys.modules, source; print(source)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


def test_the_default_share_reads_the_stored_peaks(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "store")
    store.write([row("a", learner="gnn-x", peak_gpu=2 * GIB), row("b", learner="gnn-x", peak_gpu=GIB),
                 row("c", learner="knn5"), row("d", learner="gnn-y", peak_gpu=8 * GIB)])  # fmt: skip
    assert stored_peaks(store, {"gnn-x", "knn5"}, "peak_gpu") == {"gnn-x": 2 * GIB}
    got = gpu_share(None, store, {"gnn-x"}, SweepOptions("s"))  # a local Ray: this machine's card
    total, source = local_gpu_memory()
    if total is None:  # a CPU machine: the fallback, and the start line says why
        assert got.share == FALLBACK_SHARE and source in got.how
    else:
        assert got.share == share_for(int(2 * GIB * PEAK_HEADROOM), total) and "gnn-x" in got.how


# --- placement on a real Ray with declared GPUs ----------------------------------------------------


class _Lines(SilentProgress):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def starting(self, text: str) -> None:
        self.lines.append(text)


def _max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most spans running at one instant."""
    return max(sum(1 for b, e in spans if b <= start < e) for start, _ in spans)


@pytest.mark.ray
def test_fractional_gpus_run_more_jobs_than_gpus_at_once(tmp_path: Path) -> None:
    ray = pytest.importorskip("ray")
    dataset = write_tiny_dataset(tmp_path / "ds", games=("alpha", "beta"))
    gpus, cpus, share = 2, 4, 0.5
    jobs = build_jobs(Dataset(dataset), str(dataset), None, ["gpusleep3"], budget_s=60.0)[: int(gpus / share)]
    store = ResultStore(tmp_path / "store")
    with loopback_only():
        ray.init(address="local", num_cpus=cpus, num_gpus=gpus, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR)  # fmt: skip
    try:
        shown = _Lines()
        options = SweepOptions(
            "gpushare",
            gpus_per_job=share,
            gpu_memory_per_job=3 * GIB,
            memory_estimate=None,
            flush_seconds=0.5,
        )
        result = run_sweep(jobs, store, options, shown)
    finally:
        ray.shutdown()
    assert result.statuses == {"ok": len(jobs)}, result.failures
    assert any(f"{format_share(share)} GPU each" in line and "--gpus-per-job" in line for line in shown.lines)
    seen = [
        re.fullmatch(r"gpus=(\S+) cap=(\S+) began=(\S+) ended=(\S+) pid=\d+", d)
        for d in store.read()["description"].to_pylist()
    ]
    assert all(seen), seen
    ids = [m.group(1) for m in seen if m]
    assert all(len(i.split(",")) == 1 for i in ids), ids  # each actor holds one GPU id
    assert set(ids) == {str(g) for g in range(gpus)}  # and both GPUs are used
    assert {m.group(2) for m in seen if m} == {str(3 * GIB)}  # the cap reached every job's process
    spans = [(float(m.group(3)), float(m.group(4))) for m in seen if m]
    assert _max_overlap(spans) > gpus  # with one GPU per job at most 2 could run at once
