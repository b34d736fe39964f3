"""The per-state engine: play a game whose whole grounding is too big, one clingo grounding per state.

The compiled engine (`tasks.gdl.engine`) grounds the whole game once, with every fluent and move
that may ever hold, and compiles that. For some games the over-approximation has millions of
ground rules (racer's car positions, amazons' queen lines, merrills' mills) and does not fit the
bound, although any single state grounds in well under a second. Mature GGP players fall back to
a reasoner that asks about the current state only; this is that fallback:

* ``legal``/``goal``/``terminal`` of a state: ground the game's rules with the state's ``true``
  facts (no moves, as in the compiled engine) and read the derived atoms off the one model.
* ``next`` of a state and joint move: ground again with the ``does`` facts added.

The rules grounded are `Game.asp_for_grounding` (the unfolded, projected program the compiled
engine uses, leniencies included), so the probe's differential check against a direct clingo
solve of the plain rules (`tasks.gdl.exact.evaluate_by_solving` of `Game.to_asp`) compares two
encodings, as it does for compiled games.

Fluents and moves are not known in advance: they are numbered as play first meets them, so
``fluents`` and ``moves[r]`` only grow, ids never change, and a state vector made earlier may be
shorter than ``fluents`` (missing columns are false). Answers are cached per state (and per state
and joint move), as a transposition table.

Where even the rules without any state do not ground within ``state_seconds`` (a static relation
with millions of atoms, as mummymaze1p's ``direction-from``), the engine retries once with
demand-driven grounding (`tasks.gdl.demand`, `Game.asp_demand`): static relations are then
derived only for the bindings a state asks about, and ``demand_driven`` is set. Its
``static_atoms`` then list the static relations still derived in full only.

Every grounding runs in one forked worker under ``state_seconds``; a state whose grounding exceeds
it stops play with a `GDLError` naming the relation most likely to blow up (ruleDepthExponential
is built to). Without ``fork`` it runs in-process, unbounded.
"""

from __future__ import annotations

import time
import warnings

import clingo
import numpy as np

from procs.channel import Channel
from procs.child import Child, can_fork, start_child
from tasks.gdl.errors import GDLError, GDLWarning, GroundingLimit
from tasks.gdl.exact import _asp_terms
from tasks.gdl.groundable import Groundable
from tasks.gdl.terms import canonical, function_name_from_asp, symbol_text
from tasks.gdl.trace import State, Trace, goal_key

STATE_SECONDS = 30.0
"""Default bound on one per-state grounding and solve (seconds)."""

_SHOW = "\n#show legal/2.\n#show goal/2.\n#show terminal/0.\n#show next/1.\n"

Answer = tuple[list[str], list[str], bool, list[str]]
"""(legal atoms, goal atoms, terminal, next fluents), GDL text, sorted."""


def _solve(asp: str, facts: list[str]) -> Answer:
    """Ground ``asp`` with ``facts`` (clingo text) and read the derived atoms off its one model."""
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], asp + "".join(f"{f}.\n" for f in facts) + _SHOW)
    ctl.ground([("base", [])])
    shown: list[clingo.Symbol] = []
    ctl.solve(on_model=lambda m: shown.extend(m.symbols(shown=True)))
    legal, goal, nxt, terminal = [], [], [], False
    for s in shown:
        if s.name == "legal":
            legal.append(symbol_text(s))
        elif s.name == "goal":
            goal.append(symbol_text(s))
        elif s.name == "next" and len(s.arguments) == 1:
            nxt.append(symbol_text(s.arguments[0]))
        elif s.name == "terminal":
            terminal = True
    return sorted(legal), sorted(goal), terminal, sorted(nxt)


def _static(asp: str, static_relations: set[str]) -> tuple[list[str], list[str], list[str]]:
    """(roles, initial fluents, static atoms) from a grounding without any state."""
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], asp)
    ctl.ground([("base", [])])
    roles, initial, static = [], [], []
    for sa in ctl.symbolic_atoms:
        if not sa.is_fact:
            continue
        sym = sa.symbol
        if sym.name == "role" and len(sym.arguments) == 1:
            roles.append(symbol_text(sym.arguments[0]))
        if sym.name == "init" and len(sym.arguments) == 1:
            initial.append(symbol_text(sym.arguments[0]))
        if function_name_from_asp(sym.name) in static_relations:
            static.append(symbol_text(sym))
    return roles, sorted(initial), sorted(static)


