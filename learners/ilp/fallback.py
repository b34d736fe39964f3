"""Fallback selection: a sensible program when the loop ends without covering every positive.

ILASP* returns nothing there (a budget, an unsatisfiable space, a bias too small). Here the
learner chooses, on the validate split, between the loop's last hypothesis, the *best partial
cover* (clingo maximising training balanced accuracy over consistent and inconsistent rules, plus
the rules of :func:`baseline_clauses`) and the empty program (when validate says every learned
program is worse than predicting nothing). The program returned is flagged ``fallback``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from learners.ilp.bias import Bias, Clause, Literal
from learners.ilp.cover import ScoredRule, best_partial_cover
from learners.ilp.coverage import Targets, TooLarge, evaluate_clause, facts_for
from learners.ilp.learning import LearnedProgram
from learners.ilp.pool import balanced, union
from tasks.task import Task, parse_atom

if TYPE_CHECKING:
    from learners.ilp.learning import Learning

Option = tuple[list[ScoredRule], str]
"""A candidate program's rules and the status it would be reported with."""


def fallback(learning: Learning, hypothesis: list[ScoredRule], status: str) -> LearnedProgram:
    """The best, on validate, of the last hypothesis, the best partial cover and the empty program."""
    lr = learning
    with lr.profile.timing("select"):
        for clause in baseline_clauses(lr.task, lr.bias, lr.targets, lr.facts.n):
            rule = lr.verify(clause)
            if rule is not None:
                lr.pool.add_partial(rule)
        candidates = lr.pool.consistent + lr.pool.partial
        limit = lr.meter.share(0.5)
        ids = best_partial_cover(candidates, lr.n_pos, lr.n_neg, limit.seconds(0.2), meter=limit)
        options = [
            (hypothesis, status),
            ([candidates[i] for i in ids], f"{status}; best partial cover"),
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


def baseline_clauses(
    task: Task, bias: Bias, targets: Targets, n_examples: int, max_facts: int = 64
) -> list[Clause]:
    """Rules of the language that need no search, as material for the fallback cover.

    The inertia rule ``next_p(X..) :- true_p(X..)`` (when ``true_p`` has the same types), and the
    ground facts of the atoms that are positive in at least half of the training examples (the
    *Mean* baseline, written as rules). Only the BA-optimal cover decides whether they are used.
    """
    out: list[Clause] = []
    head, types = bias.head_pred, bias.head_types
    if head.startswith("next_") and bias.body_types.get("true_" + head[5:]) == types and types:
        args = tuple(range(len(types)))
        out.append(Clause(head, args, (Literal("true_" + head[5:], args),), types))
    if n_examples:
        atoms, counts = np.unique(targets.positives % targets.n_atoms, return_counts=True)
        frequent = atoms[counts * 2 >= n_examples]
        frequent = frequent[np.argsort(-counts[counts * 2 >= n_examples], kind="stable")][:max_facts]
        for a in frequent:
            out.append(Clause(head, parse_atom(task.target_atoms.names[int(a)])[1], (), ()))
    return out
