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
    for i, (_, pos, _) in enumerate(rules):
        by_size.setdefault(len(pos), []).append(i)
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
        """``outputs``: the atoms to compute; ``does_rows[r][m]``: the atom of role r's move m."""
        self.zero = g.n_atoms  # a row that stays 0: it stands for impossible atoms
        self.one = g.n_atoms + 1  # a row that stays 1: pads short rule bodies
        self.n_rows = g.n_atoms + 2
        self.does_rows = [np.asarray(d, dtype=np.int64) for d in does_rows]
        self.facts = np.array(sorted(g.facts), dtype=np.int64)
        rules = list(g.rules)
        # Keep only rules that some output depends on.
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
        rules = self._group_by_move([r for r in rules if r[0] in needed])
        move_inputs = [int(a) for d in self.does_rows for a in d] + [int(a) for a in self.moveset_rows_all]
        # Ground dependency graph between derived atoms.
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
        # Longest-path level of each component, in a topological order of the condensation.
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
        # Phase 2 = derived atoms that depend on a move input.
        moves = set(move_inputs)
        on_moves = np.zeros(n, dtype=bool)
        for h, pos, neg in rules:
            if any(b in moves for b in (*pos, *neg)):
                on_moves[ix[h]] = True
        comp_on = np.zeros(n_comp, dtype=bool)
        comp_on[comp[on_moves]] = True
        for c in np.argsort(level, kind="stable"):  # condensation edges go up in level
            if comp_on[c]:
                for d in cond_edges.get(int(c), ()):
                    comp_on[d] = True
        on_moves = comp_on[comp]
        self.move_atoms = {derived[i] for i in np.flatnonzero(on_moves)}
        self.phases: list[list[Layer]] = []
        for phase in (False, True):
            groups: dict[int, list] = {}
            rec: dict[int, bool] = {}
            for h, pos, neg in rules:
                i = ix[h]
                if on_moves[i] != phase:
                    continue
                lv = int(level[comp[i]])
                groups.setdefault(lv, []).append((h, pos, neg))
                rec[lv] = rec.get(lv, False) or bool(cyclic[comp[i]])
            self.phases.append([_layer(groups[lv], self.zero, self.one, rec[lv]) for lv in sorted(groups)])
        self.n_rules = len(rules)

    def _group_by_move(self, rules: list) -> list:
        """Merge rules that differ only in the move they require (see `set_moves`).

        Grounding multiplies frame axioms such as ``next(cell(X,Y,C)) :- true(cell(X,Y,C)),
        does(R, move(...)), ...`` by every move: breakthrough has 121k such rules for 128 heads.
        Rules with the same head and the same other literals whose one ``does`` literal differs
        become one rule over a *move-set* row: "role r's chosen move is in D".
        """
        does_of = {int(a): (r, m) for r, rows in enumerate(self.does_rows) for m, a in enumerate(rows)}
        groups: dict[tuple, set[int]] = {}
        out = []
        for h, pos, neg in rules:
            d = [a for a in pos if a in does_of]
            if len(d) != 1:
                out.append((h, pos, neg))
                continue
            r, m = does_of[d[0]]
            others = tuple(sorted(a for a in pos if a != d[0]))
            groups.setdefault((h, r, others, tuple(sorted(neg))), set()).add(m)
        sets: list[dict[frozenset[int], int]] = [{} for _ in self.does_rows]
        for (h, r, others, neg), moves in groups.items():
            if len(moves) == 1:
                atom = int(self.does_rows[r][next(iter(moves))])
            else:
                key = frozenset(moves)
                if key not in sets[r]:
                    sets[r][key] = self.n_rows
                    self.n_rows += 1
                atom = sets[r][key]
            out.append((h, (*others, atom), neg))
        self.moveset_rows = [np.array(list(ms.values()), dtype=np.int64) for ms in sets]
        self.moveset_tables = []
        for r, ms in enumerate(sets):
            table = np.zeros((len(ms), len(self.does_rows[r])), dtype=bool)
            for k, key in enumerate(ms):
                table[k, list(key)] = True
            self.moveset_tables.append(table)
        self.moveset_rows_all = np.concatenate([np.zeros(0, np.int64), *self.moveset_rows])
        return out

    def set_moves(self, v: np.ndarray, joint: np.ndarray) -> None:
        """Load (batch, roles) move ids (-1: no move) into the does and move-set rows."""
        b = len(joint)
        for r, rows in enumerate(self.does_rows):
            if not len(rows):
                continue
            chosen = joint[:, r]
            valid = chosen >= 0
            onehot = np.zeros((len(rows), b), dtype=bool)
            onehot[chosen[valid], np.flatnonzero(valid)] = True
            v[rows] = pack(onehot, v.shape[1])
            if len(self.moveset_rows[r]):
                member = self.moveset_tables[r][:, np.where(valid, chosen, 0)] & valid
                v[self.moveset_rows[r]] = pack(member, v.shape[1])

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


def unpack(words: np.ndarray, n: int) -> np.ndarray:
    """Inverse of `pack`: (rows, words) uint64 -> (rows, n) booleans."""
    raw = np.ascontiguousarray(words).view(np.uint8)
    return np.unpackbits(raw, axis=1, count=n, bitorder="little").astype(bool)
