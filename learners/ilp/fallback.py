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

import numpy as np

from learners.ilp.baseline import Baseline
from learners.ilp.cover import ScoredRule, best_partial_cover, greedy_partial_cover
from learners.ilp.coverage import TooLarge, evaluate_clause, facts_for
from learners.ilp.learning import LearnedProgram
from learners.ilp.pool import balanced, union

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

    Validate coverage is computed by the same joins as training coverage (cheap); the chosen
    program still predicts through RuleModel like every other symbolic model.
    """
    lr = learning
    models = [lr.program(rules, why) for rules, why in options]
    if "validate" not in lr.task.splits or len(models) == 1:
        return max(models, key=lambda m: (m.train_ba, -len(m.text)))
    split = lr.task.split("validate")
    facts = facts_for(lr.task, split)
    targets = lr.mode.targets(lr.task, split, facts.constants)
    v_pos = len(targets.positives)
    v_neg = facts.n * targets.table.n - v_pos
    scored = []
    for (rules, _), m in zip(options, models, strict=True):
        keys = []
        for r in rules:
            try:
                keys.append(evaluate_clause(lr.pool.clauses[r.text], facts, targets, lr.settings.max_rows))
            except TooLarge:
                keys.append(np.zeros(0, dtype=np.int64))
        derived = union(keys)
        tp = int(np.isin(derived, targets.positives).sum())
        scored.append((balanced(tp, len(derived) - tp, v_pos, v_neg), m.train_ba, -len(m.text), m))
    return max(scored, key=lambda s: s[:3])[3]
