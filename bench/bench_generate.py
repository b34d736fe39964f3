"""Time Algorithm 1 on each bundled game, and the oracle check over the published games.

    python bench/bench_generate.py                      # 1000 episodes x 100 steps, all shared games
    python bench/bench_generate.py --episodes 100 --games tictactoe,minimal_decay --json

Table 1: per bundled game, generation time with the distinct states/transitions it produced.
Table 2: per published game, the time of ``orch games check`` (check_game) and its verdict.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import iggp_dir, peak_rss_mb, print_table  # noqa: E402
from tasks import bundled  # noqa: E402
from tasks.generate import generate_game  # noqa: E402
from tasks.iggp import Dataset  # noqa: E402
from tasks.oracle import check_game  # noqa: E402


def bench_generation(episodes: int, steps: int, seed: int) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as out:
        for name in bundled.games():
            start = time.perf_counter()
            g = generate_game(
                bundled.game_file(name), bundled.types_file(name), Path(out), episodes, steps, seed
            )
            rows.append(
                {
                    "game": name,
                    "episodes": episodes,
                    "steps": g.steps,
                    "states": g.distinct_states,
                    "transitions": g.distinct_transitions,
                    "train/val/test (legal)": "/".join(
                        str(g.counts["legal"][s]) for s in ("train", "validate", "test")
                    ),
                    "seconds": time.perf_counter() - start,
                }
            )
    return rows


def bench_check(games: list[str] | None) -> list[dict]:
    ds = Dataset(iggp_dir())
    rows = []
    for game in games or ds.games():
        start = time.perf_counter()
        r = check_game(ds, game)
        counts = r.counts().values()
        rows.append(
            {
                "game": game,
                "status": r.status,
                "examples": sum(c["examples"] for c in counts),
                "agree": sum(c["agree"] for c in counts),
                "seconds": time.perf_counter() - start,
            }
        )
    rows.append(
        {
            "game": "TOTAL",
            "status": "",
            "examples": sum(r["examples"] for r in rows),
            "agree": sum(r["agree"] for r in rows),
            "seconds": sum(r["seconds"] for r in rows),
        }
    )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--games", help="comma-separated published games to check (default: all)")
    ap.add_argument("--skip-check", action="store_true", help="only time generation")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    print_table(
        bench_generation(args.episodes, args.steps, args.seed),
        args.json,
        f"generation of the bundled games ({args.episodes} episodes x at most {args.steps} steps)",
    )
    if not args.skip_check:
        games = args.games.split(",") if args.games else None
        print_table(bench_check(games), args.json, "oracle check of the published games (orch games check)")
    if not args.json:
        print(f"\npeak RSS {peak_rss_mb():.0f} MiB")


if __name__ == "__main__":
    main()
