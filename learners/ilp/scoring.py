"""Scoring a learning's programs on the validate split by the joins that test candidates on train.

Why: the learner decides with validate which program stands: the fallback selection chooses
between the last hypothesis, the partial covers and the empty program, and each on-demand step
(complement, defaults, concept library, refit) runs only if the standing program is not exact on
validate and stands only if strictly better there (``IlaspLearner._on_demand``). Scored by clingo,
one such decision took seconds outside the meter: a concept-library program carries its
definitions (lines, counts), which clingo derived again in every example (measured on
tictactoe_3d_small_6player ``terminal``: 19.5 s per call on 5,107 validate examples, against
0.0-0.2 s for a plain program), so a 10 s fit ran 48 s and the sweep's hard stop cut it.

Here a program is scored as the loop tested its rules: each clause's derived keys over
validate's fact tables (:func:`learners.ilp.coverage.evaluate_clause`), over the task the program
was learned on (the concept library's atoms are already in the extended task's tables), with
what the :class:`learners.ilp.mode.Mode` adds computed as sets: the complement is every
candidate atom the invented predicate does not hold for; a default atom holds in each example
where none of its key's other values is derived. The counts are clingo's (tests compare them
program by program); where a join is too large, or a default rule names an atom the split does
not score, the program is scored by clingo as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from learners.ilp.bias import Clause
from learners.ilp.coverage import Facts, Targets, TooLarge, evaluate_clause, facts_for, targets_for
from learners.ilp.evaluate import RuleModel
from learners.ilp.meter import Meter
from learners.ilp.mode import Mode
from learners.metrics import Counts, evaluate, pool
from tasks import arrays
from tasks.task import Task

SPLIT = "validate"


@dataclass
class Scorer:
    """Scores programs of one learning (its task, mode and clauses) on validate, memoised by rules.

    ``clauses`` maps a rule's text to its clause (the learning's pool: every rule a program of
    this learning is written from is in it). Scoring a program spends one unit of work per rule
    on ``meter`` (as a verification on train does); a memoised answer spends nothing.
    """

    task: Task
    mode: Mode
    clauses: Mapping[str, Clause]
    max_rows: int
    meter: Meter
    _memo: dict[tuple[str, ...], Counts] = field(default_factory=dict, repr=False)

    @property
    def has_split(self) -> bool:
        return SPLIT in self.task.splits

    @cached_property
    def _tables(self) -> tuple[Facts, Targets]:
        split = self.task.split(SPLIT)
        facts = facts_for(self.task, split)
        return facts, targets_for(self.task, split, facts.constants)

    def counts(self, rules: Sequence[str], program: RuleModel) -> Counts:
        """The confusion counts on validate of ``program``, written (by this learning's mode) from
        ``rules``: by joins, or by clingo where the joins cannot say (see the module docstring)."""
        key = tuple(rules)
        if key not in self._memo:
            self.meter.spend(max(len(rules), 1))
            found = self.joined(rules)
            if found is None:
                found = pool(evaluate(program, self.task, [SPLIT])[SPLIT].values())
            self._memo[key] = found
        return self._memo[key]

    def balanced_accuracy(self, rules: Sequence[str], program: RuleModel) -> float:
        return self.counts(rules, program).balanced_accuracy

    def joined(self, rules: Sequence[str]) -> Counts | None:
        """The counts by joins; None where a join is too large or a default names an unscored atom."""
        facts, targets = self._tables
        n_atoms, n_ex = targets.n_atoms, facts.n
        try:
            keys = [evaluate_clause(self.clauses[r], facts, targets, self.max_rows) for r in rules]
        except TooLarge:
            return None
        derived = arrays.unique(np.concatenate(keys)) if keys else np.zeros(0, dtype=np.int64)
        scored = targets.table.cols["atom"]
        if self.mode.invert:  # h :- not inv_h: every scored atom the invented predicate misses
            derived = np.setdiff1d(targets.every_key(), derived, assume_unique=True)
        defaults = self.mode.defaults
        if defaults is not None:
            if not all(arrays.isin(others, scored).all() for others in defaults.others):
                return None
            held = [derived]
            for atom, others in zip(defaults.atoms.tolist(), defaults.others, strict=True):
                if atom in scored:  # a default holds where no other value of its key is derived
                    other_held = arrays.isin(derived % max(n_atoms, 1), others)
                    free = np.setdiff1d(np.arange(n_ex, dtype=np.int64), derived[other_held] // n_atoms)
                    held.append(free * n_atoms + atom)
            derived = arrays.unique(np.concatenate(held))
        tp = int(arrays.isin(derived, targets.positives).sum())
        fp, fn = len(derived) - tp, len(targets.positives) - tp
        return Counts(tp, fp, n_ex * targets.table.n - tp - fp - fn, fn)
