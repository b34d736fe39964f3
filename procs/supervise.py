"""Supervised children: run items one after another in a child that can always be killed.

Generic (nothing here knows about jobs, learners or Ray); :mod:`orchestrator.scheduling.worker` builds the job
functions on top. Why children (started by :mod:`procs.child`):

* A hard deadline needs a process that can be killed whatever it is doing (a clingo solve, a C
  extension ignoring signals). Killing the child costs only that item; the parent (a Ray actor with
  its cache of loaded tasks) lives on, and the next item gets a fresh child.
* A forked child (``start_method="fork"``, the default) is forked *after* the parent loaded its
  data, so it sees that data for free (copy-on-write). A GPU job starts in a spawned child
  (``start_method="spawn"``): a fork of a worker cannot be trusted with CUDA (:mod:`procs.cuda`), and
  its work must then pickle.
* Memory is capped on **resident** memory, by a watchdog in the parent: every
  :data:`SAMPLE_S` it checks the proportional resident memory (PSS) of the child and all its
  descendants (:mod:`procs.memory`: a cheap RSS bound each time, the exact PSS when the bound
  says it matters and once a second for the peak), less that sum when the item started (pages
  shared copy-on-write with the parent, such as a loaded task, are the worker's, not the job's),
  and kills the child's process group when that passes the cap (the outcome is ``oom``, with the
  peak seen). Peaks are measured the same way with or without a cap.
  An address-space limit (``RLIMIT_AS``) would not do: it refuses allocations a program reserves
  but never touches (CUDA, some allocators) and lets memory used by grandchildren through. The
  watchdog can overshoot by what the child allocates within one sample interval.
* GPU memory is capped inside the child, by torch's allocator (``gpu_memory_bytes``, see
  :mod:`procs.cuda`): running out is the item's ``oom``; each item's GPU peak comes back with it.

The child and the parent talk over a :class:`~procs.channel.Channel` in pickled messages, each a
named type: :class:`Start` and :class:`End` frame each item, and the work sends its own message types
(for instance each improving model) through the ``send`` function it is given.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from procs.channel import Channel
from procs.child import kill_group, start_child
from procs.cuda import (
    apply_gpu_memory_cap,
    gpu_oom_message,
    gpu_peak,
    gpu_used,
    is_gpu_oom,
    reset_gpu_peak,
)
from procs.env import GPU_MEMORY_CAP_ENV, JOB_PROCESS_ENV, MEMORY_CAP_ENV
from procs.memory import MemorySampler, process_rss

__all__ = [
    "GPU_MEMORY_CAP_ENV", "JOB_PROCESS_ENV", "MEMORY_CAP_ENV", "End", "Outcome", "Send", "Start", "Work",
    "run_one", "run_supervised", "signal_name",
]  # fmt: skip

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
    (or the traceback); ``peak_rss`` the child's resident high-water mark during the item;
    ``peak_gpu`` the GPU memory torch allocated at most during the item (0 without CUDA); ``gpu`` the
    name of the GPU the child computes on (None: it has not used CUDA)."""

    item: int
    kind: str
    payload: Any
    peak_rss: int
    at: float
    peak_gpu: int = 0
    gpu: str | None = None


Send = Callable[[Any], None]
Work = Callable[[int, Send], tuple[str, Any]]
"""``work(i, send)`` does item i and returns (kind, payload). A work object may also have
``prepare(i)``: called in the child before item i's deadline starts (see `_warm_up`)."""
"""``work(i, send)`` does item i in the child and returns (kind, payload); ``send`` streams messages.
Spawned children get it pickled: then it must be a top-level function or a picklable object."""


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
    peak_gpu: int = 0
    """Peak GPU bytes torch allocated in the child during the item (0 when it used no GPU)."""
    gpu: str | None = None
    """The name of the GPU the child computed on (None: it used no GPU, or died before saying)."""

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


# --- processes -----------------------------------------------------------------------------------


