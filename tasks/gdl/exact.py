"""One-off clingo solves of a GDL program on one state: the exact, engine-free evaluation.

Used by `tasks.gdl.engine.Engine.evaluate` (as its fallback), `tasks.gdl.game.Game.evaluate` and
the plain clingo engine (`tasks.gdl.clingo_engine`); it sits below all of them so that none imports another to get it.
"""

from __future__ import annotations

import clingo

from tasks.gdl.terms import parse_ground, symbol_text, to_symbol

_DERIVED = ("legal", "goal", "terminal", "next")


def solve_once(asp: str, facts: list[str]) -> set[str]:
    """The derived legal/goal/terminal/next atoms of ``asp`` plus the ground ``facts`` (GDL text)."""
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], asp + "".join(f"{t}.\n" for t in _asp_terms(facts)))
    ctl.ground([("base", [])])
    derived: set[str] = set()

    def on_model(m: clingo.Model) -> None:
        derived.update(symbol_text(s) for s in m.symbols(atoms=True) if s.name in _DERIVED)

    ctl.solve(on_model=on_model)
    return derived


def evaluate_by_solving(asp: str, fluents: list[str], does: dict[str, str] | None) -> dict[str, list[str]]:
    """`tasks.gdl.engine.Engine.evaluate` by two clingo solves over just this state.

    legal/goal/terminal come from the state alone and next from the state plus the moves, as
    in the engines. Grounding only this state's facts is cheap even for games whose full
    grounding is too big to compile.
    """
    state = [f"true({f})" for f in fluents]
    out: dict[str, list[str]] = {"legal": [], "goal": [], "terminal": [], "next": []}
    for a in solve_once(asp, state):
        name = a.split("(", 1)[0]
        if name in ("legal", "goal", "terminal"):
            out[name].append(a)
    moves = [f"does({r},{m})" for r, m in (does or {}).items()]
    out["next"] = [a for a in solve_once(asp, state + moves) if a.startswith("next(")]
    return {k: sorted(x) for k, x in out.items()}


def _asp_terms(texts: list[str]) -> list[str]:
    """GDL ground-term texts as clingo source (strings quoted where needed)."""
    return [str(to_symbol(parse_ground(t))) for t in texts]
