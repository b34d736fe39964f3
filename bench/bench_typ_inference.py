"""Inferred type signatures against the published `.typ` of the shared IGGP games.

    python bench/bench_typ_inference.py [--ground-seconds 60] [--json]

For each game with GDL and a published ``.typ``, the signature is inferred from the grounded
GDL (`tasks.gdl.types`) and ``ground(Σ, target)`` (the ``atoms:`` sections) is compared for each
target with the published one. Prints SAME or the published-only / inferred-only atoms
(docs/gdl.md explains the kinds of difference).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import iggp_dir  # noqa: E402
from tasks.gdl import Game  # noqa: E402
from tasks.gdl.types import infer_signature  # noqa: E402
from tasks.signature import parse_typ  # noqa: E402

TARGETS = ("legal", "next", "goal", "terminal")


def compare(gdl: Path, typ: Path, ground_seconds: float) -> str | list[str]:
    """ "same", or one line per differing target (or why the game could not be compared)."""
    try:
        game = Game.from_file(gdl)
        engine = game.engine(ground_seconds=ground_seconds)
    except Exception as e:  # noqa: BLE001 - reported per game
        return [f"not compared: {str(e).splitlines()[0]}"]
    inferred, published = infer_signature(game.rules, engine.ground.atoms, str(gdl)), parse_typ(typ)
    diffs = []
    for t in TARGETS:
        try:
            a, b = set(published.ground(t)), set(inferred.ground(t))
        except KeyError as e:
            diffs.append(f"{t}: {e}")
            continue
        if a != b:
            diffs.append(
                f"{t}: published-only {len(a - b)} e.g. {sorted(a - b)[:2]}, "
                f"inferred-only {len(b - a)} e.g. {sorted(b - a)[:2]}"
            )
    return diffs or "same"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ground-seconds", type=float, default=60.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    root = iggp_dir()
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for typ in sorted((root / "types").glob("*.typ")):
            gdl = root / "games" / f"{typ.stem}.txt"
            if gdl.exists():
                out[typ.stem] = compare(gdl, typ, a.ground_seconds)
                if not a.json:
                    print(typ.stem, "SAME" if out[typ.stem] == "same" else "; ".join(out[typ.stem]))
    same = sum(v == "same" for v in out.values())
    if a.json:
        print(json.dumps({"same": same, "compared": len(out), "games": out}, indent=2))
    else:
        print(f"{same} of {len(out)} signatures give the same atoms: sections")


if __name__ == "__main__":
    main()
