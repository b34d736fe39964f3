"""How to learn and predict: the learner protocol, the registry, metrics, and every learner.

Every learner family, orch's own and third parties' alike, registers through the ``orch.learners``
entry-point group (orch's own are declared in its pyproject.toml; docs/adding-a-learner.md), loaded
on first use of the registry. Heavy dependencies (torch, for the GNN learners) are imported only
when a learner of that family is built, so ``orch learners list`` works without the ``gnn`` extra.
"""

from learners.base import Budget, Learner, Model, make_learner, register, registered

__all__ = ["Budget", "Learner", "Model", "make_learner", "register", "registered"]
