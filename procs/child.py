"""Start one child process, talk to it, kill it, reap it: the only code in orch that forks or spawns.

Every child started here

* runs ``target(channel, *args)`` with its end of a :class:`~procs.channel.Channel`;
* leads its own process group, so :meth:`Child.kill` takes whatever it started too (a clingo
  grounding, a ``subprocess``);
* dies with its parent: it asks Linux for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``),
  then checks that the parent did not die before that took effect (a killed actor or driver leaves
  no orphan solve);
* exits with ``os._exit`` (0, or 70 when ``target`` raised), never running its parent's atexit
  handlers.

The start method is ``fork`` (the default: the child sees the parent's loaded data for free,
copy-on-write, and ``target`` may be any callable) or ``spawn`` (a fresh interpreter: ``target``
and ``args`` must pickle; what GPU jobs use, see :mod:`procs.cuda`). A fork is refused, with
:class:`~procs.cuda.CudaForkError`, in a process that has initialised CUDA.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable

from procs.channel import Channel
from procs.cuda import refuse_fork_after_cuda

START_METHODS = ("fork", "spawn")

PR_SET_PDEATHSIG = 1

_FAILED = 70
"""Exit code of a child whose target raised (EX_SOFTWARE)."""

_SPAWN_BOOT = (
    "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
    "from procs.child import _spawned_main; _spawned_main(int(sys.argv[2]), int(sys.argv[3]))"
)

started_as: str | None = None
"""In a child started here, how it was started (``fork`` or ``spawn``); None in other processes."""


def can_fork() -> bool:
    """Whether this platform forks at all (callers without it work in-process, unbounded)."""
    return hasattr(os, "fork")


def die_with_parent(parent_pid: int) -> bool:
    """Ask Linux to SIGKILL this process when ``parent_pid`` (its parent) dies. True if armed.

    If the parent died before the request took effect, this process exits at once.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)
    return True


def kill_group(pid: int) -> None:
    """SIGKILL process group ``pid`` and process ``pid`` (the group may not exist yet or any more)."""
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Child:
    """A started child: its pid, the parent's end of its channel, and how it ended once reaped."""

    def __init__(self, pid: int, channel: Channel, start_method: str, popen: subprocess.Popen | None = None):
        self.pid, self.channel, self.start_method = pid, channel, start_method
        self._popen = popen
        self.status: int | None = None
        """The wait status once reaped (see :func:`os.waitstatus_to_exitcode`)."""
        self.usage: resource.struct_rusage | None = None

    def _reaped(self, status: int, usage: resource.struct_rusage) -> None:
        self.status, self.usage = status, usage
        if self._popen is not None:  # reaped here: Popen must not wait for it again
            self._popen.returncode = os.waitstatus_to_exitcode(status)

    def poll(self) -> bool:
        """Whether the child has exited (reaps it if so)."""
        if self.status is None:
            pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            if pid:
                self._reaped(status, usage)
        return self.status is not None

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the child to exit on its own; True if it did."""
        end = time.monotonic() + timeout
        while not self.poll():
            if time.monotonic() >= end:
                return False
            time.sleep(0.01)
        return True

    def kill(self) -> None:
        """SIGKILL the child's process group (what it started too); a no-op once it is reaped.

        Until it is reaped its pid, and so its group id, cannot belong to anybody else's process.
        """
        if self.status is None:
            kill_group(self.pid)

    def reap(self) -> int:
        """Wait for the child to exit (kill it first if it should not run on) and return its status."""
        if self.status is None:
            _, status, usage = os.wait4(self.pid, 0)
            self._reaped(status, usage)
        assert self.status is not None
        return self.status

    def close(self) -> None:
        """Kill the child's group, reap it and close the channel: nothing of it is left running."""
        self.kill()
        self.reap()
        self.channel.close()

    @property
    def exitcode(self) -> int | None:
        """As :attr:`multiprocessing.Process.exitcode`: the exit code, or minus the signal; None if running."""
        return None if self.status is None else os.waitstatus_to_exitcode(self.status)

    @property
    def signal(self) -> int | None:
        """The signal that ended the child, None if it exited (or has not been reaped)."""
        if self.status is None or not os.WIFSIGNALED(self.status):
            return None
        return os.WTERMSIG(self.status)


def start_child(
    target: Callable[..., None],
    args: tuple = (),
    *,
    start_method: str = "fork",
    env: dict[str, str] | None = None,
) -> Child:
    """Start ``target(channel, *args)`` in a child (see the module docstring); ``env`` is added to
    the child's environment. Raises CudaForkError for a fork after CUDA, ValueError for a method
    not offered, and pickling errors (in this process) for a spawn of something that does not pickle.
    """
    if start_method == "fork":
        return _fork(target, args, env or {})
    if start_method == "spawn":
        return _spawn(target, args, env or {})
    raise ValueError(f"start method {start_method!r}: expected one of {', '.join(START_METHODS)}")


def _fork(target: Callable[..., None], args: tuple, env: dict[str, str]) -> Child:
    refuse_fork_after_cuda()
    mine, theirs = socket.socketpair()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's atexit handlers
        code = 0
        try:
            mine.close()
            os.setpgid(0, 0)
            _child_setup(parent, env, "fork")
            target(Channel(theirs.detach()), *args)
        except BaseException:
            code = _FAILED
        finally:
            os._exit(code)
    theirs.close()
    try:
        os.setpgid(pid, pid)  # also here: the group exists before this returns, whoever runs first
    except OSError:
        pass
    return Child(pid, Channel(mine.detach()), "fork")


def _spawn(target: Callable[..., None], args: tuple, env: dict[str, str]) -> Child:
    work = pickle.dumps((target, args), protocol=pickle.HIGHEST_PROTOCOL)  # fails here, not in the child
    mine, theirs = socket.socketpair()
    fd = theirs.fileno()
    popen = subprocess.Popen(
        [sys.executable, "-c", _SPAWN_BOOT, json.dumps(sys.path), str(fd), str(os.getpid())],
        pass_fds=(fd,), env={**os.environ, **env}, process_group=0,
    )  # fmt: skip
    theirs.close()
    child = Child(popen.pid, Channel(mine.detach()), "spawn", popen)
    try:
        child.channel.send(work)
    except OSError:  # the child died at start: its reader sees the end of the stream
        pass
    return child


def _child_setup(parent: int, env: dict[str, str], how: str) -> None:
    """First thing in a child: die with the parent, take the environment, default signal handling."""
    global started_as
    die_with_parent(parent)
    os.environ.update(env)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    started_as = how


def _spawned_main(fd: int, parent: int) -> None:  # pragma: no cover - runs in the spawned child
    """The spawned interpreter's entry: read the pickled work from the channel and run it."""
    code = 0
    try:
        _child_setup(parent, {}, "spawn")
        channel = Channel(fd)
        target, args = pickle.loads(channel.recv())
        target(channel, *args)
    except BaseException:
        code = _FAILED
        traceback.print_exc()  # a failure to start (an unpicklable or unimportable work) shows
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
