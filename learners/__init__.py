"""How to learn and predict: the learner protocol, the registry, metrics, and every learner.

Importing this package registers every learner family. Heavy dependencies (torch, for the GNN
learners) are imported only when a learner of that family is built, so ``orch learners list``
works without the ``gnn`` extra.
"""

import importlib

from learners.base import Budget, Learner, Model, make_learner, register, registered

# Each module registers its learners with @register. A new learner family is one new module here.
_LEARNER_MODULES = (
    "learners.baselines",
    "learners.knn",
    "learners.ilp",
    "learners.gnn",
    "learners.testing",
)

for _m in _LEARNER_MODULES:
    importlib.import_module(_m)

__all__ = ["Budget", "Learner", "Model", "make_learner", "register", "registered"]