def _oom_like(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or "bad_alloc" in str(exc) or "Cannot allocate memory" in str(exc)


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


def _item(work: Work, i: int, send: Send) -> tuple[str, Any]:
    """Item ``i`` in the child: (kind, payload); an exception is an ``error`` (or ``oom``) with its traceback."""
    try:
        apply_gpu_memory_cap()
        reset_gpu_peak()
        return work(i, send)
    except BaseException as exc:
        text = traceback.format_exc()
        if is_gpu_oom(exc):
            return "oom", gpu_oom_message(text)
        return ("oom" if _oom_like(exc) else "error"), text


def _warm_up(work: Work, i: int) -> str | None:
    """Run the work's optional ``prepare(i)`` before item i's clock starts (imports, building the
    learner: a warm-up that is not the item's to pay for; bounded by the idle guard, not the
    item's deadline). The traceback when it fails, else None."""
    prepare = getattr(work, "prepare", None)
    if prepare is None:
        return None
    try:
        prepare(i)
    except Exception:
        return traceback.format_exc()
    return None


def _child_loop(channel: Channel, work: Work, start: int, n: int) -> None:
    """The child's body: items ``start``..n-1, each framed by Start and End on the channel."""
    for i in range(start, n):
        failed = _warm_up(work, i)
        channel.send(Start(i, time.monotonic()))
        _reset_peak_rss()
        kind, payload = ("error", failed) if failed else _item(work, i, channel.send)
        channel.send(End(i, kind, payload, _peak_rss(), time.monotonic(), gpu_peak(), gpu_used()))
        if kind == "oom":
            return  # the heap may be in a bad state: the next item gets a fresh child


def _child_env(memory_bytes: int | None, gpu_memory_bytes: int | None) -> dict[str, str]:
    env = {JOB_PROCESS_ENV: str(os.getpid())}
    if memory_bytes is not None:
        env[MEMORY_CAP_ENV] = str(memory_bytes)
    if gpu_memory_bytes is not None:
        env[GPU_MEMORY_CAP_ENV] = str(gpu_memory_bytes)
    return env


@dataclass
class _Watch:
    """What the parent knows of the child's current item while it runs."""

    # the child tree's memory beyond what it held when its current item started (pages shared
    # copy-on-write with this process, such as a loaded task, are not the item's): base and peak
    memory: MemorySampler
    current: int | None = None
    began: float = field(default_factory=time.monotonic)
    began_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    base_rss: int = 0  # the child's own RSS at the item's start, the base of its kernel VmHWM
    timed_out: bool = False
    over: bool = False


def _supervise_child(
    pid: int, channel: Channel, watch: _Watch, outcomes: dict[int, Outcome], seconds_for: Callable[[int], float],
    memory_bytes: int | None, on_message: Callable[[Any], None],
) -> None:  # fmt: skip
    """Follow the child's messages until it ends, is past its deadline or over the memory cap."""
    deadline = watch.began + _IDLE_GUARD_S
    while not channel.eof:
        wake = deadline if memory_bytes is None else min(deadline, time.monotonic() + SAMPLE_S)
        messages = channel.read(wake)
        if memory_bytes is not None and watch.current is not None:
            watch.over = watch.memory.over_cap()
            if watch.over:
                return
        if messages is None:
            if time.monotonic() < deadline:
                continue
            watch.timed_out = True
            return
        for m in messages:
            if isinstance(m, Start):
                # the child's own clock: the deadline does not slip when this process lags
                watch.memory.restart()
                watch.current, watch.began, watch.base_rss = m.item, m.at, process_rss(pid)
                watch.began_at = _now() - timedelta(seconds=time.monotonic() - m.at)
                deadline = m.at + seconds_for(m.item)
                on_message(m)  # the caller may want to know that item i started
            elif isinstance(m, End):
                own = max(m.peak_rss - watch.base_rss, watch.memory.peak, 0)
                outcomes[m.item] = Outcome(
                    m.kind,
                    m.payload,
                    m.at - watch.began,
                    own,
                    None,
                    watch.began_at,
                    peak_gpu=m.peak_gpu,
                    gpu=m.gpu,
                )
                watch.current, deadline = None, time.monotonic() + _IDLE_GUARD_S
            else:
                on_message(m)


def _cut_short(watch: _Watch, memory_bytes: int | None, sig: int | None, maxrss: int) -> Outcome:
    """The outcome of the item a child was running when it was killed or died."""
    seconds = time.monotonic() - watch.began
    if watch.over:
        why = (f"resident memory reached {watch.memory.peak / 2**20:.0f} MiB, over the cap of "
               f"{(memory_bytes or 0) / 2**20:.0f} MiB (--memory-per-job)")  # fmt: skip
        return Outcome("oom", why, seconds, watch.memory.peak, sig, watch.began_at)
    kind = "timeout" if watch.timed_out else "died"
    return Outcome(
        kind, None, seconds, max(watch.memory.peak, maxrss - watch.memory.base, 0), sig, watch.began_at
    )


def run_supervised(
    n: int, work: Work, seconds_for: Callable[[int], float], memory_bytes: int | None,
    on_message: Callable[[Any], None] = lambda m: None, *, start_method: str = "fork",
    gpu_memory_bytes: int | None = None,
) -> list[Outcome]:  # fmt: skip
    """Run items 0..n-1 one after another in children, each item under its own deadline.

    One child serves many items (a fork costs milliseconds, which would dominate tiny jobs). When an
    item overruns its deadline, or the child's resident memory (with its descendants) passes
    ``memory_bytes``, the child's process group is SIGKILLed and a fresh child carries on with the
    next item; the same happens when a child dies under an item. Messages the work sends go to
    ``on_message``. ``start_method`` is ``fork`` or ``spawn`` (:mod:`procs.child`; with spawn,
    ``work`` must pickle); ``gpu_memory_bytes`` caps the child's GPU memory (:mod:`procs.cuda`).
    """
    outcomes: dict[int, Outcome] = {}
    env = _child_env(memory_bytes, gpu_memory_bytes)
    start = 0
    while start < n:
        child = start_child(_child_loop, (work, start, n), start_method=start_method, env=env)
        watch = _Watch(MemorySampler(child.pid, memory_bytes))
        try:
            _supervise_child(child.pid, child.channel, watch, outcomes, seconds_for, memory_bytes, on_message)
        finally:
            child.channel.close()
            # Grandchildren the work may have left behind go too. Before reaping: until then the
            # child's pid (and so its group id) cannot be reused by anybody else's process.
            kill_group(child.pid)
            child.reap()
        maxrss = child.usage.ru_maxrss * 1024 if child.usage is not None else 0
        if watch.current is not None:
            outcomes[watch.current] = _cut_short(watch, memory_bytes, child.signal, maxrss)
            start = watch.current + 1
        else:
            done_upto = max((i for i in outcomes if i >= start), default=None)
            if done_upto is None:  # the child died before its first item: record it, move on
                outcomes[start] = Outcome(
                    "died", None, 0.0, max(maxrss - watch.memory.base, 0), child.signal, _now()
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
    *,
    start_method: str = "fork",
    gpu_memory_bytes: int | None = None,
) -> Outcome:
    """One item in a supervised child under one deadline (a single job, a generation, ``orch learn``)."""
    (outcome,) = run_supervised(
        1, work, lambda i: seconds, memory_bytes, on_message, start_method=start_method,
        gpu_memory_bytes=gpu_memory_bytes,
    )  # fmt: skip
    return outcome


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def _now() -> datetime:
    return datetime.now(UTC)