def _serve(conn: Channel, asp: str, static_relations: set[str]) -> None:  # pragma: no cover - child
    """The grounding worker (started by `procs.child`, so it dies with its parent)."""
    while True:
        try:
            kind, payload = conn.recv()
        except EOFError:
            return
        try:
            out = _static(asp, static_relations) if kind == "static" else _solve(asp, payload)
            conn.send(("ok", out))
        except BaseException as e:  # noqa: BLE001 - MemoryError, clingo errors: report them all
            conn.send(("error", f"{type(e).__name__}: {e}"))


class _Worker:
    """A forked process that answers grounding requests, each under a time bound (`procs.child`)."""

    def __init__(self, asp: str, static_relations: set[str], name: str, seconds: float, suspect: str):
        self.asp, self.static_relations, self.name = asp, static_relations, name
        self.seconds, self.suspect = seconds, suspect
        self.proc: Child | None = start_child(_serve, (asp, static_relations)) if can_fork() else None
        self.conn: Channel | None = self.proc.channel if self.proc else None

    def ask(self, kind: str, payload, what: str):
        if self.proc is None:  # in-process, unbounded
            return _static(self.asp, self.static_relations) if kind == "static" else _solve(self.asp, payload)
        if self.conn is None:
            raise GDLError(self.name, 0, 0, "the per-state engine stopped after an earlier error")
        self.conn.send((kind, payload))
        hint = f"; {self.suspect}" if self.suspect else ""
        if not self.conn.poll(self.seconds):
            self.close()
            raise GroundingLimit(
                self.name,
                0,
                0,
                f"per-state grounding of {what} did not finish within {self.seconds:g} s{hint}",
            )
        try:
            status, out = self.conn.recv()
        except EOFError:
            self.proc.wait(1.0)
            code = self.proc.exitcode
            self.close()
            raise GroundingLimit(
                self.name, 0, 0, f"per-state grounding of {what} crashed (exit {code}){hint}"
            ) from None
        if status != "ok":
            self.close()
            error = GroundingLimit if out.startswith("MemoryError") else GDLError
            raise error(self.name, 0, 0, f"per-state grounding of {what} failed: {out}{hint}")
        return out

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.reap()
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _state_atoms(self: PerStateEngine, states: list[State]) -> list[dict[str, list[str]]]:
    """`PerStateEngine.state_atoms`, as `tasks.gdl.engine.Engine.state_atoms`: legal, goal and terminal atoms of each state,
    without the ``next`` solve that `evaluate` adds (the generator does not read it)."""
    return [_atoms_of(self, self._ids(state)) for state in states]


def _atoms_of(self: PerStateEngine, ids: tuple[int, ...]) -> dict[str, list[str]]:
    """The ``legal``, ``goal`` and ``terminal`` atoms (GDL text, sorted) of the state of fluents ``ids``."""
    legal, goals, terminal = self._state(ids)
    atoms = [
        f"legal({role},{ms[i]})"
        for role, ms, lg in zip(self.roles, self.moves, legal, strict=True)
        for i in lg
    ]
    return {
        "legal": sorted(atoms),
        "goal": sorted(f"goal({role},{v})" for role, vs in goals.items() for v in vs),
        "terminal": ["terminal"] if terminal else [],
    }


