"""How to learn and predict: the learner protocol, the registry, metrics, and every learner.

Importing this package registers every learner family. Heavy dependencies (torch, for the GNN
learners) are imported only when a learner of that family is built, so ``orch learners list``
works without the ``gnn`` extra.
"""

# The built-in families are listed in learners.base.BUILTIN_MODULES; a family outside this repository
# needs no edit here: it declares an ``orch.learners`` entry point (docs/adding-a-learner.md).
from learners.base import Budget, Learner, Model, load_builtin_learners, make_learner, register, registered

load_builtin_learners()

__all__ = ["Budget", "Learner", "Model", "make_learner", "register", "registered"]
