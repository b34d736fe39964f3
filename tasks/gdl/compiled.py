"""The ground program compiled to bit-parallel evaluation over a batch of states.

Why: solving with clingo costs tens of microseconds per query even on a tiny game, and a ground
stratified program needs no search: evaluating it is forward chaining in dependency order.
So the batch is the bit dimension:

* values live in a uint64 matrix ``V`` (rows = ground atoms, columns = 64 games per word), so
  one AND evaluates a body literal for 64 games at once;
* derived atoms are levelled by the longest path from the inputs in the ground dependency graph
  (a strongly connected component, i.e. positive recursion, shares one level and is iterated
  to its fixpoint);
* the rules of a level are evaluated together: bucketed by number of positive body atoms, a
  bucket is ``AND_j V[pos[:, j]] & ~OR_j V[neg[:, j]]`` with index arrays (short bodies are
  padded with the always-one / always-zero rows), and the fired rules are ORed into their heads
  with one ``bitwise_or.reduceat`` over rules sorted by head;
* rules that only ask "which move was chosen" are folded into move-set rows, filled straight
  from the joint move (`Circuit.set_moves`): breakthrough's 121k frame-axiom instances become
  128 rules;
* levels are split in two phases: atoms that do not depend on ``does`` (legal, goal, terminal and
  everything they need) and those that do (``next``); a playout step runs phase one, samples the
  moves, then runs phase two.

Only atoms that some legal/goal/terminal/next atom depends on are compiled.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from tasks.gdl.ground import GroundGame

WORD = np.uint64
ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass
class Bucket:
    pos: np.ndarray  # (rules, k) row indices, padded with the ONE row
    neg: np.ndarray  # (rules, j) row indices, padded with the ZERO row
    slots: np.ndarray  # (rules,) position of each rule in the layer's head-sorted order


@dataclass
class Layer:
    buckets: list[Bucket]
    n_rules: int
    starts: np.ndarray  # first head-sorted rule of each head
    heads: np.ndarray  # distinct head rows
    recursive: bool


def _layer(
    rules: list[tuple[int, tuple[int, ...], tuple[int, ...]]], zero: int, one: int, recursive: bool
) -> Layer:
    rules = sorted(rules, key=lambda r: r[0])
    heads, starts = np.unique(np.array([h for h, _, _ in rules], dtype=np.int64), return_index=True)
    by_size: dict[int, list[int]] = {}
    for i, (_, body, _) in enumerate(rules):
        by_size.setdefault(len(body), []).append(i)
    buckets = []
    for k, members in sorted(by_size.items()):
        j = max(len(rules[i][2]) for i in members)
        pos = np.full((len(members), max(k, 1)), one, dtype=np.int64)
        neg = np.full((len(members), j), zero, dtype=np.int64)
        for r, i in enumerate(members):
            pos[r, : len(rules[i][1])] = rules[i][1]
            neg[r, : len(rules[i][2])] = rules[i][2]
        buckets.append(Bucket(pos, neg, np.array(members, dtype=np.int64)))
    return Layer(buckets, len(rules), starts, heads, recursive)


class Circuit:
    """Evaluation order and matrices for one ground game (see the module docstring)."""

    def __init__(self, g: GroundGame, outputs: list[int], does_rows: list[np.ndarray]):
        """``outputs``: the atoms to compute; ``does_rows[r][m]``: the atom of role r's move m.

        The compiler's stages: keep the rules some output needs, fold move literals into move-set
        rows (`_group_by_move`), order the derived atoms by their dependency components
        (`_ordering`), split them into the state phase and the move phase (`_move_dependent`), and
        lay each phase out as layers of rule matrices (`_layer`).
        """
        self.zero = g.n_atoms  # a row that stays 0: it stands for impossible atoms
        self.one = g.n_atoms + 1  # a row that stays 1: pads short rule bodies
        self.n_rows = g.n_atoms + 2
        self.does_rows = [np.asarray(d, dtype=np.int64) for d in does_rows]
        self.facts = np.array(sorted(g.facts), dtype=np.int64)
        rules = self._group_by_move(_needed_rules(list(g.rules), outputs))
        move_inputs = [int(a) for d in self.does_rows for a in d] + [int(a) for a in self.moveset_rows_all]
        order = _ordering(rules)
        on_moves = _move_dependent(rules, order, set(move_inputs))
        self.move_atoms = {order.derived[i] for i in np.flatnonzero(on_moves)} | self.move_derived
        self.phases: list[list[Layer]] = []
        for phase in (False, True):
            groups: dict[int, list] = {}
            rec: dict[int, bool] = {}
            for h, pos, neg in rules:
                i = order.ix[h]
                if on_moves[i] != phase:
                    continue
                lv = int(order.level[order.comp[i]])
                groups.setdefault(lv, []).append((h, pos, neg))
                rec[lv] = rec.get(lv, False) or bool(order.cyclic[order.comp[i]])
            self.phases.append([_layer(groups[lv], self.zero, self.one, rec[lv]) for lv in sorted(groups)])
        self.n_rules = len(rules)

    def _group_by_move(self, rules: list) -> list:
        """Fold the rules that only ask "which move was chosen" into move-set rows (`set_moves`).

        Grounding multiplies frame axioms such as ``next(cell(X,Y,C)) :- true(cell(X,Y,C)),
        does(R, move(...)), ...`` by every move: breakthrough has 121k such rules for 128 heads.
        A *move literal* is a ``does`` atom or an atom all of whose rules have a single move
        literal as body (e.g. a projection ``gdl_proj_K(X) :- does(R, move(X,..))``); its value
        is "some role's chosen move is in its set", computed directly from the joint move. Rules
        that agree on everything but one move literal are merged into one rule over the union.
        """
        n_roles = len(self.does_rows)
        sets: dict[int, tuple[frozenset[int], ...]] = {
            int(a): tuple(frozenset([m]) if q == r else frozenset() for q in range(n_roles))
            for r, rows in enumerate(self.does_rows)
            for m, a in enumerate(rows)
        }

        def union(xs) -> tuple[frozenset[int], ...]:
            return tuple(frozenset().union(*(x[r] for x in xs)) for r in range(n_roles))

        derived: set[int] = set()
        changed = True
        while changed:  # atoms defined only by single-move-literal bodies become move literals
            changed = False
            by_head: dict[int, list] = {}
            for h, pos, neg in rules:
                by_head.setdefault(h, []).append((pos, neg))
            for h, bodies in by_head.items():
                if all(len(pos) == 1 and not neg and pos[0] in sets for pos, neg in bodies):
                    sets[h] = union([sets[pos[0]] for pos, _ in bodies])
                    derived.add(h)
                    changed = True
            rules = [r for r in rules if r[0] not in derived]
        groups: dict[tuple, list[int]] = {}
        out = []
        for h, pos, neg in rules:
            lits = [a for a in pos if a in sets]
            if len(lits) != 1:
                out.append((h, pos, neg))
                continue
            others = tuple(sorted(a for a in pos if a != lits[0]))
            groups.setdefault((h, others, tuple(sorted(neg))), []).append(lits[0])
        rows: dict[tuple[frozenset[int], ...], int] = {}
        for h in sorted(derived):
            rows.setdefault(sets[h], h)
        used = set(derived)
        for (h, others, neg), lits in groups.items():
            if len(set(lits)) == 1:
                atom = lits[0]
            else:
                key = union([sets[a] for a in lits])
                if key not in rows:
                    rows[key] = self.n_rows
                    self.n_rows += 1
                atom = rows[key]
                used.add(atom)
            out.append((h, (*others, atom), neg))
        # every derived move literal keeps its own row (it may be an output); merged ones share
        movesets = [(h, sets[h]) for h in sorted(derived)] + [
            (row, key) for key, row in rows.items() if row >= self.one + 1 and row in used
        ]
        self.moveset_rows_all = np.array([row for row, _ in movesets], dtype=np.int64)
        self.moveset_tables = []
        for r in range(n_roles):
            table = np.zeros((len(movesets), len(self.does_rows[r])), dtype=bool)
            for k, (_, key) in enumerate(movesets):
                table[k, list(key[r])] = True
            self.moveset_tables.append(table)
        self.moveset_by_move = [np.ascontiguousarray(t.T) for t in self.moveset_tables]  # moves x sets
        self.move_derived = derived
        return out

    def set_moves(self, v: np.ndarray, joint: np.ndarray) -> None:
        """Load (batch, roles) move ids (-1: no move) into the does and move-set rows."""
        b, words = len(joint), v.shape[1]
        member = np.zeros((b, len(self.moveset_rows_all)), dtype=bool)  # games x move sets
        for r, rows in enumerate(self.does_rows):
            if not len(rows):
                continue
            chosen = joint[:, r]
            valid = chosen >= 0
            onehot = np.zeros((b, len(rows)), dtype=bool)
            onehot[np.flatnonzero(valid), chosen[valid]] = True
            v[rows] = pack_games(onehot, words)
            if member.shape[1]:
                member[valid] |= self.moveset_by_move[r][chosen[valid]]
        if member.shape[1]:
            v[self.moveset_rows_all] = pack_games(member, words)

    def clear_moves(self, v: np.ndarray) -> None:
        for rows in self.does_rows:
            v[rows] = 0
        v[self.moveset_rows_all] = 0

    def blank(self, words: int) -> np.ndarray:
        """A value matrix for ``64 * words`` games: facts and the ONE row set, all else 0."""
        v = np.zeros((self.n_rows, words), dtype=WORD)
        v[self.facts] = ONES
        v[self.one] = ONES
        return v

    def run(self, v: np.ndarray, phase: int) -> None:
        """Evaluate one phase in place on the value matrix ``v`` (rows x words)."""
        for layer in self.phases[phase]:
            if not layer.recursive:
                v[layer.heads] = self._fire(v, layer)
                continue
            v[layer.heads] = 0
            while True:
                new = self._fire(v, layer)
                if np.array_equal(new, v[layer.heads]):
                    break
                v[layer.heads] = new

    @staticmethod
    def _fire(v: np.ndarray, layer: Layer) -> np.ndarray:
        fired = np.empty((layer.n_rules, v.shape[1]), dtype=WORD)
        for b in layer.buckets:
            x = v[b.pos[:, 0]]
            for c in range(1, b.pos.shape[1]):
                x &= v[b.pos[:, c]]
            for c in range(b.neg.shape[1]):
                x &= ~v[b.neg[:, c]]
            fired[b.slots] = x
        return np.bitwise_or.reduceat(fired, layer.starts, axis=0)


_Rule = tuple[int, tuple[int, ...], tuple[int, ...]]


def _needed_rules(rules: list[_Rule], outputs: list[int]) -> list[_Rule]:
    """The rules that some output depends on (directly or through other derived atoms)."""
    by_head: dict[int, list[int]] = {}
    for i, (h, _, _) in enumerate(rules):
        by_head.setdefault(h, []).append(i)
    needed: set[int] = set()
    todo = [a for a in outputs if a in by_head]
    while todo:
        a = todo.pop()
        if a in needed:
            continue
        needed.add(a)
        for i in by_head[a]:
            for b in (*rules[i][1], *rules[i][2]):
                if b in by_head and b not in needed:
                    todo.append(b)
    return [r for r in rules if r[0] in needed]


@dataclass
class _Ordering:
    """The ground dependency graph of the derived atoms, condensed: ``derived[i]`` is atom i,
    ``ix`` its inverse, ``comp[i]`` its strongly connected component, ``level[c]`` the component's
    longest-path level, ``cyclic[c]`` whether it is recursive, ``edges`` the condensation."""

    derived: list[int]
    ix: dict[int, int]
    comp: np.ndarray
    level: np.ndarray
    cyclic: np.ndarray
    edges: dict[int, set[int]]


def _ordering(rules: list) -> _Ordering:
    """Components and levels of the derived atoms, in a topological order of the condensation."""
    derived = sorted({h for h, _, _ in rules})
    ix = {a: i for i, a in enumerate(derived)}
    src, dst = [], []
    for h, pos, neg in rules:
        for b in (*pos, *neg):
            if b in ix:
                src.append(ix[b])
                dst.append(ix[h])
    n = len(derived)
    graph = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    n_comp, comp = connected_components(graph, directed=True, connection="strong")
    comp_size = np.bincount(comp, minlength=n_comp)
    self_loop = np.zeros(n_comp, dtype=bool)
    for s, d in zip(src, dst, strict=True):
        if s == d:
            self_loop[comp[s]] = True
    cyclic = (comp_size > 1) | self_loop
    cond_edges: dict[int, set[int]] = {}
    indeg = np.zeros(n_comp, dtype=np.int64)
    for s, d in zip(src, dst, strict=True):
        cs, cd = comp[s], comp[d]
        if cs != cd and cd not in cond_edges.setdefault(cs, set()):
            cond_edges[cs].add(cd)
            indeg[cd] += 1
    level = np.zeros(n_comp, dtype=np.int64)
    queue = [c for c in range(n_comp) if indeg[c] == 0]
    while queue:
        c = queue.pop()
        for d in cond_edges.get(c, ()):
            level[d] = max(level[d], level[c] + 1)
            indeg[d] -= 1
            if indeg[d] == 0:
                queue.append(d)
    return _Ordering(derived, ix, comp, level, cyclic, cond_edges)


def _move_dependent(rules: list, order: _Ordering, moves: set[int]) -> np.ndarray:
    """Per derived atom: whether it depends on a move input (phase 2), through any path."""
    on_moves = np.zeros(len(order.derived), dtype=bool)
    for h, pos, neg in rules:
        if any(b in moves for b in (*pos, *neg)):
            on_moves[order.ix[h]] = True
    comp_on = np.zeros(len(order.level), dtype=bool)
    comp_on[order.comp[on_moves]] = True
    for c in np.argsort(order.level, kind="stable"):  # condensation edges go up in level
        if comp_on[c]:
            for d in order.edges.get(int(c), ()):
                comp_on[d] = True
    return comp_on[order.comp]


def words_for(n: int) -> int:
    """Number of 64-bit words for a batch of ``n`` games."""
    return max(1, (n + 63) // 64)


def pack(bits: np.ndarray, words: int | None = None) -> np.ndarray:
    """(rows, n) booleans -> (rows, words) uint64, game i in bit i % 64 of word i // 64."""
    words = words_for(bits.shape[1]) if words is None else words
    packed = np.packbits(bits, axis=1, bitorder="little")
    out = np.zeros((bits.shape[0], words * 8), dtype=np.uint8)
    out[:, : packed.shape[1]] = packed
    return out.view(np.uint64)


def pack_games(bits: np.ndarray, words: int) -> np.ndarray:
    """`pack` of the transpose: (n games, rows) booleans -> (rows, words) uint64."""
    out = np.zeros((words * 8, bits.shape[1]), dtype=np.uint8)
    out[: (bits.shape[0] + 7) // 8] = np.packbits(bits, axis=0, bitorder="little")
    return np.ascontiguousarray(out.T).view(np.uint64)


def unpack(words: np.ndarray, n: int) -> np.ndarray:
    """Inverse of `pack`: (rows, words) uint64 -> (rows, n) booleans."""
    raw = np.ascontiguousarray(words).view(np.uint8)
    return np.unpackbits(raw, axis=1, count=n, bitorder="little").astype(bool)
