"""What one learning of a target learns: the target itself, its complement or its non-default
atoms, over the plain language or a concept library.

Why a value and not flags on the learner: the learner tries several of these on demand
(``IlaspLearner._learn``, ``IlaspLearner._with_concepts``), and a second learning must never
leave a switch set for the next one. A :class:`Mode` is passed down to every stage that needs it
(the targets it scores against, the head it searches for, the program it writes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from learners.ilp import concepts
from learners.ilp.bias import Bias
from learners.ilp.coverage import Targets, targets_for
from learners.ilp.default_rules import Defaults
from tasks.task import Split, Task

INVERTED = "inv_"
"""Prefix of the invented predicate that holds where the target does not."""


@dataclass(frozen=True)
class Mode:
    """``invert``: learn ``inv_h`` from the swapped labels and write ``h :- not inv_h``.
    ``defaults``: learn only the non-default atoms and add the default rules.
    ``library``: the concept definitions the task was extended with (carried by a program that
    uses one)."""

    invert: bool = False
    defaults: Defaults | None = None
    library: tuple[concepts.Concept, ...] = ()

    def targets(self, task: Task, split: Split, constants, rows=None) -> Targets:
        """The target atoms of ``split`` labelled as this mode learns them."""
        targets = targets_for(task, split, constants, rows)
        if self.defaults is not None:
            return self.defaults.restrict(targets)
        return complement(targets) if self.invert else targets

    def bias(self, bias: Bias) -> Bias:
        """The language with this mode's head (``inv_h`` for the complement)."""
        return replace(bias, head_pred=INVERTED + bias.head_pred) if self.invert else bias

    def program(self, rules: list[str], head: str) -> str:
        """The program of the learned ``rules`` for target ``head``, with what the mode adds."""
        lines = list(rules)
        if self.invert:
            lines.append(f"{head} :- not {INVERTED}{head}.")
        if self.defaults is not None:
            lines.append(self.defaults.rules)
        text = "\n".join(lines)
        defined = concepts.definitions(text, list(self.library))
        return text + "\n" + defined if defined else text  # a program that uses a concept carries it


def complement(targets: Targets) -> Targets:
    """The same candidate atoms with the labels swapped (for learning a target's complement)."""
    flipped = np.setdiff1d(targets.every_key(), targets.positives, assume_unique=True)
    return Targets(targets.table, targets.n_atoms, flipped, targets.rows)
