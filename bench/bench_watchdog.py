"""What the memory watchdog costs the job it watches: the same supervised job with a memory cap,
under the old watchdog (the exact PSS read every 50 ms) and the current one (procs/memory.py: a
cheap RSS bound every 50 ms, the PSS when the bound nears the cap and once a second), on an idle
machine and beside CPU burners.

The job holds ``--hold`` MiB (the kernel's PSS walk costs in proportion) and then does
allocation-heavy numpy work (each large temporary is an mmap/munmap, which needs the memory-map
lock the PSS walk holds).

    python bench/bench_watchdog.py --hold 2048 --burners 2
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import procs.memory as memory  # noqa: E402
from bench.common import print_table  # noqa: E402
from procs.supervise import run_one  # noqa: E402

BURN = "while True: pass"


def _job(hold_mib: int, rounds: int):
    def work(i, send):
        import numpy as np

        held = np.ones(hold_mib * 2**20 // 8)  # touched: resident
        started = time.perf_counter()
        x = np.arange(2_000_000, dtype=np.float64)
        for _ in range(rounds):
            x = np.sqrt(x * 1.0001 + 1.0) - 0.5  # 16 MB temporaries: mmap/munmap each
        return "ok", (time.perf_counter() - started, float(held[0] + x[0]))

    return work


def _run(hold_mib: int, rounds: int, old: bool) -> tuple[float, float]:
    """(the job's work seconds, the CPU seconds the watching parent spent meanwhile)."""
    saved = memory.PRECISE_S, memory.DUTY
    if old:  # the exact PSS at every 50 ms sample, as before procs/memory.py
        memory.PRECISE_S, memory.DUTY = 0.0, 0.0
    cpu = time.process_time()
    try:
        outcome = run_one(_job(hold_mib, rounds), 3600.0, memory_bytes=64 * 2**30)
    finally:
        memory.PRECISE_S, memory.DUTY = saved
    assert outcome.kind == "ok", outcome
    return outcome.payload[0], time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=int, default=2048, help="MiB the job holds resident")
    parser.add_argument("--rounds", type=int, default=400, help="rounds of numpy work")
    parser.add_argument("--burners", type=int, default=2, help="busy processes in the loaded runs")
    args = parser.parse_args()
    rows = []
    for load in ("idle", f"{args.burners} burners"):
        burners = [] if load == "idle" else [
            subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)
        ]  # fmt: skip
        try:
            old = _run(args.hold, args.rounds, old=True)
            new = _run(args.hold, args.rounds, old=False)
        finally:
            for b in burners:
                b.kill()
                b.wait()
        rows.append({"machine": load, "job s, PSS every 50 ms": f"{old[0]:.1f}",
                     "job s, bound + PSS 1/s": f"{new[0]:.1f}", "speed-up": f"{old[0] / new[0]:.2f}x",
                     "watchdog CPU s, old": f"{old[1]:.2f}", "watchdog CPU s, new": f"{new[1]:.2f}"})  # fmt: skip
    print_table(rows, title=f"job work time under the memory watchdog ({args.hold} MiB held)")


if __name__ == "__main__":
    main()
