"""The GGP rulesheet corpus (../shared/ggp/rulesheets): how much plays, how fast, against clingo.

    python bench/bench_gdl_corpus.py                          # whole corpus, 120 s per game
    python bench/bench_gdl_corpus.py --limit 60 --out rows.jsonl
    python bench/bench_gdl_corpus.py --games blocks,amazons --json

Each game is probed in its own child process (`tasks.gdl.probe.probe_isolated`): parse, check,
ground and compile (grounding bounded by --ground-seconds), random playouts, then the compiled
engine cross-checked against a clingo solve on every visited state and joint move. Printed:

* the share of rulesheets that play (``plays`` + ``plays-anyway``), and every other status, and
  how many of them play on the per-state engine (`tasks.gdl.perstate`; their ground+compile time
  includes the whole grounding that exceeded --ground-seconds), and how many of those ground
  demand-driven (`tasks.gdl.demand`: not even the rules without a state grounded in time);
* ground+compile seconds and playouts per second per game (median, p90);
* the compiled engine's speed over the clingo reference per game (states per second on the
  same visited states; median, p90).

The figures depend on machine load (grounding is CPU-bound); say how loaded it was.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.gdl.probe import PLAYS, game_files, probe_isolated, summary  # noqa: E402

SHARED = Path(os.environ.get("ORCH_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=SHARED / "ggp" / "rulesheets")
    ap.add_argument("--games", help="comma-separated rulesheet names (default: all)")
    ap.add_argument("--limit", type=float, default=120.0, help="seconds per game, whole probe")
    ap.add_argument("--ground-seconds", type=float, default=60.0, help="grounding bound per game")
    ap.add_argument("--playouts", type=int, default=5)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--check-states", type=int, default=60)
    ap.add_argument("--out", type=Path, help="write one JSON row per game here")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    a = ap.parse_args()
    files = game_files([a.dir])
    if a.games:
        wanted = set(a.games.split(","))
        files = [f for f in files if f.stem in wanted]
    rows = []
    t0 = time.perf_counter()
    sink = a.out.open("w") if a.out else None
    for i, f in enumerate(files, 1):
        r = probe_isolated(f, a.limit, playouts=a.playouts, max_steps=a.steps, seed=0,
                           ground_seconds=a.ground_seconds, check_states=a.check_states)  # fmt: skip
        rows.append(r)
        print(f"[{i}/{len(files)}] {r.game}: {r.status} {r.seconds:.1f}s {r.reason[:120]}", file=sys.stderr)
        if sink:
            sink.write(json.dumps(r.as_dict()) + "\n")
            sink.flush()
    s = summary(rows)
    s["wall_s"] = time.perf_counter() - t0
    s["not_playing"] = {r.game: f"{r.status}: {r.reason}" for r in rows if r.status not in PLAYS}
    if a.json:
        print(json.dumps(s, indent=2))
        return
    print(f"rulesheets: {s['games']}, play: {s['plays']} ({s['play_share']:.1%}); statuses: {s['statuses']}")
    print(
        f"of those playing, on the per-state engine (whole grounding too big): {s['plays_per_state']}"
        f" ({s['plays_demand_driven']} demand-driven)"
    )
    for key, label in (("ground_s", "ground+compile s"), ("playouts_per_s", "playouts/s"),
                       ("reference_ratio", "compiled/clingo speed")):  # fmt: skip
        med, p90 = s[f"{key}_median"], s[f"{key}_p90"]
        if med is not None:
            print(f"{label}: median {med:.3g}, p90 {p90:.3g}")
    for game, why in s["not_playing"].items():
        print(f"  {game}: {why}")


if __name__ == "__main__":
    main()
