"""Tie a forked child's life to its parent's, so that a killed parent leaves nothing running.

A grounding child (`tasks.gdl.ground`) can hold gigabytes; when a supervisor kills its parent
(a per-game time limit, a job budget), the child must go too. On Linux the child asks the kernel
for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``); elsewhere nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

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
