"""`procs.child`: children that stream messages, lead their process group, die with their parent,
and are never forked from a process that has initialised CUDA. Real processes throughout."""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from lifetime_helpers import assert_children_die_with_parent

from procs.channel import Channel
from procs.child import start_child
from procs.cuda import FORK_REFUSED

ROOT = Path(__file__).resolve().parents[2]
METHODS = ("fork", "spawn")


_MARKS: list[int] = []
"""Set by the test at run time: a forked child sees the mark, a spawned one imports this module afresh."""


def _echo(channel: Channel, words: list[str]) -> None:
    """Sends each word, then how it was started, whether it sees the parent's mark, and its parent."""
    from procs import child

    for word in words:
        channel.send(word)
    channel.send((child.started_as, bool(_MARKS), os.getppid()))


def _fail(channel: Channel) -> None:
    raise RuntimeError("deliberate")


def _grandchild(channel: Channel) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    channel.send(sleeper.pid)
    time.sleep(600)


def _sleep(channel: Channel) -> None:
    channel.send("up")
    time.sleep(600)


def _messages(channel: Channel) -> list:
    out = []
    while True:
        try:
            out.append(channel.recv())
        except EOFError:
            return out


@pytest.mark.parametrize("method", METHODS)
def test_a_child_streams_messages_and_exits(method):
    _MARKS.append(1)
    child = start_child(_echo, (["a", "b"],), start_method=method)
    try:
        got = _messages(child.channel)
        assert child.reap() is not None and child.exitcode == 0
    finally:
        child.close()
    how, marked, parent = got[-1]
    assert got[:-1] == ["a", "b"] and how == method and parent == os.getpid()
    # a forked child shares this process's memory; a spawned one is a fresh interpreter
    assert marked is (method == "fork")


@pytest.mark.parametrize("method", METHODS)
def test_a_failing_target_exits_70(method):
    child = start_child(_fail, start_method=method)
    assert _messages(child.channel) == []
    child.reap()
    child.close()
    assert child.exitcode == 70


def test_spawn_refuses_work_that_does_not_pickle_before_starting_anything():
    before = psutil.Process().children()
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        start_child(lambda channel: None, start_method="spawn")
    assert psutil.Process().children() == before
    with pytest.raises(ValueError, match="start method 'forkserver'"):
        start_child(_fail, start_method="forkserver")


@pytest.mark.parametrize("method", METHODS)
def test_kill_takes_the_whole_process_group(method):
    child = start_child(_grandchild, start_method=method)
    try:
        assert child.channel.poll(30), "the child never reported its grandchild"
        grandchild = psutil.Process(child.channel.recv())
        assert grandchild.is_running()
    finally:
        child.close()
    grandchild.wait(10)  # raises TimeoutExpired if the grandchild outlived the kill
    assert child.signal == signal.SIGKILL


@pytest.mark.parametrize("method", METHODS)
def test_a_killed_parent_leaves_no_child(method):
    script = textwrap.dedent(f"""
        import time
        from procs.child import start_child
        from test_procs_child import _sleep
        child = start_child(_sleep, start_method={method!r})
        child.channel.recv()
        print("ready", flush=True)
        time.sleep(600)
    """)
    path = os.pathsep.join([str(ROOT), str(Path(__file__).parent), str(ROOT / "tests")])
    parent = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": path},
                              stdout=subprocess.PIPE)  # fmt: skip
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == b"ready"
        kids = psutil.Process(parent.pid).children()
        assert len(kids) == 1
        assert_children_die_with_parent(parent, kids, f"{method} child")
    finally:
        if parent.poll() is None:
            parent.kill()


FAKE_TORCH = '''"""A stand-in for torch whose CUDA says it is initialised (the check's input, no GPU needed)."""
class cuda:
    @staticmethod
    def is_initialized():
        return True
'''


def test_a_fork_is_refused_once_cuda_is_initialised(tmp_path):
    """The helper raises the clear error before forking: no child starts, no target runs."""
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(FAKE_TORCH)
    ran = tmp_path / "ran"
    script = textwrap.dedent(f"""
        import psutil, torch
        from procs.child import start_child
        from procs.cuda import CudaForkError, cuda_initialised
        from procs.supervise import run_one
        assert cuda_initialised()
        def target(channel):
            open({str(ran)!r}, "w").close()
        for call in (lambda: start_child(target), lambda: run_one(lambda i, send: ("ok", None), 5.0)):
            try:
                call()
            except CudaForkError as e:
                print(e)
            else:
                print("forked")
        print(len(psutil.Process().children()))
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [FORK_REFUSED, FORK_REFUSED, "0"]
    assert "start_method='spawn'" in FORK_REFUSED
    assert not ran.exists()


def test_the_cuda_check_never_imports_torch():
    script = "import sys\nfrom procs.cuda import cuda_initialised\nprint(cuda_initialised(), 'torch' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr
