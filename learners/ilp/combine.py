"""Combine: the loop's hypothesis, chosen from the pool after the frame step and after each seed.

Two ways, one protocol (:class:`Hypotheses`), chosen by ``Settings.combine``:

* :class:`Combine` (default), as Popper's combine stage: the hypothesis is the subset of *every*
  consistent rule found so far that covers the most training positives, then has the fewest
  literals: greedy while the loop runs, one clingo optimisation at the end (kept if no worse).
  The next seed is a positive that no rule found so far covers.
* :class:`RelevantCoverStep`, ILASP*'s own step: the shortest set of rules covering the relevant
  examples (the seeds so far), solved multi-shot by :class:`learners.ilp.cover.RelevantCover`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np

from learners.ilp.cover import RelevantCover, ScoredRule, best_partial_cover, greedy_cover
from learners.ilp.meter import Meter
from learners.ilp.pool import covered

if TYPE_CHECKING:
    from learners.ilp.learning import Learning

Step = tuple[list[ScoredRule], np.ndarray]
"""A hypothesis and the training positives that count as covered for choosing the next seed."""


class Hypotheses(Protocol):
    def after_frame(self, framed: list[ScoredRule], hypothesis: list[ScoredRule]) -> Step:
        """After the frame step added the consistent rules ``framed``."""
        ...

    def after_seed(self, new_rules: list[ScoredRule], seed: int, loop: Meter) -> Step:
        """After seed ``seed``'s search added ``new_rules`` (within the loop's allowance ``loop``)."""
        ...

    def final(self, hypothesis: list[ScoredRule], late: list[ScoredRule]) -> list[ScoredRule]:
        """The loop's answer, once more rules (``late``: the frame step's cover) may join."""
        ...


class Combine:
    """The best subset of every consistent rule in the pool (see the module docstring)."""

    def __init__(self, learning: Learning) -> None:
        self.learning = learning

    def _greedy(self) -> list[ScoredRule]:
        pool = self.learning.pool
        return [pool.consistent[i] for i in greedy_cover(pool.consistent, self.learning.targets.positives)]

    def after_frame(self, framed: list[ScoredRule], hypothesis: list[ScoredRule]) -> Step:
        chosen = self._greedy()
        return chosen, covered(chosen)

    def after_seed(self, new_rules: list[ScoredRule], seed: int, loop: Meter) -> Step:
        return self._greedy(), covered(self.learning.pool.consistent)  # seeds: what no rule covers yet

    def final(self, hypothesis: list[ScoredRule], late: list[ScoredRule]) -> list[ScoredRule]:
        """One clingo optimisation over every consistent rule, kept if it covers no fewer
        positives with no more literals than the greedy choice."""
        lr = self.learning
        for rule in late:  # the frame step's cover, kept out of the seeds' way until now
            lr.pool.add_consistent(rule)
        greedy = self._greedy()
        limit = lr.meter.share(0.25)
        ids = best_partial_cover(lr.pool.consistent, lr.n_pos, lr.n_neg, limit.seconds(0.2), meter=limit)
        best = [lr.pool.consistent[i] for i in ids]
        size = [(-len(covered(h)), sum(r.length for r in h)) for h in (best, greedy)]
        return best if size[0] <= size[1] else greedy


class RelevantCoverStep:
    """ILASP*'s cover of the relevant examples (see the module docstring)."""

    def __init__(self, learning: Learning) -> None:
        self.learning = learning
        self.cover = RelevantCover()

    def after_frame(self, framed: list[ScoredRule], hypothesis: list[ScoredRule]) -> Step:
        self.cover.add(framed, [])
        return hypothesis, covered(framed)

    def after_seed(self, new_rules: list[ScoredRule], seed: int, loop: Meter) -> Step:
        self.cover.add(new_rules, [seed])
        limit = loop.part(min(loop.left(), self.learning.meter.left() * 0.2))
        chosen, _ = self.cover.solve(limit.seconds(0.1), limit)
        hypothesis = [self.cover.rules[r] for r in chosen]
        return hypothesis, covered(hypothesis)

    def final(self, hypothesis: list[ScoredRule], late: list[ScoredRule]) -> list[ScoredRule]:
        return hypothesis


def hypotheses(learning: Learning) -> Hypotheses:
    """The combine step the settings ask for."""
    return Combine(learning) if learning.settings.combine else RelevantCoverStep(learning)
