"""The watchdog's memory measures (procs/memory.py): the cheap bound, the exact PSS, and how seldom
the costly one is read."""

from __future__ import annotations

import os
import subprocess
import time

from procs.memory import PRECISE_S, MemorySampler, tree_memory, tree_pids, tree_rss


def test_the_tree_holds_grandchildren_and_the_rss_bound_is_above_the_pss():
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(tree_pids(shell.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(tree_pids(shell.pid)) == 3 and tree_pids(shell.pid)[0] == shell.pid
        assert tree_rss(shell.pid) >= tree_memory(shell.pid) > 0
    finally:
        subprocess.run(["pkill", "-P", str(shell.pid)], check=False)
        shell.kill()
        shell.wait()
    assert tree_pids(shell.pid) == [] and tree_memory(shell.pid) == 0


def test_the_pss_is_read_once_per_interval_unless_the_bound_nears_the_cap():
    sampler = MemorySampler(os.getpid(), cap=None)
    sampler.restart()
    assert not sampler.over_cap()
    first = sampler.peak
    held = bytearray(64 * 2**20)  # touched: resident
    assert not sampler.over_cap() and sampler.peak == first  # within PRECISE_S: no new walk
    time.sleep(PRECISE_S + 0.1)
    assert not sampler.over_cap() and sampler.peak >= first + 60 * 2**20
    capped = MemorySampler(os.getpid(), cap=32 * 2**20)
    capped.restart()
    assert not capped.over_cap()  # read now, so the next timed read is PRECISE_S away
    more = bytearray(64 * 2**20)
    assert capped.over_cap()  # but the bound passed the cap: the PSS is read at once, and is over
    del held, more
