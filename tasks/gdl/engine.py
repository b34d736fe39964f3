"""The fast GDL engine: ground once with clingo, then evaluate states in numpy batches.

A state is a boolean vector over ``engine.fluents``; a batch of states is a (batch, fluents)
boolean matrix. Every query loads the states into the compiled circuit (`tasks.gdl.compiled`),
runs the state phase (legal, goal, terminal) and, when moves are given, the move phase (next).

States must use fluents from ``engine.fluents`` (the over-approximated reachable set). For an
arbitrary set of fluents, `Engine.evaluate` is exact: it uses the circuit when every fluent and
move is known and falls back to a one-off clingo solve otherwise (counted in ``fallbacks``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from tasks.gdl.compiled import Circuit, pack, unpack, words_for
from tasks.gdl.errors import GDLWarning
from tasks.gdl.exact import evaluate_by_solving
from tasks.gdl.ground import GROUND_SECONDS, ground_game
from tasks.gdl.groundable import Groundable
from tasks.gdl.terms import canonical
from tasks.gdl.trace import State, Trace, goal_key

__all__ = ["Engine", "State", "Trace"]


def _evaluate_batch(
    self: Engine, examples: Sequence[tuple[list[str], dict[str, str] | None]], batch: int = 1024
) -> list[dict[str, list[str]]]:
    """`Engine.evaluate_batch`: `Engine.evaluate` of many (fluents, moves) examples, ``batch`` at
    a time in one circuit run per phase instead of one per example (an example with an unknown
    fluent or move still falls back to clingo alone).

    Why: the reference learner and the oracle evaluate every example of a corpus (14 million
    in the GGP benchmark's kept targets); `evaluate` costs about a millisecond each.
    """
    out: list[dict[str, list[str]] | None] = [None] * len(examples)
    spelled: dict[str, str] = {}

    def canon(text: str) -> str:
        if text not in spelled:
            spelled[text] = canonical(text)
        return spelled[text]

    known: list[int] = []
    states: list[np.ndarray] = []
    joints: list[list[int]] = []
    for k, (fluents, does) in enumerate(examples):
        ids = [self._fluent_ix.get(canon(f)) for f in fluents]
        moves = {r: canon(m) for r, m in (does or {}).items()}
        joint = [
            self._move_ix[r].get(moves[role], -2) if role in moves else -1
            for r, role in enumerate(self.roles)
        ]
        if None in ids or -2 in joint or not set(moves) <= set(self.roles):
            out[k] = self.evaluate(fluents, does)
            continue
        state = np.zeros(len(self.fluents), dtype=bool)
        state[[i for i in ids if i is not None]] = True
        known.append(k)
        states.append(state)
        joints.append(joint)
    for start in range(0, len(known), batch):
        part = slice(start, start + batch)
        n = len(known[part])
        v = self._load(np.stack(states[part]))
        atoms = _loaded_atoms(self, v, n)
        self._set_moves(v, np.array(joints[part], dtype=np.int64))
        self.circuit.run(v, 1)
        held = unpack(v[self._next_rows], n)
        for i, k in enumerate(known[part]):
            atoms[i]["next"] = sorted(f"next({self.fluents[f]})" for f in np.flatnonzero(held[:, i]))
            out[k] = atoms[i]
    assert all(o is not None for o in out), "every example is evaluated"
    return [o for o in out if o is not None]


def _state_atoms(self: Engine, states: list[State]) -> list[dict[str, list[str]]]:
    """`Engine.state_atoms`: the ``legal``, ``goal`` and ``terminal`` atoms (GDL text, sorted) of
    each of ``states``, what `evaluate` gives for them, in one circuit run per batch.

    Why: the generator derives these for every distinct state met (tens of thousands). One
    `evaluate` per state loads a batch of one and runs the move phase for ``next``, which the
    generator does not read: 68 ms a state, most of a 1000-episode amazons generation.
    """
    if not states:
        return []
    batch = np.stack([np.asarray(s, dtype=bool) for s in states])
    return _loaded_atoms(self, self._load(batch), len(batch))


def _loaded_atoms(self: Engine, v: np.ndarray, n: int) -> list[dict[str, list[str]]]:
    """The ``legal``, ``goal`` and ``terminal`` atoms (sorted) of the ``n`` states loaded in ``v``;
    texts are written only for the moves legal in some state (amazons has thousands of moves)."""
    out: list[dict[str, list[str]]] = [{"legal": [], "goal": [], "terminal": []} for _ in range(n)]
    for role, ms, rows in zip(self.roles, self.moves, self._legal_rows, strict=True):
        words = v[rows]
        some = np.flatnonzero(words.any(axis=1))  # moves legal in some state: unpack only those
        for k, j in zip(*np.nonzero(unpack(words[some], n)), strict=True):
            out[j]["legal"].append(f"legal({role},{ms[some[k]]})")
    for role, goal_rows in zip(self.roles, self._goal_rows, strict=True):
        if goal_rows:
            held = unpack(v[[a for _, a in goal_rows]], n)
            for k, j in zip(*np.nonzero(held), strict=True):
                out[j]["goal"].append(f"goal({role},{goal_rows[k][0]})")
    for j in np.flatnonzero(unpack(v[[self._terminal_row]], n)[0]):
        out[j]["terminal"] = ["terminal"]
    return [{k: sorted(x) for k, x in d.items()} for d in out]


class Engine:
    """Compiled engine for one game; build it with `Game.engine()`."""

    kind = "compiled"
    """Which engine this is (`tasks.gdl.perstate.PerStateEngine` says ``per-state``)."""
    state_atoms = _state_atoms  # the legal, goal and terminal atoms of a batch of states (above)
    evaluate_batch = _evaluate_batch  # evaluate, many examples at once (above)

    def __init__(
        self, game: Groundable, ground_seconds: float | None = None, extra_fluents: tuple[str, ...] = ()
    ):
        self.game = game
        g = ground_game(
            game.asp_for_grounding,
            game.program.file,
            game.static_relations,
            game.grounding_bounded,
            game.role_order,
            GROUND_SECONDS if ground_seconds is None else ground_seconds,
            extra_fluents,
            game.grounding_suspect,
        )
        self.ground = g
        self.warn_inferred_roles()
        self.ground_seconds = g.seconds
        self.roles: list[str] = g.roles
        self.fluents: list[str] = g.fluents
        self.moves: list[list[str]] = g.moves
        asserted = [f"distinct({d.left},{d.right})" for d in game.program.asserted_distinct]
        self.static_atoms: list[str] = sorted({*g.static_atoms, *asserted})
        self.fallbacks = 0
        self._fluent_ix = {f: i for i, f in enumerate(self.fluents)}
        self._move_ix = [{m: i for i, m in enumerate(ms)} for ms in self.moves]

        zero = g.n_atoms  # the circuit's always-0 row stands for impossible atoms
        at = g.atoms
        self._true_rows = np.array([at[f"true({f})"] for f in self.fluents], dtype=np.int64)
        self._next_rows = np.array([at.get(f"next({f})", zero) for f in self.fluents], dtype=np.int64)
        self._legal_rows = [
            np.array([at.get(f"legal({r},{m})", zero) for m in ms], dtype=np.int64)
            for r, ms in zip(self.roles, self.moves, strict=True)
        ]
        self._does_rows = [
            np.array([at[f"does({r},{m})"] for m in ms], dtype=np.int64)
            for r, ms in zip(self.roles, self.moves, strict=True)
        ]
        self._goal_rows: list[list[tuple[str, int]]] = [[] for _ in self.roles]
        role_ix = {r: i for i, r in enumerate(self.roles)}
        prefix = "goal("
        for text, atom in at.items():
            if text.startswith(prefix):
                role, _, value = text[len(prefix) : -1].partition(",")
                if role in role_ix:
                    self._goal_rows[role_ix[role]].append((value, atom))
        for rows in self._goal_rows:
            rows.sort(key=lambda x: goal_key(x[0]))
        self._terminal_row = at.get("terminal", zero)
        outputs = [
            *self._next_rows,
            *np.concatenate(self._legal_rows + [np.zeros(0, np.int64)]),
            *(a for rows in self._goal_rows for _, a in rows),
            self._terminal_row,
        ]
        self.circuit = Circuit(g, [int(a) for a in outputs], self._does_rows)
        state_outputs = [*np.concatenate(self._legal_rows + [np.zeros(0, np.int64)]), self._terminal_row]
        state_outputs += [a for rows in self._goal_rows for _, a in rows]
        # legal/goal/terminal rules that mention does (GDL forbids it; firesheep, tiny2) fire in phase 2
        self._state_needs_moves = any(int(a) in self.circuit.move_atoms for a in state_outputs)
        self._initial = np.zeros(len(self.fluents), dtype=bool)
        self._initial[[self._fluent_ix[f] for f in g.initial]] = True

    def warn_inferred_roles(self) -> None:
        """Say once per build (or cache read) that the rulesheet declares no roles."""
        if self.ground.roles_inferred:
            warnings.warn(
                f"{self.game.program.file}: no (role ...) facts; roles taken from the legal moves: "
                f"{self.ground.roles}",
                GDLWarning,
                stacklevel=5,  # the caller of Game.engine()
            )

    # ----------------------------------------------------------------- batch core
    def _load(self, states: np.ndarray) -> np.ndarray:
        """A value matrix for a batch of states, with legal/goal/terminal evaluated."""
        states = np.atleast_2d(np.asarray(states, dtype=bool))
        if states.shape[1] != len(self.fluents):
            raise ValueError(
                f"states have {states.shape[1]} columns, the game has {len(self.fluents)} fluents"
            )
        v = self.circuit.blank(words_for(len(states)))
        v[self._true_rows] = pack(states.T)
        self._run_state(v)
        return v

    def _run_state(self, v: np.ndarray) -> None:
        """Evaluate legal/goal/terminal (and what they need) for the loaded states, no moves."""
        self.circuit.run(v, 0)
        if self._state_needs_moves:
            self.circuit.clear_moves(v)
            self.circuit.run(v, 1)

    def _set_moves(self, v: np.ndarray, joint: np.ndarray) -> None:
        """Load (batch, roles) move ids (-1: no move) into the circuit."""
        self.circuit.set_moves(v, joint)

    def legal_batch(self, states: np.ndarray) -> list[np.ndarray]:
        """Per role, a (batch, moves of role) boolean matrix of legal moves."""
        v = self._load(states)
        b = len(np.atleast_2d(states))
        return [unpack(v[rows], b).T for rows in self._legal_rows]

    def terminal_batch(self, states: np.ndarray) -> np.ndarray:
        b = len(np.atleast_2d(states))
        return unpack(self._load(states)[[self._terminal_row]], b)[0]

    def next_batch(self, states: np.ndarray, joint: np.ndarray) -> np.ndarray:
        """Successor states for (batch, roles) move ids; the moves are not checked for legality."""
        v = self._load(states)
        joint = np.atleast_2d(np.asarray(joint, dtype=np.int64))
        self._set_moves(v, joint)
        self.circuit.run(v, 1)
        return unpack(v[self._next_rows], len(joint)).T

    # ----------------------------------------------------------------- single states
    def initial(self) -> State:
        return self._initial.copy()

    def legal(self, state: State) -> list[np.ndarray]:
        """Per role, the ids (into ``moves[r]``) of the legal moves."""
        return [np.flatnonzero(m[0]) for m in self.legal_batch(_one(state))]

    def next(self, state: State, joint: list[int] | np.ndarray) -> State:
        return self.next_batch(_one(state), np.asarray(joint)[None])[0]

    def terminal(self, state: State) -> bool:
        return bool(self.terminal_batch(_one(state))[0])

    def goals(self, state: State) -> dict[str, int | str]:
        """Each role's goal value in ``state`` (roles without one are absent; with several, the highest)."""
        v = self._load(_one(state))
        out: dict[str, int | str] = {}
        for role, rows in zip(self.roles, self._goal_rows, strict=True):
            held = [value for value, atom in rows if v[atom, 0] & 1]
            if held:
                best = held[-1]
                out[role] = int(best) if best.lstrip("-").isdigit() else best
        return out

    def state_fluents(self, state: State) -> list[str]:
        """The fluents (GDL text) true in ``state``."""
        return [self.fluents[i] for i in np.flatnonzero(state)]

    def state_of(self, fluents: list[str]) -> State:
        """A state vector from fluent texts; KeyError names a fluent outside ``self.fluents``."""
        s = np.zeros(len(self.fluents), dtype=bool)
        for f in fluents:
            c = canonical(f)
            if c not in self._fluent_ix:
                raise KeyError(f"{self.game.name}: fluent {c} is not among the game's possible fluents")
            s[self._fluent_ix[c]] = True
        return s

    def move_id(self, role: str, move: str) -> int:
        return self._move_ix[self.roles.index(role)][canonical(move)]

    # ----------------------------------------------------------------- exact evaluation
    def evaluate(self, true_fluents: list[str], does: dict[str, str] | None = None) -> dict[str, list[str]]:
        """Derived ``legal``/``goal``/``terminal``/``next`` atoms (GDL text) for any set of fluents.

        ``legal``/``goal``/``terminal`` are computed in the state alone (no ``does``), as in the
        dataset's generator; ``next`` with the given moves, or with none (only the
        move-independent ``next`` rules can fire then). Exact for arbitrary states: unknown fluents or moves fall
        back to a clingo solve.
        """
        fluents = [canonical(f) for f in true_fluents]
        moves = {r: canonical(m) for r, m in (does or {}).items()}
        known = all(f in self._fluent_ix for f in fluents) and all(
            r in self.roles and m in self._move_ix[self.roles.index(r)] for r, m in moves.items()
        )
        if not known:
            self.fallbacks += 1
            return evaluate_by_solving(self.game.to_asp(), fluents, moves)
        state = np.zeros(len(self.fluents), dtype=bool)
        state[[self._fluent_ix[f] for f in fluents]] = True
        v = self._load(state[None])
        out = _loaded_atoms(self, v, 1)[0]
        joint = [self._move_ix[r][moves[role]] if role in moves else -1 for r, role in enumerate(self.roles)]
        self._set_moves(v, np.array([joint], dtype=np.int64))
        self.circuit.run(v, 1)
        out["next"] = sorted(
            f"next({f})" for f, a in zip(self.fluents, self._next_rows, strict=True) if v[a, 0] & 1
        )
        return out

    # ----------------------------------------------------------------- playouts
    def playouts(self, n: int, max_steps: int = 100, seed: int = 0, batch: int = 1024) -> list[Trace]:
        """``n`` random playouts (each role uniform over its legal moves), ``batch`` at a time.

        Reproducible: the same (n, max_steps, seed, batch) give the same traces. A playout stops
        in a terminal state, after ``max_steps`` joint moves, or when some role has no legal move.
        """
        rng = np.random.default_rng(seed)
        # keep the (steps, batch, fluents) trace block under ~64 MB
        batch = max(64, min(batch, (64 << 20) // ((max_steps + 1) * max(1, len(self.fluents)))))
        traces: list[Trace] = []
        for start in range(0, n, batch):
            traces.extend(self._playout_batch(min(batch, n - start), max_steps, rng))
        return traces

    def _playout_batch(self, b: int, max_steps: int, rng: np.random.Generator) -> list[Trace]:
        n_roles = len(self.roles)
        states: list[np.ndarray] = []  # per step: (active, fluents)
        actives: list[np.ndarray] = []
        joints: list[np.ndarray] = []  # per step: (active, roles)
        ended = np.zeros(b, dtype=np.int64)
        is_terminal = np.zeros(b, dtype=bool)
        is_stuck = np.zeros(b, dtype=bool)
        act = np.arange(b)
        v = self.circuit.blank(words_for(b))
        v[self._true_rows] = pack(np.repeat(self._initial[:, None], b, axis=1))
        for t in range(max_steps + 1):
            n = len(act)
            self._run_state(v)
            states.append(unpack(v[self._true_rows], n).T)
            actives.append(act)
            term = unpack(v[[self._terminal_row]], n)[0]
            legal = [unpack(v[rows], n) for rows in self._legal_rows]
            counts = [lg.sum(axis=0) for lg in legal]
            stuck = ~term & np.any([c == 0 for c in counts], axis=0) if n_roles else ~term
            done = term | stuck
            if t == max_steps:
                done[:] = True
            ended[act[done]] = t
            is_terminal[act[term]] = True
            is_stuck[act[stuck]] = True
            keep = ~done
            if not keep.any():
                break
            joint = _draw_joint(legal, counts, n, rng)
            self._set_moves(v, joint)
            self.circuit.run(v, 1)
            joints.append(joint)
            nxt = v[self._next_rows]
            if keep.all():
                v[self._true_rows] = nxt
            else:
                act = act[keep]
                v = self.circuit.blank(words_for(len(act)))
                v[self._true_rows] = pack(unpack(nxt, n)[:, keep])
        return _assemble(b, len(self.fluents), n_roles, ended, is_terminal, is_stuck, states, actives, joints)


def _one(state: State) -> np.ndarray:
    """A single state as a batch of one."""
    return np.asarray(state, dtype=bool)[None]


def _draw_joint(
    legal: list[np.ndarray], counts: list[np.ndarray], n: int, rng: np.random.Generator
) -> np.ndarray:
    """One joint move per running playout: each role uniform among its legal moves (ids by role)."""
    joint = np.zeros((n, len(legal)), dtype=np.int64)
    for r, (lg, c) in enumerate(zip(legal, counts, strict=True)):
        _, legal_ids = np.nonzero(lg.T)  # per game (in order), its legal move ids
        first = np.cumsum(c) - c
        pick = first + (rng.random(n) * c).astype(np.int64)  # uniform among the c legal
        joint[:, r] = legal_ids[np.minimum(pick, len(legal_ids) - 1)] if len(legal_ids) else 0
    return joint


def _assemble(
    b: int, n_fluents: int, n_roles: int, ended: np.ndarray, is_terminal: np.ndarray, is_stuck: np.ndarray,
    states: list[np.ndarray], actives: list[np.ndarray], joints: list[np.ndarray],
) -> list[Trace]:  # fmt: skip
    """Per-playout traces from the per-step arrays (rows of still-running playouts only)."""
    all_states = np.zeros((len(states), b, n_fluents), dtype=bool)
    for t, (act, s) in enumerate(zip(actives, states, strict=True)):
        all_states[t, act] = s
    all_joints = np.zeros((len(joints), b, n_roles), dtype=np.int64)
    for t, j in enumerate(joints):
        all_joints[t, actives[t]] = j
    return [
        Trace(all_states[: k + 1, i], all_joints[:k, i], bool(term), bool(stuck))
        for i, (k, term, stuck) in enumerate(zip(ended.tolist(), is_terminal, is_stuck, strict=True))
    ]
