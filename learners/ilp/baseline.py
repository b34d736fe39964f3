"""Baseline stage: the programs of the language that need no search, reported before any search.

Why: the worker scores the last program a fit reported when the budget stops it. Before this
stage a fit's first report came after the frame step and a first seed's search; on a big task
(millions of target atoms) that took the whole 10 s budget, and the row scored as predicting
nothing (0.5), where the inertia rule alone scores 0.95 (measured on the GGP benchmark at 10 s:
67 of 911 predicates stored no program, 48 of them cut by the budget before any report). So the
first report is the best of these rules on train, and the anytime contract
(`loop.LoopState.hand_out`) only reports a better hypothesis after it.

The rules are the inertia rule ``next_p(X..) :- true_p(X..)`` (when ``true_p`` has the head's
types) and the ground facts of the target atoms positive in at least half of the training
examples (the *Mean* baseline, written as rules). They are scored here without entering the pool
(a search that finds the same clause files it as usual); the fallback files them
(:meth:`Baseline.file`) for its best partial cover and offers their best subset as an option.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from learners.ilp.bias import Bias, Clause, Literal
from learners.ilp.cover import ScoredRule
from learners.ilp.coverage import Targets
from learners.ilp.learning import LearnedProgram
from learners.ilp.pool import balanced, union
from tasks.task import Task, parse_atom

if TYPE_CHECKING:
    from learners.ilp.learning import Learning


@dataclass
class Baseline:
    """The baseline clauses with their training scores (None: too large or no positive), and the
    subset of them with the best training balanced accuracy."""

    scored: list[tuple[Clause, ScoredRule | None]]
    rules: list[ScoredRule]

    def file(self, learning: Learning) -> None:
        """The clauses into the pool as partial rules, as `Learning.verify` would file them: one
        unit of work each, a clause the pool has seen skipped."""
        pool = learning.pool
        for clause, rule in self.scored:
            learning.meter.spend()
            if pool.file(clause) and rule is not None:
                pool.add_partial(rule)


def baseline(learning: Learning) -> Baseline:
    """Score the baseline clauses on train and choose their best subset (greedy on balanced accuracy)."""
    lr = learning
    clauses = baseline_clauses(lr.task, lr.bias, lr.targets, lr.facts.n)
    scored = [(c, lr.pool.score(c, lr.facts, lr.targets, lr.settings.max_rows)) for c in clauses]
    return Baseline(scored, best_subset([r for _, r in scored if r is not None], lr.n_pos, lr.n_neg))


def report_baseline(learning: Learning, base: Baseline) -> float:
    """Report the baseline program (flagged ``fallback``: not a learned answer); its train BA."""
    model: LearnedProgram = learning.program(base.rules, "baseline")
    model.fallback = True
    learning.report(model)
    return model.train_ba


def best_subset(rules: list[ScoredRule], n_pos: int, n_neg: int) -> list[ScoredRule]:
    """Rules added in order of their own gain (covered positives' share minus negatives' share),
    each kept only if the union's training balanced accuracy goes up."""
    p, n = max(n_pos, 1), max(n_neg, 1)
    chosen: list[ScoredRule] = []
    pos = neg = np.zeros(0, dtype=np.int64)
    best = balanced(0, 0, n_pos, n_neg)
    for rule in sorted(rules, key=lambda r: len(r.pos) / p - len(r.neg) / n, reverse=True):
        more_pos, more_neg = union([pos, rule.pos]), union([neg, rule.neg])
        ba = balanced(len(more_pos), len(more_neg), n_pos, n_neg)
        if ba > best:
            chosen.append(rule)
            pos, neg, best = more_pos, more_neg, ba
    return chosen


def baseline_clauses(
    task: Task, bias: Bias, targets: Targets, n_examples: int, max_facts: int = 64
) -> list[Clause]:
    """The inertia rule (when ``true_p`` has the head's types) and the ground facts of the atoms
    positive in at least half of the training examples (at most ``max_facts``, most frequent first)."""
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
