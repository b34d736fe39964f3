"""Tie a forked child's life to its parent's, so that a killed parent leaves nothing running.

A grounding child (`tasks.gdl.ground`) can hold gigabytes; when a supervisor kills its parent
(a per-game time limit, a job budget), the child must go too. On Linux the child asks the kernel
for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing as mp
import os
import signal
import sys
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None = None) -> bool:
    """Call first thing in a forked child: SIGKILL it when its parent exits. True if armed.

    ``parent_pid`` (default: the current parent) closes the race where the parent died before
    the call: then the child exits at once.
    """
    if not sys.platform.startswith("linux"):
        return False
    expected = os.getppid() if parent_pid is None else parent_pid
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except OSError:
        return False
    if os.getppid() != expected:
        os._exit(1)
    return True


def fork_child(
    target: Callable[..., None], args: tuple, duplex: bool
) -> tuple[BaseProcess, Connection] | None:
    """Start ``target(conn, *args, parent_pid)`` in a forked daemonic child, which should call
    `die_with_parent` first; return the process and the parent's end of the pipe (its reading
    end when not ``duplex``). None where this process may not fork (no ``fork`` start method, or
    a daemonic worker, which may not have children): the caller then works in-process, unbounded.
    """
    try:
        ctx = mp.get_context("fork")
    except ValueError:
        return None
    if mp.current_process().daemon:
        return None
    parent, child = ctx.Pipe(duplex=duplex)
    proc = ctx.Process(target=target, args=(child, *args, os.getpid()), daemon=True)
    proc.start()
    child.close()
    return proc, parent
