"""Supervised forked children: run items one after another in a child that can always be killed.

Generic (nothing here knows about jobs, learners or Ray); :mod:`orchestrator.scheduling.worker` builds the job
functions on top. Why forked children:

* A hard deadline needs a process that can be killed whatever it is doing (a clingo solve, a C
  extension ignoring signals). Killing the child costs only that item; the parent (a Ray actor with
  its cache of loaded tasks) lives on, and the next item gets a fresh child.
* A child is forked *after* the parent loaded its data, so it sees that data for free
  (copy-on-write).
* Memory is capped on **resident** memory, by a watchdog in the parent: every
  :data:`SAMPLE_S` it sums the proportional resident memory (PSS) of the child and all its
  descendants, less that sum when the item started (pages shared copy-on-write with the parent,
  such as a loaded task, are the worker's, not the job's), and kills the child's process group
  when that passes the cap (the outcome is ``oom``, with the peak seen). Peaks are measured the
  same way with or without a cap.
  An address-space limit (``RLIMIT_AS``) would not do: it refuses allocations a program reserves
  but never touches (CUDA, some allocators) and lets memory used by grandchildren through. The
  watchdog can overshoot by what the child allocates within one sample interval.

The child and the parent talk over a pipe in length-prefixed pickled messages, each a named type:
:class:`Start` and :class:`End` frame each item, and the work sends its own message types (for
instance each improving model) through the ``send`` function it is given.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import socket
import struct
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

_HEADER = struct.Struct("!Q")

JOB_PROCESS_ENV = "ORCH_JOB_PARENT"
"""Set in every child to the pid of the process that forked it."""

MEMORY_CAP_ENV = "ORCH_MEMORY_CAP"
"""Set in every child to the resident-memory cap in bytes, when there is one (test learners read it)."""

SAMPLE_S = 0.05
"""How often the watchdog samples a capped child's resident memory."""

_IDLE_GUARD_S = 60.0
"""A child between two items runs only our own code; if it hangs that long, something is broken."""


# --- messages ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    """The child began item ``item`` at ``at`` (its CLOCK_MONOTONIC, which is system-wide on Linux)."""

    item: int
    at: float


@dataclass(frozen=True)
class End:
    """The child finished item ``item``: ``kind`` is ok, error or oom; ``payload`` the work's result
    (or the traceback); ``peak_rss`` the child's resident high-water mark during the item."""

    item: int
    kind: str
    payload: Any
    peak_rss: int
    at: float


Send = Callable[[Any], None]
Work = Callable[[int, Send], tuple[str, Any]]
"""``work(i, send)`` does item i in the child and returns (kind, payload); ``send`` streams messages."""


@dataclass
class Outcome:
    """How one item ended: ``kind`` is what the child said (ok, error, oom) or timeout / oom / died."""

    kind: str
    payload: Any
    seconds: float
    peak_rss: int
    """Peak resident bytes of the child and its descendants beyond what it shared with the parent."""
    signal: int | None = None
    began: datetime | None = None
    ended: datetime = field(default_factory=lambda: datetime.now(UTC))

    def died(self) -> tuple[str, str]:
        """(status, reason) for a child that died without saying how its item ended.

        SIGKILL is what the kernel's OOM killer, Ray's memory monitor and a supervisor send: the
        infrastructure took the process, so the status is ``lost`` (retried by the scheduler);
        any other death (a segfault in a solver, say) is the item's own ``error``.
        """
        if self.signal == signal.SIGKILL:
            return "lost", f"the process was killed (SIGKILL) on {socket.gethostname()}"
        why = f"signal {signal_name(self.signal)}" if self.signal else "no result"
        return "error", f"the process died without a result ({why})"

    def last_line(self) -> str:
        """The last line of an error payload (a traceback's message), else the kind."""
        lines = str(self.payload or "").strip().splitlines()
        return lines[-1] if lines else self.kind


# --- the pipe ------------------------------------------------------------------------------------


