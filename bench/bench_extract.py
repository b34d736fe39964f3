"""Bench: deriving the legal, goal and terminal atoms of every distinct state met (the generator's
``extract``), one `evaluate` per state (the path before: a batch of one, plus the ``next`` phase)
against `state_atoms` in batches of `tasks.generate.STATE_BATCH`, on the same states, with the
answers compared. Both read the state phase through one function; that the atoms are the game's is
checked against clingo by tests/tasks/gdl/test_gdl_demand.py and `orch games check`.

    python bench/bench_extract.py                                  # a few GGP rulesheets
    python bench/bench_extract.py --games amazons,3pttc --episodes 20 --json

Prints one row per game: states, seconds each way, the speed-up, and whether every answer agreed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import SHARED, print_table  # noqa: E402
from tasks.generate import STATE_BATCH, _read_game  # noqa: E402

RULESHEETS = SHARED / "ggp" / "rulesheets"


def bench_game(name: str, episodes: int, steps: int) -> dict:
    game, _ = _read_game(RULESHEETS / f"{name}.kif")
    engine = game.play_engine()
    states: dict[bytes, object] = {}
    for trace in engine.playouts(episodes, steps, seed=0):
        for state in trace.states:
            states.setdefault(state.tobytes(), state)
    vectors = list(states.values())
    t = time.perf_counter()
    before = [engine.evaluate(engine.state_fluents(s)) for s in vectors]
    one_by_one = time.perf_counter() - t
    t = time.perf_counter()
    after = []
    for i in range(0, len(vectors), STATE_BATCH):
        after += engine.state_atoms(vectors[i : i + STATE_BATCH])
    batched = time.perf_counter() - t
    agree = all(
        {k: b[k] for k in ("legal", "goal", "terminal")} == a for a, b in zip(after, before, strict=True)
    )
    return {
        "game": name, "engine": engine.kind, "states": len(vectors), "evaluate_s": round(one_by_one, 2),
        "state_atoms_s": round(batched, 2), "speedup": round(one_by_one / max(batched, 1e-9), 1), "agree": agree,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default="3pttc,CephalopodMicro,chinesecheckers2,amazons,mummymaze1p")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [bench_game(g, args.episodes, args.steps) for g in args.games.split(",")]
    print_table(
        rows, args.json, title=f"extract: evaluate per state vs state_atoms ({args.episodes} episodes)"
    )
    sys.exit(0 if all(r["agree"] for r in rows) else 1)


if __name__ == "__main__":
    main()
