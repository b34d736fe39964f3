"""GraphLog rules: relations with inverses, the rule generator (Algorithm 1) and worlds (Algorithm 2).

A rule ``[ri, rj] => rk`` reads ``ri(X, Z), rj(Z, Y) -> rk(X, Y)``. Half of the K relations are
symmetric (their inverse is themselves) and the other half come in inverse pairs, so every rule has
an inverse rule ``[inv(rj), inv(ri)] => inv(rk)`` (the same path read backwards).

Algorithm 1 as printed loops over every triple (ri, rj, rk), rejects rk in {ri, rj}, keeps the
first head per body, adds the inverse rule, and drops a body whose inverse body is already taken.
Run literally for K = 20 this keeps **380** rules (every ordered body except the 20 bodies that are
their own inverse, rj = inv(ri)), not the 76 the paper reports; the text does not say how the 380
are thinned. We therefore (a) visit heads in a seeded random order, so that heads are spread over
the relations instead of all being r0/r1, and (b) keep ``n_rules`` (default 76) of the consistent
rules, drawn in inverse pairs from a seeded permutation so that the kept set stays closed under
inversion, with at most ceil(n_rules / K) rules per head where the pairs allow it. Balanced heads
are what Table 6 implies: its worlds have 16.3 classes from 20 rules, so a world's heads are
nearly all distinct. Then (c) the kept rules are randomly permuted, as Algorithm 2's text says,
so a window is not made of inverse pairs that share a symmetric head. Both constraints of the
paper hold for the result: no two rules share a body, and no rule's head occurs in its own body.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Rule:
    """``[body1, body2] => head`` over relation ids."""

    body1: int
    body2: int
    head: int

    @property
    def body(self) -> tuple[int, int]:
        return (self.body1, self.body2)

    def text(self) -> str:
        return f"[r{self.body1}, r{self.body2}] => r{self.head}"

    def clingo(self) -> str:
        """The rule as a clingo clause over binary edge predicates ``rK(X, Y)``."""
        return f"r{self.head}(X, Y) :- r{self.body1}(X, Z), r{self.body2}(Z, Y)."


def inverse_map(n_relations: int) -> np.ndarray:
    """inv[r]: the first half of the relations are symmetric, the rest come in inverse pairs."""
    if n_relations < 2:
        raise ValueError(f"GraphLog needs at least 2 relations, got {n_relations}")
    inv = np.arange(n_relations)
    n_sym = n_relations // 2
    rest = list(range(n_sym, n_relations))
    if len(rest) % 2:  # an odd remainder: the last relation is symmetric too
        rest = rest[:-1]
    for a, b in zip(rest[0::2], rest[1::2], strict=True):
        inv[a], inv[b] = b, a
    return inv


def inverse_rule(rule: Rule, inv: np.ndarray) -> Rule:
    return Rule(int(inv[rule.body2]), int(inv[rule.body1]), int(inv[rule.head]))


def consistent_rules(n_relations: int, rng: np.random.Generator) -> list[Rule]:
    """Algorithm 1 with heads visited in a seeded random order: every consistent rule."""
    inv = inverse_map(n_relations)
    by_body: dict[tuple[int, int], int] = {}
    for i in range(n_relations):
        for j in range(n_relations):
            for k in rng.permutation(n_relations):
                k = int(k)
                if k in (i, j) or (i, j) in by_body:
                    continue
                by_body[(i, j)] = k
                inv_body = (int(inv[j]), int(inv[i]))
                if inv_body not in by_body:
                    by_body[inv_body] = int(inv[k])
                else:
                    del by_body[inv_body]
    # "Check and remove any further cyclical rules": an inverse head may land in its own body.
    return [Rule(b[0], b[1], h) for b, h in by_body.items() if h not in b]


def generate_rules(n_relations: int = 20, n_rules: int | None = 76, seed: int = 0) -> list[Rule]:
    """The rule set R_S: ``n_rules`` consistent rules (all of them when None), in a seeded order.

    The order matters: worlds are sliding windows over it (Algorithm 2 "randomly permutes R").
    """
    rng = np.random.default_rng(seed)
    inv = inverse_map(n_relations)
    rules = consistent_rules(n_relations, rng)
    index = {r.body: r for r in rules}
    pairs: list[tuple[Rule, ...]] = []
    seen: set[tuple[int, int]] = set()
    for r in rules:
        if r.body in seen:
            continue
        partner = index.get(inverse_rule(r, inv).body)
        group = (r,) if partner is None or partner == r else (r, partner)
        seen.update(g.body for g in group)
        pairs.append(group)
    chosen = _balanced_heads(pairs, n_relations, n_rules, rng)
    return [chosen[int(i)] for i in rng.permutation(len(chosen))]


def _balanced_heads(
    pairs: list[tuple[Rule, ...]], n_relations: int, n_rules: int | None, rng: np.random.Generator
) -> list[Rule]:
    """``n_rules`` rules from inverse-pair groups in a seeded order, heads as even as possible.

    A group is taken while no head would exceed the cap ceil(n_rules / K); passes with a cap one
    higher follow until ``n_rules`` are taken (a symmetric head's pair counts twice).
    """
    order = [pairs[int(p)] for p in rng.permutation(len(pairs))]
    if n_rules is None:
        return [r for group in order for r in group]
    chosen: list[Rule] = []
    taken: set[int] = set()
    per_head = np.zeros(n_relations, dtype=int)
    cap = -(-n_rules // n_relations)
    while len(chosen) < n_rules and len(taken) < len(order):
        for g, group in enumerate(order):
            if g in taken or len(chosen) >= n_rules:
                continue
            group = group[: n_rules - len(chosen)]
            heads = np.bincount([r.head for r in group], minlength=n_relations)
            if (per_head + heads).max() > cap:
                continue
            taken.add(g)
            per_head += heads
            chosen.extend(group)
        cap += 1
    return chosen


def partition_worlds(rules: list[Rule], width: int = 20, stride: int = 1) -> list[list[Rule]]:
    """Algorithm 2: sliding windows of ``width`` rules with ``stride``.

    The printed loop runs ``i < |R_S| - w``, which gives 56 windows for 76 rules; the paper reports
    57 worlds, i.e. ``i <= |R_S| - w``, which is what we do.
    """
    if width <= 0 or stride <= 0:
        raise ValueError(f"world width and stride must be positive, got w={width}, s={stride}")
    if width > len(rules):
        raise ValueError(f"world width {width} exceeds the {len(rules)} rules available")
    return [rules[i : i + width] for i in range(0, len(rules) - width + 1, stride)]


def similarity(a: list[Rule], b: list[Rule]) -> int:
    """Sim(W_i, W_j) = |R_i ∩ R_j| (appendix A.3)."""
    return len(set(a) & set(b))