class PerStateEngine:
    """The compiled engine's interface, answered by one clingo grounding per state (module docstring)."""

    kind = "per-state"

    def __init__(
        self, game: Groundable, state_seconds: float = STATE_SECONDS, why: str = "", demand: bool = False
    ):
        """``why`` records why the compiled engine was not used (the whole grounding's error);
        ``demand`` grounds demand-driven from the start (tests: the rewrite against the plain rules)."""
        self.game = game
        self.why = why
        self.fallbacks = 0
        self.ground = None  # no whole-game grounding
        self.state_seconds = state_seconds
        self.demand_driven = False
        """Whether it grounds `Game.asp_demand` (the plain program did not ground without a state)."""
        self.asp = game.asp_for_grounding
        """The program text each state is grounded with."""
        t0 = time.perf_counter()
        roles, initial, static = self._start(game.static_relations, demand)
        asserted = [f"distinct({d.left},{d.right})" for d in game.program.asserted_distinct]
        self.static_atoms: list[str] = sorted({*static, *asserted})
        self.fluents: list[str] = []
        self._fluent_ix: dict[str, int] = {}
        self._fluent_asp: list[str] = []
        self._state_cache: dict[tuple[int, ...], tuple[list[np.ndarray], dict[str, list[str]], bool]] = {}
        self._next_cache: dict[tuple[tuple[int, ...], tuple[int, ...]], tuple[int, ...]] = {}
        self._seen: set[str] = set(self.static_atoms) | {f"init({f})" for f in initial}
        self.roles: list[str] = roles
        self._initial_ids = tuple(sorted(self._register(initial)))
        if not roles:  # scissors_paper_stone says (player p1): take the roles that have moves
            self.roles = _roles_from_legal(self)
        order = game.role_order
        self.roles = sorted(self.roles, key=lambda r: (order.index(r) if r in order else len(order), r))
        self.moves: list[list[str]] = [[] for _ in self.roles]
        self._move_ix: list[dict[str, int]] = [{} for _ in self.roles]
        self._role_ix = {r: i for i, r in enumerate(self.roles)}
        self.ground_seconds = time.perf_counter() - t0
        self.groundings = 0

    def _start(self, static_relations: set[str], demand: bool) -> tuple[list[str], list[str], list[str]]:
        """Start the worker on the plain program; if that does not ground without a state within
        ``state_seconds``, retry once with demand-driven grounding (`tasks.gdl.demand`)."""
        game = self.game
        if not demand:
            self._worker = _Worker(
                self.asp, static_relations, game.program.file, self.state_seconds, game.grounding_suspect
            )
            try:
                return self._worker.ask("static", None, "the game without a state")
            except GroundingLimit as e:
                if not game.demand.demanded:  # the rewrite changes nothing: it would fail again
                    raise
                self.why = "; ".join(x for x in (self.why, e.msg) if x)
        self.demand_driven, self.asp = True, game.asp_demand
        kept = static_relations - {name for name, _ in game.demand.demanded}  # still derived in full
        self._worker = _Worker(self.asp, kept, game.program.file, self.state_seconds, game.grounding_suspect)
        return self._worker.ask("static", None, "the game without a state (demand-driven)")

    # ----------------------------------------------------------------- numbering
    def _register(self, fluents: list[str]) -> list[int]:
        ids = []
        new = [f for f in fluents if f not in self._fluent_ix]
        for f, a in zip(new, _asp_terms(new) if new else [], strict=True):
            self._fluent_ix[f] = len(self.fluents)
            self.fluents.append(f)
            self._fluent_asp.append(f"true({a})")
            self._seen.add(f"true({f})")
        for f in fluents:
            ids.append(self._fluent_ix[f])
        return ids

    def _move(self, r: int, move: str) -> int:
        ix = self._move_ix[r]
        if move not in ix:
            ix[move] = len(self.moves[r])
            self.moves[r].append(move)
            self._seen.add(f"does({self.roles[r]},{move})")
        return ix[move]

    @staticmethod
    def _ids(state: State) -> tuple[int, ...]:
        return tuple(np.flatnonzero(np.asarray(state, dtype=bool)).tolist())

    def _vector(self, ids) -> State:
        s = np.zeros(len(self.fluents), dtype=bool)
        s[list(ids)] = True
        return s

    # ----------------------------------------------------------------- the two groundings
    def _ask(self, facts: list[str], what: str) -> Answer:
        self.groundings += 1
        ans = self._worker.ask("solve", facts, what)
        self._seen.update(ans[0])
        self._seen.update(ans[1])
        self._seen.update(f"next({f})" for f in ans[3])
        if ans[2]:
            self._seen.add("terminal")
        return ans

    def _ask_state(self, ids: tuple[int, ...]) -> Answer:
        return self._ask([self._fluent_asp[i] for i in ids], f"a state of {len(ids)} fluents")

    def _state(self, ids: tuple[int, ...]) -> tuple[list[np.ndarray], dict[str, list[str]], bool]:
        """(legal move ids per role, goal values per role, terminal) of a state; cached."""
        hit = self._state_cache.get(ids)
        if hit is not None:
            return hit
        legal_atoms, goal_atoms, terminal, _ = self._ask_state(ids)
        legal: list[list[int]] = [[] for _ in self.roles]
        for a in legal_atoms:
            role, move = _split(a)
            if role in self._role_ix:
                r = self._role_ix[role]
                legal[r].append(self._move(r, move))
        goals: dict[str, list[str]] = {}
        for a in goal_atoms:
            role, value = _split(a)
            if role in self._role_ix:
                goals.setdefault(role, []).append(value)
        out = ([np.array(sorted(x), dtype=np.int64) for x in legal], goals, terminal)
        self._state_cache[ids] = out
        return out

    def _next(self, ids: tuple[int, ...], joint: tuple[int, ...]) -> tuple[int, ...]:
        key = (ids, joint)
        hit = self._next_cache.get(key)
        if hit is not None:
            return hit
        does = [
            f"does({r},{m})"
            for r, m in zip(
                _asp_terms([self.roles[i] for i, m in enumerate(joint) if m >= 0]),
                _asp_terms([self.moves[i][m] for i, m in enumerate(joint) if m >= 0]),
                strict=True,
            )
        ]
        nxt = self._ask([self._fluent_asp[i] for i in ids] + does, "a state and joint move")[3]
        out = tuple(sorted(self._register(nxt)))
        self._next_cache[key] = out
        return out

    # ----------------------------------------------------------------- the engine interface
    def initial(self) -> State:
        return self._vector(self._initial_ids)

    def legal(self, state: State) -> list[np.ndarray]:
        """Per role, the ids (into ``moves[r]``) of the legal moves."""
        return self._state(self._ids(state))[0]

    def terminal(self, state: State) -> bool:
        return self._state(self._ids(state))[2]

    def next(self, state: State, joint: list[int] | np.ndarray) -> State:
        return self._vector(self._next(self._ids(state), tuple(int(m) for m in joint)))

    def goals(self, state: State) -> dict[str, int | str]:
        """Each role's goal value in ``state`` (roles without one are absent; with several, the highest)."""
        out: dict[str, int | str] = {}
        for role, values in self._state(self._ids(state))[1].items():
            best = max(values, key=goal_key)
            out[role] = int(best) if best.lstrip("-").isdigit() else best
        return out

    def legal_batch(self, states: np.ndarray) -> list[np.ndarray]:
        """Per role, a (batch, moves of role) boolean matrix (moves as numbered after the batch)."""
        answers = [self.legal(s) for s in np.atleast_2d(states)]
        out = []
        for r, ms in enumerate(self.moves):
            m = np.zeros((len(answers), len(ms)), dtype=bool)
            for i, a in enumerate(answers):
                m[i, a[r]] = True
            out.append(m)
        return out

    def terminal_batch(self, states: np.ndarray) -> np.ndarray:
        return np.array([self.terminal(s) for s in np.atleast_2d(states)], dtype=bool)

    def next_batch(self, states: np.ndarray, joint: np.ndarray) -> np.ndarray:
        nxt = [self._next(self._ids(s), tuple(int(m) for m in j)) for s, j in zip(states, joint, strict=True)]
        return np.stack([self._vector(ids) for ids in nxt])

    def state_fluents(self, state: State) -> list[str]:
        """The fluents (GDL text) true in ``state``."""
        return [self.fluents[i] for i in self._ids(state)]

    def state_of(self, fluents: list[str]) -> State:
        """A state vector from fluent texts (new fluents are numbered; any fluent is allowed)."""
        return self._vector(self._register([canonical(f) for f in fluents]))

    def move_id(self, role: str, move: str) -> int:
        return self._move(self._role_ix[role], canonical(move))

    def atom_texts(self) -> list[str]:
        """Every ground atom play has met: static facts, fluents, moves, derived targets (types).

        Sorted: the inferred ``.typ`` lists each type's constants in the order they come here, and
        a set's order changes from one process to the next (string hashing is seeded per process),
        so the same game gave ``.typ`` files that differed in the order of their constants."""
        return sorted(self._seen)

    def evaluate(self, true_fluents: list[str], does: dict[str, str] | None = None) -> dict[str, list[str]]:
        """As `tasks.gdl.engine.Engine.evaluate`: derived atoms (GDL text) of any set of fluents."""
        ids = tuple(sorted(set(self._register([canonical(f) for f in true_fluents]))))
        out = _atoms_of(self, ids)
        moves = {r: canonical(m) for r, m in (does or {}).items()}
        joint = tuple(
            self._move(r, moves[role]) if role in moves else -1 for r, role in enumerate(self.roles)
        )
        out["next"] = sorted(f"next({self.fluents[i]})" for i in self._next(ids, joint))
        return out

    state_atoms = _state_atoms  # the legal, goal and terminal atoms of a batch of states (above)

    def playouts(
        self, n: int, max_steps: int = 100, seed: int = 0, batch: int = 1024, deadline: float | None = None
    ) -> list[Trace]:
        """``n`` random playouts, as `tasks.gdl.engine.Engine.playouts` (``batch`` is ignored).

        Reproducible for a given (n, max_steps, seed) and engine history (move numbering follows
        what was met first). All traces of one call have ``len(fluents)`` columns at its end.
        Past ``deadline`` (`time.monotonic`), a playout stops as at the step limit and no new
        one starts (the probe's time budget; generation passes none).
        """
        rng = np.random.default_rng(seed)
        raw: list[_RawPlayout] = []
        for _ in range(n):
            if deadline is not None and raw and time.monotonic() > deadline:
                break
            raw.append(_random_playout(self, rng, max_steps, deadline))
        return [self._trace(r) for r in raw]

    def _trace(self, raw: _RawPlayout) -> Trace:
        states, joints, terminal, stuck = raw
        vectors = np.stack([self._vector(s) for s in states])
        return Trace(
            vectors, np.array(joints, dtype=np.int64).reshape(len(joints), len(self.roles)), terminal, stuck
        )

    def close(self) -> None:
        """Stop the grounding worker (also done when the engine is garbage-collected)."""
        self._worker.close()


