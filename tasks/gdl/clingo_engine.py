"""The plain clingo engine: the reference the compiled engine is checked and benchmarked against.

It grounds the game once with every possible fluent and move as a clingo ``#external`` atom,
then answers each query by assigning the externals and solving (one solve for the state's
legal/goal/terminal, another for ``next`` once the moves are chosen). This is the obvious way to
run GDL on clingo; `tasks.gdl.engine.Engine` replaces the per-step solve with compiled evaluation.
"""

from __future__ import annotations

import time

import clingo
import numpy as np

from tasks.gdl.exact import _DERIVED, _asp_terms, evaluate_by_solving, solve_once
from tasks.gdl.ground import GROUND_SECONDS, GroundGame, ground_game
from tasks.gdl.groundable import Groundable
from tasks.gdl.terms import parse_ground, symbol_text, to_symbol
from tasks.gdl.trace import State, Trace

__all__ = ["ClingoEngine", "evaluate_by_solving", "solve_once"]


def _literal(atoms: clingo.SymbolicAtoms, symbol: clingo.Symbol) -> int:
    """The solver literal of a ground atom that the program declares (an external: always there)."""
    atom = atoms[symbol]
    if atom is None:
        raise ValueError(f"{symbol} is not an atom of the ground program")
    return atom.literal


class ClingoEngine:
    """Same queries as the compiled engine (single states only), answered by clingo solves."""

    def __init__(
        self, game: Groundable, ground_seconds: float = GROUND_SECONDS, ground: GroundGame | None = None
    ):
        """``ground`` reuses a grounding already made (e.g. the compiled engine's ``ground``)."""
        g = ground or ground_game(
            game.asp_for_grounding,
            game.program.file,
            game.static_relations,
            game.grounding_bounded,
            game.role_order,
            ground_seconds,
        )
        self.roles, self.fluents, self.moves = g.roles, g.fluents, g.moves
        t0 = time.perf_counter()
        self.ctl = clingo.Control(["--warn=none"])
        externals = [f"#external true({f})." for f in _asp_terms(self.fluents)]
        for r, ms in zip(self.roles, self.moves, strict=True):
            externals += [
                f"#external does({a},{b})."
                for a, b in zip(_asp_terms([r] * len(ms)), _asp_terms(ms), strict=True)
            ]
        shows = "\n#show legal/2.\n#show goal/2.\n#show terminal/0.\n#show next/1.\n"
        self.ctl.add("base", [], game.asp_projected + "\n".join(externals) + shows)
        self.ctl.ground([("base", [])])
        self.ground_seconds = time.perf_counter() - t0
        for sym in self.ctl.symbolic_atoms:
            if sym.is_external:
                self.ctl.assign_external(sym.symbol, None)
        self._true = [to_symbol(parse_ground(f"true({f})")) for f in self.fluents]
        self._does = [
            [clingo.Function("does", [to_symbol(parse_ground(r)), to_symbol(parse_ground(m))]) for m in ms]
            for r, ms in zip(self.roles, self.moves, strict=True)
        ]
        atoms = self.ctl.symbolic_atoms
        self._text = {a.symbol: symbol_text(a.symbol) for a in atoms if a.symbol.name in _DERIVED}
        self._true_lits = np.array([_literal(atoms, x) for x in self._true], dtype=np.int64)
        self._does_lits = [np.array([_literal(atoms, x) for x in d], dtype=np.int64) for d in self._does]
        self._initial = np.zeros(len(self.fluents), dtype=bool)
        ix = {f: i for i, f in enumerate(self.fluents)}
        self._initial[[ix[f] for f in g.initial]] = True
        self._fluent_ix = ix
        self._move_ix = [{m: i for i, m in enumerate(ms)} for ms in self.moves]
        self.solves = 0

    def _solve(self, state: State, joint: list[int] | None) -> set[str]:
        # the externals are left free; assumptions (program literals) fix all of them for this solve
        assume = np.where(state, self._true_lits, -self._true_lits).tolist()
        for r, lits in enumerate(self._does_lits):
            on = np.zeros(len(lits), dtype=bool)
            if joint is not None:
                on[joint[r]] = True
            assume += np.where(on, lits, -lits).tolist()
        out: set[str] = set()

        def on_model(m: clingo.Model) -> None:
            text = self._text
            out.update(text[s] if s in text else symbol_text(s) for s in m.symbols(shown=True))

        self.ctl.solve(assumptions=assume, on_model=on_model)
        self.solves += 1
        return out

    def initial(self) -> State:
        return self._initial.copy()

    def derived(self, state: State, joint: list[int] | None = None) -> set[str]:
        """Derived legal/goal/terminal atoms of the state, and next atoms of the state and moves.

        As in `tasks.gdl.engine.Engine.evaluate`: legal/goal/terminal see no ``does``.
        """
        out = {a for a in self._solve(state, None) if not a.startswith("next(")}
        return out | {a for a in self._solve(state, joint) if a.startswith("next(")}

    def legal(self, state: State) -> list[np.ndarray]:
        d = self._solve(state, None)
        return [
            np.array([i for i, m in enumerate(ms) if f"legal({r},{m})" in d], dtype=np.int64)
            for r, ms in zip(self.roles, self.moves, strict=True)
        ]

    def terminal(self, state: State) -> bool:
        return "terminal" in self._solve(state, None)

    def next(self, state: State, joint: list[int]) -> State:
        d = self._solve(state, list(joint))
        return np.array([f"next({f})" in d for f in self.fluents], dtype=bool)

    def playouts(self, n: int, max_steps: int = 100, seed: int = 0) -> list[Trace]:
        """Random playouts one state at a time, two solves per step (the benchmark reference)."""
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(n):
            s = self.initial()
            states, joints = [s], []
            terminal = stuck = False
            for t in range(max_steps + 1):
                d = self._solve(s, None)
                terminal = "terminal" in d
                legal = [
                    [i for i, m in enumerate(ms) if f"legal({r},{m})" in d]
                    for r, ms in zip(self.roles, self.moves, strict=True)
                ]
                stuck = not terminal and any(not lg for lg in legal)
                if terminal or stuck or t == max_steps:
                    break
                joint = [int(lg[rng.integers(len(lg))]) for lg in legal]
                s = self.next(s, joint)
                states.append(s)
                joints.append(joint)
            moves = np.array(joints, dtype=np.int64).reshape(len(joints), len(self.roles))
            out.append(Trace(np.stack(states), moves, terminal, stuck))
        return out
