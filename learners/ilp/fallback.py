"""Fallback selection: a sensible program when the loop ends without covering every positive.

ILASP* returns nothing there (a budget, an unsatisfiable space, a bias too small). Here the
learner chooses, on the validate split, between the loop's last hypothesis, the *best partial
cover* (clingo maximising training balanced accuracy over consistent and inconsistent rules, plus
the baseline rules of :mod:`learners.ilp.baseline`), the baseline program reported before the
search and the empty program (when validate says every learned program is worse than predicting
nothing). The program returned is flagged ``fallback``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from learners.ilp.baseline import Baseline
from learners.ilp.cover import ScoredRule, best_partial_cover, greedy_partial_cover
from learners.ilp.learning import LearnedProgram

if TYPE_CHECKING:
    from learners.ilp.learning import Learning

Option = tuple[list[ScoredRule], str]
"""A candidate program's rules and the status it would be reported with."""


def fallback(
    learning: Learning, hypothesis: list[ScoredRule], status: str, base: Baseline, reported: float
) -> LearnedProgram:
    """The best, on validate, of the last hypothesis, the best partial cover, the baseline program
    and the empty program.

    Anytime: the greedy partial cover is reported first when it is better on train than the last
    program reported (``reported``, its train balanced accuracy), so that a job cut by the hard
    stop during the optimisation or the selection scores it, not a baseline reported seconds
    before (a loop whose seeds found only rules that cover negatives reports nothing else).
    """
    lr = learning
    with lr.profile.timing("select"):
        base.file(lr)
        candidates = lr.pool.consistent + lr.pool.partial
        greedy = greedy_partial_cover(candidates, lr.n_pos, lr.n_neg)
        early = lr.program([candidates[i] for i in greedy], f"{status}; greedy partial cover")
        if early.train_ba > reported:
            early.fallback = True
            lr.report(early)
        limit = lr.meter.share(0.5)
        ids = best_partial_cover(
            candidates, lr.n_pos, lr.n_neg, limit.seconds(0.2), meter=limit, greedy=greedy
        )
        options = [
            (hypothesis, status),
            ([candidates[i] for i in ids], f"{status}; best partial cover"),
            *([(base.rules, f"{status}; baseline")] if base.rules else []),
            ([], f"{status}; empty"),
        ]
        best = select(lr, options)
        best.fallback = True
    lr.report(best)
    return best


def select(learning: Learning, options: list[Option]) -> LearnedProgram:
    """The option with the best validate balanced accuracy (train if no validate), then shortest.

    Validate is scored by the same joins as training coverage (:mod:`learners.ilp.scoring`: cheap,
    the counts clingo gives); the chosen program still predicts through RuleModel like every
    other symbolic model.
    """
    lr = learning
    models = [lr.program(rules, why) for rules, why in options]
    if not lr.scorer.has_split or len(models) == 1:
        return max(models, key=lambda m: (m.train_ba, -len(m.text)))
    scored = [(lr.scorer.balanced_accuracy(m.learned_rules, m), m.train_ba, -len(m.text), m) for m in models]
    return max(scored, key=lambda s: s[:3])[3]
