"""Checks that a forked child dies with its parent (shared by the grounding and per-state tests)."""

from __future__ import annotations

import os
import signal
import subprocess


def assert_children_die_with_parent(parent: subprocess.Popen, kids: list, what: str) -> None:
    """SIGKILL ``parent`` and check that each of its ``kids`` (psutil processes) dies within 10 s.

    A survivor is killed before the assertion fails, so a failing test leaves nothing running.
    """
    import psutil

    assert kids, f"the {what} never started"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    _, alive = psutil.wait_procs(kids, timeout=10)
    for p in alive:
        p.kill()
    assert not alive, f"{what} {alive} outlived its killed parent"
