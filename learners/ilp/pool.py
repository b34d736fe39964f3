"""The pool: every candidate rule verified on all training examples during one learning.

Consistent rules (no negative covered) are what the cover and the combine step choose from;
partial ones (some negative covered) are kept, within a bound, for the fallback cover. The pool
also remembers each rule's clause, so the fallback selection can score a rule on validate.
"""

from __future__ import annotations

import hashlib

import numpy as np

from learners.ilp.bias import Clause
from learners.ilp.cover import ScoredRule
from learners.ilp.coverage import Facts, Targets, TooLarge, evaluate_clause
from learners.metrics import balanced_accuracy
from tasks import arrays
from tasks.arrays import union


def covered(rules: list[ScoredRule]) -> np.ndarray:
    """The training positives some rule of ``rules`` covers."""
    return union([r.pos for r in rules])


def balanced(tp: int, fp: int, n_pos: int, n_neg: int) -> float:
    """Balanced accuracy from covered positives/negatives and the totals (the paper's edge cases)."""
    return balanced_accuracy(tp, fp, n_neg - fp, n_pos - tp)


def _cost(rule: ScoredRule) -> tuple[int, int]:
    return rule.length, rule.specificity


def _coverage_digest(rule: ScoredRule) -> bytes:
    """A digest of the positives and negatives ``rule`` covers (equal for equal coverage)."""
    h = hashlib.blake2b(digest_size=16)
    for keys in (rule.pos, rule.neg):
        h.update(len(keys).to_bytes(8, "little"))
        h.update(np.ascontiguousarray(keys, dtype=np.int64).data)
    return h.digest()


class Pool:
    """Verified candidate rules: consistent ones (for the cover) and partial ones (for the fallback)."""

    def __init__(self, positives: np.ndarray, n_neg: int, max_keys: int = 16_000_000):
        self.positives = positives
        self.n_neg = n_neg
        self.max_keys = max_keys
        self.consistent: list[ScoredRule] = []
        self.partial_keys = 0
        self._partial: dict[bytes, ScoredRule] = {}
        """The partial rules by coverage digest, in the order kept (a cheaper duplicate takes its
        predecessor's place)."""
        self.clauses: dict[str, Clause] = {}

    @property
    def partial(self) -> list[ScoredRule]:
        """The partial rules kept, in the order kept."""
        return list(self._partial.values())

    def add_partial(self, rule: ScoredRule) -> None:
        """Keep an inconsistent rule for the fallback cover, within ``max_keys`` stored keys.

        Why: a general rule's covered negatives can be millions of keys; kept for every seed they
        made the pool the biggest thing in memory. Past the bound the rules with the worst
        balanced-accuracy gain (pos/P - neg/N) are dropped first. A rule covering exactly what a
        kept one covers is kept only if cheaper, in its place: the fallback chooses by coverage,
        then cost, so a duplicate costs it time and memory and can never be chosen (measured: on a
        generated ``legal`` task 15 partial rules were 5.6M keys, a third of them duplicates).
        """
        digest = _coverage_digest(rule)
        kept = self._partial.get(digest)
        if kept is not None:
            if _cost(rule) < _cost(kept):
                self._partial[digest] = rule
            return
        self._partial[digest] = rule
        self.partial_keys += len(rule.pos) + len(rule.neg)
        if self.partial_keys > self.max_keys:
            p, n = max(len(self.positives), 1), max(self.n_neg, 1)
            ranked = sorted(
                self._partial.items(), key=lambda kv: len(kv[1].pos) / p - len(kv[1].neg) / n, reverse=True
            )
            for worst, r in reversed(ranked[1:]):  # the worst first; the best is always kept
                if self.partial_keys <= self.max_keys // 2:
                    break
                del self._partial[worst]
                self.partial_keys -= len(r.pos) + len(r.neg)

    def verify(self, clause: Clause, facts: Facts, targets: Targets, max_rows: int) -> ScoredRule | None:
        """``clause`` scored on every training example; None if seen before, too large or covering
        no positive."""
        return self.score(clause, facts, targets, max_rows) if self.file(clause) else None

    def file(self, clause: Clause) -> bool:
        """Note ``clause`` as seen; False if it was (every clause is scored at most once)."""
        text = clause.text()
        if text in self.clauses:
            return False
        self.clauses[text] = clause
        return True

    def score(self, clause: Clause, facts: Facts, targets: Targets, max_rows: int) -> ScoredRule | None:
        """``clause`` scored on every training example without filing it (`verify` files it);
        None if too large or covering no positive."""
        try:
            keys = evaluate_clause(clause, facts, targets, max_rows)
        except TooLarge:
            return None
        hit = arrays.isin(keys, self.positives)
        if not hit.any():
            return None
        return ScoredRule(clause.text(), clause.length, keys[hit], keys[~hit], clause.specificity())

    def add_consistent(self, rule: ScoredRule) -> bool:
        """Keep ``rule`` unless a rule no costlier than it covers a superset of its positives.

        Cost is (length, singleton variables): the solver's order of preference.
        """
        for other in self.consistent:
            if _cost(other) <= _cost(rule) and len(other.pos) >= len(rule.pos):
                if arrays.isin(rule.pos, other.pos).all():
                    return False
        self.consistent = [
            o for o in self.consistent if not (_cost(rule) <= _cost(o) and arrays.isin(o.pos, rule.pos).all())
        ]
        self.consistent.append(rule)
        return True

    def add_verified(self, rule: ScoredRule | None) -> bool:
        """File a verified rule: consistent (True if it was kept as such) or partial."""
        if rule is None:
            return False
        if len(rule.neg) == 0:
            return self.add_consistent(rule)
        self.add_partial(rule)
        return False
