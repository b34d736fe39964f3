"""A complete, minimal learner to copy when adding one (the walk-through is docs/adding-a-learner.md).

``template`` learns *facts*: every target atom that holds in at least ``threshold`` percent of the
training examples becomes a fact, so its model is a (tiny) clingo program. It is a real learner
(``orch learn --learner template``) but not a good one, so it is registered as a test learner:
``orch learners list --all`` shows it, the plain listing does not. In your copy, drop
``testing=True``, rename the family, and replace :meth:`TemplateLearner.fit`.

What each part of the contract looks like:

* ``@register(pattern, ...)``: the name pattern's named groups become the factory's typed keyword
  arguments (``threshold: int``; a group that did not match is left out, so the default applies).
* ``applies(task) -> (bool, reason)``: say when the learner cannot learn a task at all; the
  orchestrator then records the job as ``not_applicable`` with the reason instead of an error.
* ``fit(task, budget, report)``: check ``budget.expired()`` in long loops, and ``report`` every
  improving model (at least one): when the budget runs out the orchestrator kills the process and
  scores the last reported model.
* The model: ``predict`` (a boolean matrix over ``task.target_atoms``), ``describe`` (one line),
  ``rules`` (clingo text for symbolic models, else None); picklable, as it is shipped out of the
  learner's process.
"""

from __future__ import annotations

import numpy as np

from learners.base import Budget, Report, ignore_report, register
from tasks.task import Split, Task


class FactsModel:
    """A set of facts: the same target atoms hold in every example."""

    def __init__(self, atoms: list[str], threshold: int) -> None:
        self.atoms = atoms
        self.threshold = threshold

    def predict(self, task: Task, split: Split) -> np.ndarray:
        out = np.zeros((split.n_examples, len(task.target_atoms)), dtype=bool)
        for atom in self.atoms:
            column = task.target_atoms.index.get(atom)
            if column is not None:
                out[:, column] = True
        return out

    def describe(self) -> str:
        return (
            f"{len(self.atoms)} fact(s): the target atoms true in >= {self.threshold}% of training examples"
        )

    def rules(self) -> str | None:
        return "".join(f"{atom}.\n" for atom in self.atoms)


@register(
    r"template(?:_(?P<threshold>\d+))?",
    description="Example learner to copy (learners/template.py): facts for the target atoms true in "
    "at least THRESHOLD% of the training examples.",
    params="threshold: percent of training examples, 1..100 (default 100), e.g. template_50",
    example="template",
    symbolic=True,
    testing=True,
)
class TemplateLearner:
    name = "template"

    def __init__(self, threshold: int = 100) -> None:
        if not 1 <= threshold <= 100:
            raise ValueError(f"template needs a threshold in 1..100, got {threshold}")
        self.threshold = threshold

    def applies(self, task: Task) -> tuple[bool, str]:
        if "train" not in task.splits or task.split("train").n_examples == 0:
            return False, f"{self.name} needs training examples; {task.name} has none"
        return True, ""

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> FactsModel:
        report(FactsModel([], self.threshold))  # a first model at once: a timeout still has one
        train = task.split("train")
        held = np.asarray(train.positives.sum(axis=0)).ravel() * 100 >= self.threshold * train.n_examples
        atoms = []
        for column in train.candidates:
            if budget.expired():
                break  # cooperative stop; the orchestrator kills us anyway at the deadline
            if held[column]:
                atoms.append(task.target_atoms.names[column])
        model = FactsModel(atoms, self.threshold)
        report(model)
        return model
