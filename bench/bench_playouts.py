"""Random playouts per second on one core: the compiled engine beside the plain clingo per-step solve.

    python bench/bench_playouts.py                 # tictactoe, connect4, breakthrough
    python bench/bench_playouts.py --quick --json  # short run, JSON out
    python bench/bench_playouts.py --games tictactoe,breakthrough_small --n 8192

Both engines share one grounding (see tasks/gdl/ground.py). The reference answers each step with
two clingo solves (state: legal/terminal; then next with the chosen moves) after assigning the
fluents and moves as externals; the compiled engine evaluates the same ground program with
bit-parallel numpy over a batch of games. connect4team is not among the shared games; connect4
is the closest.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.gdl import Game, GDLWarning  # noqa: E402


def _iggp_dir() -> Path:
    try:
        from bench.common import iggp_dir  # the project's shared bench helper
    except ImportError:
        try:
            from common import iggp_dir  # run as a script from bench/
        except ImportError:
            return Path(os.environ.get("ORCH_IGGP", "/tmp/iggp"))
    return Path(iggp_dir())


def bench_game(path: Path, n: int, ref_seconds: float, max_steps: int, batch: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GDLWarning)
        game = Game.from_file(path)
    t0 = time.perf_counter()
    eng = game.engine()
    build = time.perf_counter() - t0
    eng.playouts(min(n, batch), max_steps=max_steps, seed=1, batch=batch)  # warm-up
    t0 = time.perf_counter()
    traces = eng.playouts(n, max_steps=max_steps, seed=2, batch=batch)
    fast = time.perf_counter() - t0
    steps = sum(len(t) for t in traces)

    ref = game.clingo_engine()
    done = ref_steps = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < ref_seconds or done == 0:
        (tr,) = ref.playouts(1, max_steps=max_steps, seed=done)
        done += 1
        ref_steps += len(tr)
    slow = time.perf_counter() - t0
    return {
        "game": path.stem,
        "fluents": len(eng.fluents),
        "ground_rules": eng.circuit.n_rules,
        "ground_s": round(eng.ground_seconds, 3),
        "build_s": round(build, 3),
        "mean_len": round(steps / n, 1),
        "compiled_playouts_per_s": round(n / fast, 1),
        "compiled_steps_per_s": round(steps / fast),
        "clingo_playouts_per_s": round(done / slow, 2),
        "clingo_us_per_solve": round(1e6 * slow / ref.solves, 1),
        "speedup": round((n / fast) / (done / slow), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", default="tictactoe,connect4,breakthrough")
    ap.add_argument("--n", type=int, default=4096, help="compiled playouts per game")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--max-steps", type=int, default=100)
    ap.add_argument("--ref-seconds", type=float, default=10.0, help="time given to the clingo reference")
    ap.add_argument("--quick", action="store_true", help="n=1024, 3 s of reference")
    ap.add_argument("--cpu", type=int, default=0, help="pin to this core (-1: no pinning)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.n, args.ref_seconds = 1024, 3.0
    if args.cpu >= 0 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.cpu})
    root = _iggp_dir() / "games"
    rows = [
        bench_game(root / f"{g}.txt", args.n, args.ref_seconds, args.max_steps, args.batch)
        for g in args.games.split(",")
    ]
    if args.json:
        print(json.dumps({"load_avg": os.getloadavg(), "rows": rows}, indent=2))
        return
    cols = list(rows[0])
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    print("  ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True)))
    for r in rows:
        print("  ".join(str(r[c]).rjust(w) for c, w in zip(cols, widths, strict=True)))
    print(f"(one core; load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
