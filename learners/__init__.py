"""How to learn and predict: the learner protocol, the registry, metrics, and every learner.

Importing this package registers every learner family. Heavy dependencies (torch, for the GNN
learners) are imported only when a learner of that family is built, so ``orch learners list``
works without the ``gnn`` extra.
"""

import importlib

from learners.base import Budget, Learner, Model, make_learner, register, registered

# The built-in families: each module registers its learners with @register. A family outside this
# repository needs no edit here: it declares an ``orch.learners`` entry point (docs/adding-a-learner.md).
_LEARNER_MODULES = (
    "learners.baselines",
    "learners.knn",
    "learners.ilp",
    "learners.gnn",
    "learners.testing",
    "learners.template",
)

for _m in _LEARNER_MODULES:
    importlib.import_module(_m)

__all__ = ["Budget", "Learner", "Model", "make_learner", "register", "registered"]
