"""The learner contract: ``Learner.fit(task, budget, report) -> Model`` and ``Model.predict(split)``.

Why this shape:

* ``fit`` sees a :class:`tasks.task.Task` (usually restricted to one flattened predicate by the
  orchestrator) built by :meth:`tasks.task.Task.learning_view`: train and validate (for model
  selection) only. The test split is not in that object, so no learner can read it; callers of
  ``fit`` (the worker, ``orch learn``, the benches) must pass the view, never the whole task.
* ``predict`` maps every example of a split to a boolean matrix over the task's target atoms
  (n_examples x |target_atoms|). Metrics only look at the split's ``candidates`` columns.
* Anytime learning: ``report(model)`` hands each improving model to whoever runs the learner. The
  orchestrator ships it out of the worker immediately, so a job stopped at its budget still has
  the best model found so far (a timeout is a result, never a silent zero).
* ``Model.describe()`` says what the model is; symbolic models also give ``rules()`` as
  clingo-readable text, which is stored with the results.

Learners register themselves by name with :func:`register`. A name may carry parameters, matched by
a regular expression (``knn(?P<k>\\d+)`` accepts ``knn1``, ``knn5``, ``knn13``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp

from tasks.task import Split, Task

Predictions = np.ndarray | sp.spmatrix
"""Boolean (n_examples x |target_atoms|) predictions, dense or sparse."""


@dataclass(frozen=True)
class Budget:
    """A wall-clock budget. ``seconds=None`` means unlimited.

    The orchestrator enforces budgets from outside (it kills the worker); the budget object lets a
    cooperative learner stop early and return its best model itself.
    """

    seconds: float | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def deadline(self) -> float:
        return float("inf") if self.seconds is None else self.started + self.seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0


@runtime_checkable
class Model(Protocol):
    """A learned hypothesis that predicts target atoms from backgrounds."""

    def predict(self, task: Task, split: Split) -> Predictions:
        """Boolean predictions for every example of ``split`` over ``task.target_atoms``."""
        ...

    def describe(self) -> str:
        """What this model is, in a line or a paragraph (k and neighbours, a constant, ...)."""
        ...

    def rules(self) -> str | None:
        """clingo-readable rules for symbolic models; None for the others."""
        ...


Report = Callable[[Model], None]


def ignore_report(model: Model) -> None:
    """The default ``report``: nobody is listening."""


@runtime_checkable
class Learner(Protocol):
    """Learns a :class:`Model` for a task within a budget, reporting improving models as it goes."""

    name: str

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> Model:
        """Learn from ``task`` (a :meth:`~tasks.task.Task.learning_view`: no test split) within ``budget``."""
        ...


@dataclass(frozen=True)
class LearnerSpec:
    """A registered learner family: how its names look and what it needs to run."""

    pattern: str
    factory: Callable[..., Learner]
    description: str
    params: str = ""
    resources: dict[str, float] = field(default_factory=lambda: {"num_cpus": 1})
    example: str = ""
    testing: bool = False

    def match(self, name: str) -> dict[str, str] | None:
        m = re.fullmatch(self.pattern, name)
        return None if m is None else m.groupdict()


_REGISTRY: dict[str, LearnerSpec] = {}


def register(
    pattern: str,
    *,
    description: str,
    params: str = "",
    resources: dict[str, float] | None = None,
    example: str = "",
    testing: bool = False,
) -> Callable[[Callable[..., Learner]], Callable[..., Learner]]:
    """Class/function decorator: make a learner family available by name.

    ``pattern`` is a full-match regular expression; its named groups are passed to the factory as
    string keyword arguments (the factory converts them). ``testing`` marks learners that exist to
    test the orchestrator (they stay usable, but listings leave them out).
    """

    def deco(factory: Callable[..., Learner]) -> Callable[..., Learner]:
        _REGISTRY[pattern] = LearnerSpec(
            pattern, factory, description, params, resources or {"num_cpus": 1}, example or pattern, testing
        )
        return factory

    return deco


class UnknownLearner(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def _load_plugins() -> None:
    """Import the learner modules so that they register themselves (cheap: no torch at import)."""
    import learners  # noqa: F401  (learners/__init__.py imports every learner module)


def spec_for(name: str) -> tuple[LearnerSpec, dict[str, str]]:
    _load_plugins()
    for spec in _REGISTRY.values():
        params = spec.match(name)
        if params is not None:
            return spec, params
    known = ", ".join(s.example for s in registered())
    raise UnknownLearner(f"unknown learner {name!r}; known learners: {known}")


def make_learner(name: str) -> Learner:
    """Instantiate a learner by registry name, e.g. ``make_learner("knn5")``."""
    spec, params = spec_for(name)
    learner = spec.factory(**params)
    learner.name = name
    return learner


def registered(include_testing: bool = False) -> list[LearnerSpec]:
    """Every registered learner family (test learners only when asked)."""
    _load_plugins()
    return [s for s in _REGISTRY.values() if include_testing or not s.testing]


def learner_params(name: str) -> dict[str, Any]:
    """The parameters encoded in a learner name (for the results store's ``params`` column)."""
    _, params = spec_for(name)
    return dict(params)
