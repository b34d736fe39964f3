"""``--mps``: a private MPS control daemon for a local sweep (orchestrator/scheduling/mps.py).

CI has no NVIDIA driver, so these tests put a stand-in ``nvidia-cuda-mps-control`` on PATH that
speaks the part of its interface orch uses: ``-f`` runs the daemon in the foreground and creates
``$CUDA_MPS_PIPE_DIRECTORY/control``; run without arguments it reads commands on stdin (``quit``).
What is checked is orch's side: the environment a local Ray's workers see, the daemon's lifetime
(stopped after the sweep, killed with a killed driver), and the errors. The real daemon is run by
``bench/gpu_check.sh`` on a GPU machine (an ``orch graphlog sweep --mps``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from orchestrator.scheduling.mps import LOG_ENV, PIPE_ENV, MpsError, mps_daemon, running_daemon, sharing_note

FAKE_CONTROL = """\
#!/usr/bin/env bash
# stand-in for nvidia-cuda-mps-control: -f = the daemon, no argument = a client reading commands
pipe=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}
if [ "${1:-}" = "-f" ]; then
    echo $$ > "$pipe/daemon.pid"; touch "$pipe/control"
    while [ ! -e "$pipe/quit" ]; do sleep 0.05; done
    rm -f "$pipe/control"; exit 0
fi
read -r cmd; [ "$cmd" = quit ] && touch "$pipe/quit"
"""


@pytest.fixture
def fake_control(tmp_path, monkeypatch):
    """A stand-in control binary first on PATH, and no MPS daemon in the environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    control = bin_dir / "nvidia-cuda-mps-control"
    control.write_text(FAKE_CONTROL)
    control.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv(PIPE_ENV, str(tmp_path / "no-daemon-here"))
    monkeypatch.delenv(LOG_ENV, raising=False)
    return control


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_off_does_nothing(monkeypatch):
    monkeypatch.delenv(PIPE_ENV, raising=False)
    with mps_daemon(False) as line:
        assert line is None
        assert PIPE_ENV not in os.environ


def test_private_daemon_lives_for_the_sweep_and_sets_the_environment(fake_control):
    before = os.environ[PIPE_ENV]
    with mps_daemon(True) as line:
        pipe = Path(os.environ[PIPE_ENV])
        assert "private daemon" in line and str(pipe) in line
        assert pipe.name == "pipe" and pipe.parent.name.startswith("orch-mps-")
        assert Path(os.environ[LOG_ENV]).is_dir()
        assert running_daemon() == pipe
        pid = int((pipe / "daemon.pid").read_text())
        assert _alive(pid)
    assert not _alive(pid)  # told to quit (or killed) and reaped
    assert not pipe.parent.exists()  # its folders removed
    assert os.environ[PIPE_ENV] == before and LOG_ENV not in os.environ


def test_a_running_daemon_is_used_as_it_is(fake_control, tmp_path, monkeypatch):
    pipe = tmp_path / "node-mps"
    pipe.mkdir()
    (pipe / "control").touch()
    monkeypatch.setenv(PIPE_ENV, str(pipe))
    with mps_daemon(True) as line:
        assert line == f"MPS: the running daemon at {pipe}"
        assert os.environ[PIPE_ENV] == str(pipe)
    assert (pipe / "control").exists()  # not ours: left alone


def test_errors_name_the_cause(fake_control, tmp_path, monkeypatch):
    with pytest.raises(MpsError, match="local Ray only"), mps_daemon(True, local=False):
        pass
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(MpsError, match="nvidia-cuda-mps-control is not on PATH"), mps_daemon(True):
        pass


def test_a_daemon_that_exits_at_once_is_an_error(fake_control):
    fake_control.write_text("#!/usr/bin/env bash\nexit 3\n")
    with pytest.raises(MpsError, match="exited with 3"), mps_daemon(True):
        pass


DRIVER = """
import os, sys, time
import ray
from orchestrator.scheduling.mps import PIPE_ENV, mps_daemon
from orchestrator.scheduling.raysession import local_ray

with mps_daemon(True), local_ray(num_cpus=1) as r:
    seen = r.get(r.remote(lambda: os.environ.get(PIPE_ENV)).remote())
    print("worker", seen, flush=True)
    print("driver", os.environ[PIPE_ENV], flush=True)
    if sys.argv[1] == "hang":
        time.sleep(600)
"""


def _driver(mode: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(DRIVER), mode], env=env,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip


def test_local_ray_workers_reach_the_daemon(fake_control):
    out, _ = _driver("end").communicate(timeout=120)
    worker = next(line.split()[1] for line in out.splitlines() if line.startswith("worker"))
    driver = next(line.split()[1] for line in out.splitlines() if line.startswith("driver"))
    assert worker == driver and "orch-mps-" in worker
    assert not Path(worker).exists()


def test_the_daemon_dies_with_a_killed_driver(fake_control):
    proc = _driver("hang")
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("driver"):
            pipe = Path(line.split()[1])
            break
    pid = int((pipe / "daemon.pid").read_text())
    assert _alive(pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    end = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.1)
    assert not _alive(pid)
    shutil.rmtree(pipe.parent, ignore_errors=True)  # a killed driver cannot remove its folders


def test_the_start_output_says_when_jobs_sharing_a_gpu_will_take_turns(fake_control, tmp_path, monkeypatch):
    note = sharing_note(8, mps=False, local=True)
    assert "take turns" in note and "--mps" in note
    assert sharing_note(1, mps=False, local=True) == ""  # one job per GPU: nothing to share
    assert sharing_note(8, mps=True, local=True) == ""
    assert sharing_note(8, mps=False, local=False) == ""  # a cluster's nodes: not visible from here
    pipe = tmp_path / "node-mps"
    pipe.mkdir()
    (pipe / "control").touch()
    monkeypatch.setenv(PIPE_ENV, str(pipe))
    assert sharing_note(8, mps=False, local=True) == ""  # the node's daemon serves them