def _roles_from_legal(engine: PerStateEngine) -> list[str]:
    """The roles of a game that declares none: those with a legal move in the initial state."""
    file = engine.game.program.file
    roles = sorted({_split(a)[0] for a in engine._ask_state(engine._initial_ids)[0]})
    if not roles:
        raise GDLError(file, 0, 0, "the game declares no role (and no legal moves to infer them from)")
    warnings.warn(
        f"{file}: no (role ...) facts; roles taken from the legal moves: {roles}", GDLWarning, stacklevel=4
    )
    return roles


_RawPlayout = tuple[list[tuple[int, ...]], list[tuple[int, ...]], bool, bool]
"""A playout as state ids and joint moves (vectors are built once the call's fluents are known)."""


def _random_playout(
    engine: PerStateEngine, rng: np.random.Generator, max_steps: int, deadline: float | None
) -> _RawPlayout:
    """One playout from the initial state, each role uniform over its legal moves: (states,
    joints, terminal, stuck). It stops in a terminal state, at a role without a legal move, after
    ``max_steps`` joint moves, or past ``deadline``."""
    ids = engine._initial_ids
    states, joints = [ids], []
    terminal = stuck = False
    for t in range(max_steps + 1):
        legal, _, terminal = engine._state(ids)
        stuck = not terminal and any(len(lg) == 0 for lg in legal)
        late = deadline is not None and time.monotonic() > deadline
        if terminal or stuck or t == max_steps or late:
            break
        joint = tuple(int(lg[int(rng.random() * len(lg))]) for lg in legal)
        ids = engine._next(ids, joint)
        states.append(ids)
        joints.append(joint)
    return states, joints, terminal, stuck


def _split(atom: str) -> tuple[str, str]:
    """``legal(r,m)`` / ``goal(r,v)`` -> (r, m): the two top-level arguments, as text."""
    inner = atom[atom.index("(") + 1 : -1]
    depth = 0
    for i, c in enumerate(inner):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "," and depth == 0:
            return inner[:i], inner[i + 1 :]
    raise ValueError(f"not a binary atom: {atom}")
