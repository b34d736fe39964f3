"""The GPU-share flags that ``orch run`` and ``orch graphlog sweep`` both take, defined once.

How a share and a cap are chosen is :mod:`orchestrator.scheduling.gpushare`; this module only
spells the flags and turns their text into :class:`~orchestrator.scheduling.scheduler.SweepOptions`
fields.
"""

from __future__ import annotations

from typing import Any

import typer


def gpus_per_job_option() -> Any:
    return typer.Option(
        None,
        "--gpus-per-job",
        help="Share of a GPU per GPU job, e.g. 0.125 or 1/8 (default: sized from the stored GPU memory peaks).",
    )


def gpu_memory_per_job_option() -> Any:
    return typer.Option(
        None,
        "--gpu-memory-per-job",
        help="GPU memory cap per job (e.g. 8GiB; default: its share of the GPU).",
    )


def gpu_memory_estimate_option() -> Any:
    return typer.Option(
        "4GiB",
        "--gpu-memory-estimate",
        help="GPU memory a job needs when the store has no peak of its learner.",
    )


def mps_option() -> Any:
    return typer.Option(
        False,
        "--mps",
        help="Run a private NVIDIA MPS daemon for the local Ray, so GPU jobs sharing a card run side "
        "by side instead of in turns.",
    )


def gpu_options(share: str | None, cap: str | None, estimate: str, mps: bool = False) -> dict:
    """``--gpus-per-job``, ``--gpu-memory-per-job``, ``--gpu-memory-estimate`` and ``--mps`` as
    SweepOptions fields; a bad value is a SweepError naming the flag."""
    from orchestrator.scheduling.gpushare import parse_share
    from orchestrator.scheduling.sweep import SweepError, parse_bytes

    try:
        gpus_per_job = parse_share(share) if share is not None else None
    except ValueError as e:
        raise SweepError(f"--gpus-per-job: {e}") from None
    return {
        "gpus_per_job": gpus_per_job,
        "gpu_memory_per_job": parse_bytes(cap) if cap else None,
        "gpu_memory_estimate": None if estimate.strip().lower() == "none" else parse_bytes(estimate),
        "mps": mps,
    }
