"""The watchdog's memory measures (procs/memory.py): the cheap bound, the exact PSS, and how seldom
the costly one is read."""

from __future__ import annotations

import subprocess
import sys
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


ALLOCATOR = """
import sys
held = []
for line in sys.stdin:
    held.append(bytearray(64 * 2**20))  # touched: resident
    print("held", flush=True)
"""


def test_the_pss_is_read_once_per_interval_unless_the_bound_nears_the_cap():
    # a small process of its own: its PSS walk takes a millisecond, so the duty limit is no factor
    child = subprocess.Popen(
        [sys.executable, "-c", ALLOCATOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )

    def allocate() -> None:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "held"
        time.sleep(0.05)

    try:
        sampler = MemorySampler(child.pid, cap=None)
        sampler.restart()
        assert not sampler.over_cap()
        first = sampler.peak
        allocate()
        assert not sampler.over_cap() and sampler.peak == first  # within PRECISE_S: no new walk
        time.sleep(PRECISE_S + 0.1)
        assert not sampler.over_cap() and sampler.peak >= first + 60 * 2**20
        capped = MemorySampler(child.pid, cap=32 * 2**20)
        capped.restart()
        assert not capped.over_cap()  # read now, so the next timed read is PRECISE_S away
        allocate()
        assert capped.over_cap()  # but the bound passed the cap: the PSS is read at once, and is over
    finally:
        child.kill()
        child.wait()
