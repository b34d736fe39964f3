"""NVIDIA MPS for a local sweep: the GPU jobs' kernels run side by side on a card, not in turns.

Why: jobs in separate processes on one GPU are time-sliced, one CUDA context at a time. A GNN step
at the paper's batch size (32 graphs) keeps a small part of an H200 busy, so on one H200 eight
gat-egat jobs at once trained 11,535 graphs/s in all, what one job trains alone, and 38,935 under
MPS (docs/benchmarks.md, "GPU"). MPS (the Multi-Process Service) funnels the processes' work
through one server, so their kernels overlap.

``orch run --mps`` and ``orch graphlog sweep --mps`` start a private MPS control daemon for the
sweep's local Ray: its own pipe and log folders (never the node's default ``/tmp/nvidia-mps``), in
the environment of Ray and so of every worker and job child; it dies with the driver, and is told
to quit, then killed with its process group, when the sweep ends. A daemon that already runs (the
node's, or one named by ``CUDA_MPS_PIPE_DIRECTORY``) is used as it is. On a cluster the GPU nodes
start their own (``cluster.yaml``); ``--mps`` is for a local Ray only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from orchestrator.scheduling.raysession import SchedulerError
from procs.child import die_with_parent, kill_group

CONTROL = "nvidia-cuda-mps-control"
PIPE_ENV, LOG_ENV = "CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY"
DEFAULT_PIPE = Path("/tmp/nvidia-mps")
START_TIMEOUT_S = 15.0


class MpsError(SchedulerError):
    """MPS was asked for and cannot be had (no control binary, a cluster address, a daemon that did
    not come up); the message says which."""


def running_daemon() -> Path | None:
    """The pipe folder of an MPS control daemon this process's CUDA clients would reach, if any."""
    pipe = Path(os.environ.get(PIPE_ENV) or DEFAULT_PIPE)
    return pipe if (pipe / "control").exists() else None


def sharing_note(jobs_per_gpu: int, mps: bool, local: bool) -> str:
    """What the sweep's start output adds about MPS: on a local Ray whose GPU jobs share a card
    with no MPS daemon, that they will take turns, and the flag that changes it ("" otherwise; on
    a cluster the driver cannot see the nodes' daemons)."""
    if jobs_per_gpu <= 1 or mps or not local or running_daemon() is not None:
        return ""
    return "; no MPS daemon, so jobs on one GPU take turns (--mps runs them side by side)"


@contextmanager
def mps_daemon(enabled: bool, local: bool = True) -> Iterator[str | None]:
    """With ``enabled``, an MPS control daemon for the duration (see the module docstring); yields
    a line saying which (None when not enabled). Sets :data:`PIPE_ENV` and :data:`LOG_ENV` in this
    process's environment while it runs, so a local Ray started inside inherits them."""
    if not enabled:
        yield None
        return
    if not local:
        raise MpsError("--mps starts a daemon for a local Ray only; on a cluster, start MPS on the GPU nodes")
    existing = running_daemon()
    if existing is not None:
        yield f"MPS: the running daemon at {existing}"
        return
    binary = shutil.which(CONTROL)
    if binary is None:
        raise MpsError(f"--mps: {CONTROL} is not on PATH (NVIDIA's driver utilities); leave --mps out")
    root = Path(tempfile.mkdtemp(prefix="orch-mps-"))
    pipe, log = root / "pipe", root / "log"
    pipe.mkdir()
    log.mkdir()
    env = {**os.environ, PIPE_ENV: str(pipe), LOG_ENV: str(log)}
    parent = os.getpid()
    daemon = subprocess.Popen(  # -f: in the foreground, so it is our child and dies with us
        [binary, "-f"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=lambda: die_with_parent(parent),
    )  # fmt: skip
    saved = {name: os.environ.get(name) for name in (PIPE_ENV, LOG_ENV)}
    try:
        _wait_until_up(daemon, pipe, log)
        os.environ.update({PIPE_ENV: str(pipe), LOG_ENV: str(log)})
        yield f"MPS: a private daemon for this sweep (pipe {pipe}, logs {log})"
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _stop(binary, daemon, env)
        shutil.rmtree(root, ignore_errors=True)


def _wait_until_up(daemon: subprocess.Popen, pipe: Path, log: Path) -> None:
    """Until the daemon's control socket exists; an MpsError with its log if it exits or hangs."""
    end = time.monotonic() + START_TIMEOUT_S
    while not (pipe / "control").exists():
        if daemon.poll() is not None or time.monotonic() > end:
            what = f"exited with {daemon.returncode}" if daemon.returncode is not None else "did not start"
            tail = _log_tail(log)
            raise MpsError(
                f"--mps: {CONTROL} {what} within {START_TIMEOUT_S:g} s" + (f": {tail}" if tail else "")
            )
        time.sleep(0.05)


def _stop(binary: str, daemon: subprocess.Popen, env: dict[str, str]) -> None:
    """Ask the daemon to quit (it stops its server), then kill its group and reap it."""
    if daemon.poll() is None:
        try:
            subprocess.run([binary], input="quit\n", text=True, env=env, timeout=10, capture_output=True)
            daemon.wait(timeout=10)
        except (OSError, subprocess.SubprocessError):
            pass
    kill_group(daemon.pid)
    try:
        daemon.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _log_tail(log: Path, lines: int = 5) -> str:
    """The last lines of the daemon's control log (why it did not start), one line."""
    try:
        text = (log / "control.log").read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])