def _send(fd: int, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


class _Reader:
    """Reads length-prefixed pickled messages from a pipe without ever blocking past a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf, self.eof = fd, bytearray(), False

    def read(self, deadline: float) -> list[Any] | None:
        """Messages that arrived before ``deadline``; None once the deadline passed with nothing new."""
        wait = deadline - time.monotonic()
        if wait <= 0:
            return None
        # select() takes no infinite timeout: an unlimited deadline waits in one-hour slices.
        ready, _, _ = select.select([self.fd], [], [], min(wait, 3600.0))
        if not ready:
            return None
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            self.eof = True
        self.buf += chunk
        out = []
        while len(self.buf) >= _HEADER.size:
            (n,) = _HEADER.unpack_from(self.buf)
            if len(self.buf) < _HEADER.size + n:
                break
            out.append(pickle.loads(bytes(self.buf[_HEADER.size : _HEADER.size + n])))
            del self.buf[: _HEADER.size + n]
        return out


# --- processes -----------------------------------------------------------------------------------


def _fork(body: Callable[[int], None], memory_bytes: int | None) -> tuple[int, int]:
    """Fork a child that runs ``body(write_fd)`` in its own process group; returns (pid, read_fd)."""
    rfd, wfd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's atexit handlers
        code = 0
        try:
            os.close(rfd)
            os.setpgid(0, 0)
            _die_with_parent(parent)
            os.environ[JOB_PROCESS_ENV] = str(parent)
            if memory_bytes is not None:
                os.environ[MEMORY_CAP_ENV] = str(memory_bytes)
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            body(wfd)
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(wfd)
    return pid, rfd


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this child when its parent dies (a killed actor leaves no orphan solve)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _oom_like(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or "bad_alloc" in str(exc) or "Cannot allocate memory" in str(exc)


def tree_memory(pid: int) -> int:
    """Proportional resident bytes (PSS) of process ``pid`` and all its descendants (0 once it is gone).

    PSS, not RSS: a page shared by n processes counts 1/n in each, so the sum over a tree counts it
    once. With RSS, a grandchild sampled between fork and exec (``subprocess``) counted every page
    it shares with the job a second time, and a job holding 120 MiB was once seen at 756 MB.
    Where smaps_rollup cannot be read (not Linux, a process of another user) RSS stands in.
    """
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += _pss(p.pid)
        except OSError:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
    return total


def _pss(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no Pss line for process {pid}")


def _own_rss(pid: int) -> int:
    """The child's own RSS: the base its kernel high-water mark (VmHWM) is measured against."""
    import psutil

    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.Error:
        return 0


def _reset_peak_rss() -> None:
    """Restart the kernel's resident-set high-water mark, so each item of a child gets its own peak."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_rss() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _child_loop(work: Work, start: int, n: int) -> Callable[[int], None]:
    def body(fd: int) -> None:
        def send(message: Any) -> None:
            _send(fd, message)

        for i in range(start, n):
            _send(fd, Start(i, time.monotonic()))
            _reset_peak_rss()
            try:
                kind, payload = work(i, send)
            except BaseException as exc:
                kind, payload = ("oom" if _oom_like(exc) else "error"), traceback.format_exc()
            _send(fd, End(i, kind, payload, _peak_rss(), time.monotonic()))
            if kind == "oom":
                return  # the heap may be in a bad state: the next item gets a fresh child

    return body


def run_supervised(
    n: int, work: Work, seconds_for: Callable[[int], float], memory_bytes: int | None,
    on_message: Callable[[Any], None] = lambda m: None,
) -> list[Outcome]:  # fmt: skip
    """Run items 0..n-1 one after another in forked children, each item under its own deadline.

    One child serves many items (a fork costs milliseconds, which would dominate tiny jobs). When an
    item overruns its deadline, or the child's resident memory (with its descendants) passes
    ``memory_bytes``, the child's process group is SIGKILLed and a fresh child carries on with the
    next item; the same happens when a child dies under an item. Messages the work sends go to
    ``on_message``.
    """
    outcomes: dict[int, Outcome] = {}
    start = 0
    while start < n:
        pid, fd = _fork(_child_loop(work, start, n), memory_bytes)
        # the child's memory when its current item started (pages shared copy-on-write with this
        # process, such as a loaded task): not the item's. PSS for the sampled tree, RSS for VmHWM.
        base, base_rss = 0, 0
        reader, current, began, began_at = _Reader(fd), None, time.monotonic(), _now()
        deadline, timed_out, over, peak = began + _IDLE_GUARD_S, False, False, 0
        try:
            while not reader.eof:
                wake = deadline if memory_bytes is None else min(deadline, time.monotonic() + SAMPLE_S)
                messages = reader.read(wake)
                if memory_bytes is not None and current is not None:
                    peak = max(peak, tree_memory(pid) - base)
                    if peak > memory_bytes:
                        over = True
                        _kill_group(pid)
                        break
                if messages is None:
                    if time.monotonic() < deadline:
                        continue
                    timed_out = True
                    _kill_group(pid)
                    break
                for m in messages:
                    if isinstance(m, Start):
                        # the child's own clock: the deadline does not slip when this process lags
                        current, began, peak = m.item, m.at, 0
                        base, base_rss = tree_memory(pid), _own_rss(pid)
                        began_at = _now() - timedelta(seconds=time.monotonic() - began)
                        deadline = began + seconds_for(current)
                        on_message(m)  # the caller may want to know that item i started
                    elif isinstance(m, End):
                        own = max(m.peak_rss - base_rss, peak, 0)
                        outcomes[m.item] = Outcome(m.kind, m.payload, m.at - began, own, None, began_at)
                        current, deadline = None, time.monotonic() + _IDLE_GUARD_S
                    else:
                        on_message(m)
        finally:
            os.close(fd)
        # Grandchildren the work may have left behind go too. Before reaping: until then the
        # child's pid (and so its group id) cannot be reused by anybody else's process.
        _kill_group(pid)
        _, status, usage = os.wait4(pid, 0)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        if current is not None:
            seconds = time.monotonic() - began
            if over:
                why = (f"resident memory reached {peak / 2**20:.0f} MiB, over the cap of "
                       f"{(memory_bytes or 0) / 2**20:.0f} MiB (--memory-per-job)")  # fmt: skip
                outcomes[current] = Outcome("oom", why, seconds, peak, sig, began_at)
            else:
                kind = "timeout" if timed_out else "died"
                peak = max(peak, usage.ru_maxrss * 1024 - base, 0)
                outcomes[current] = Outcome(kind, None, seconds, peak, sig, began_at)
            start = current + 1
        else:
            done_upto = max((i for i in outcomes if i >= start), default=None)
            if done_upto is None:  # the child died before its first item: record it, move on
                outcomes[start] = Outcome(
                    "died", None, 0.0, max(usage.ru_maxrss * 1024 - base, 0), sig, _now()
                )
                start += 1
            else:
                start = done_upto + 1
    return [outcomes[i] for i in range(n)]


def run_one(
    work: Work,
    seconds: float,
    memory_bytes: int | None = None,
    on_message: Callable[[Any], None] = lambda m: None,
) -> Outcome:
    """One item in a supervised child under one deadline (a single job, a generation, ``orch learn``)."""
    (outcome,) = run_supervised(1, work, lambda i: seconds, memory_bytes, on_message)
    return outcome


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def _now() -> datetime:
    return datetime.now(UTC)
