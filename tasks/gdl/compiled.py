"""The ground program compiled to layered sparse-matrix evaluation over a batch of states.

Why: solving with clingo costs tens of microseconds per query even on a tiny game. A ground
stratified program needs no search: evaluating it is forward chaining in dependency order. So:

* values live in an int16 matrix ``V`` (atoms x batch): one column per game in the batch;
* derived atoms are levelled by the longest path from the inputs in the ground dependency graph
  (strongly connected components, i.e. positive recursion, share one level);
* all rules of a level are evaluated together with one sparse product: a rule with ``p`` positive
  and some negative body atoms gets weight +1 per positive and ``-(p+1)`` per negative atom, so
  it fires exactly when its weighted sum equals ``p``; a second product ORs the fired rules into
  their heads. A level that contains recursion is iterated to its (monotone) fixpoint.
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

DTYPE = np.int16


@dataclass
class Layer:
    weights: sp.csr_matrix  # rules x atoms
    need: np.ndarray  # rules: number of positive body atoms
    heads: np.ndarray  # distinct head atom ids
    to_heads: sp.csr_matrix  # heads x rules, 0/1
    recursive: bool


def _layer(rules: list[tuple[int, tuple[int, ...], tuple[int, ...]]], n_atoms: int, recursive: bool) -> Layer:
    rows, cols, vals = [], [], []
    need = np.zeros(len(rules), dtype=DTYPE)
    heads = sorted({h for h, _, _ in rules})
    head_ix = {h: i for i, h in enumerate(heads)}
    for i, (_, pos, neg) in enumerate(rules):
        need[i] = len(pos)
        for a in pos:
            rows.append(i), cols.append(a), vals.append(1)
        for a in neg:
            rows.append(i), cols.append(a), vals.append(-(len(pos) + 1))
    weights = sp.csr_matrix((np.array(vals, dtype=DTYPE), (rows, cols)), shape=(len(rules), n_atoms))
    weights.sum_duplicates()
    to_heads = sp.csr_matrix(
        (np.ones(len(rules), dtype=DTYPE), ([head_ix[h] for h, _, _ in rules], np.arange(len(rules)))),
        shape=(len(heads), len(rules)),
    )
    return Layer(weights, need[:, None], np.array(heads, dtype=np.int64), to_heads, recursive)


class Circuit:
    """Evaluation order and matrices for one ground game (see the module docstring)."""

    def __init__(self, g: GroundGame, outputs: list[int], move_inputs: list[int]):
        self.n_atoms = g.n_atoms + 1  # the last row stays 0: it stands for impossible atoms
        self.facts = np.array(sorted(g.facts), dtype=np.int64)
        rules = [(r.head, r.pos, r.neg) for r in g.rules]
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
        rules = [r for r in rules if r[0] in needed]
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
            self.phases.append([_layer(groups[lv], self.n_atoms, rec[lv]) for lv in sorted(groups)])
        self.n_rules = len(rules)

    def blank(self, batch: int) -> np.ndarray:
        v = np.zeros((self.n_atoms, batch), dtype=DTYPE)
        v[self.facts] = 1
        return v

    def run(self, v: np.ndarray, phase: int) -> None:
        """Evaluate one phase in place on the value matrix ``v`` (atoms x batch)."""
        for layer in self.phases[phase]:
            if not layer.recursive:
                fired = (layer.weights @ v == layer.need).astype(DTYPE)
                v[layer.heads] = (layer.to_heads @ fired) > 0
                continue
            v[layer.heads] = 0
            while True:
                fired = (layer.weights @ v == layer.need).astype(DTYPE)
                new = ((layer.to_heads @ fired) > 0).astype(DTYPE)
                if np.array_equal(new, v[layer.heads]):
                    break
                v[layer.heads] = new
