"""GNN learners (torch + PyTorch Geometric, the ``gnn`` extra). torch is imported only when one is built.

* ``gnn-<rep>-<comp>[-bi][-rand][-d<dim>][-e<epochs>]``: the GraphLog models (rep in
  param|gcn|gat, comp in rgcn|egat) on tasks in the GraphLog encoding (``graphlog:DIR`` sources);
  ``-bi`` also passes messages against edges (ours; the paper's models pass them along edges
  only), ``-rand`` starts query nodes from random features (the paper's; ours: u/v markers).
* ``gnn-iggp[-d<dim>][-e<epochs>]``: a relational GNN over state graphs for any task (IGGP too).

Resources: both prefer a GPU (``num_gpus: 1``) and run the same code on the CPU when the process
sees none (see learners/gnn/train.py: pick_device).
"""

from __future__ import annotations

from learners.base import Requirements, register

GPU_PREFERRED: dict[str, float] = {"num_cpus": 1, "num_gpus": 1}


@register(
    r"gnn-(?P<model>(?:param|gcn|gat)-(?:rgcn|egat)(?:-bi)?(?:-rand)?)(?:-d(?P<dim>\d+))?(?:-e(?P<epochs>\d+))?",
    description="GraphLog GNN: relation representation (Param|GCN|GAT) x composition (RGCN|Edge-GAT); "
    "GPU preferred, CPU fallback",
    params="rep, comp; optional -bi (messages also against edges; not the paper's), -rand (random "
    "node features; the paper's), -d<dim> (default 64; the paper uses 200) and -e<epochs> (default 500)",
    resources=GPU_PREFERRED,
    example="gnn-gat-egat",
    requires=Requirements(("torch", "torch_geometric"), extra="gnn", gpu="preferred", sources=("graphlog",)),
)
def graphlog_gnn(model: str, dim: int | None = None, epochs: int | None = None):
    from learners.gnn.graphlog_learner import GraphLogGNNLearner

    return GraphLogGNNLearner(model, dim, epochs)


@register(
    r"gnn-iggp(?:-d(?P<dim>\d+))?(?:-e(?P<epochs>\d+))?",
    description="relational GNN over state graphs scoring every candidate target atom (any task); "
    "GPU preferred, CPU fallback",
    params="optional -d<dim> (default 32) and -e<epochs> (default 100)",
    resources=GPU_PREFERRED,
    example="gnn-iggp",
    requires=Requirements(("torch", "torch_geometric"), extra="gnn", gpu="preferred"),
)
def iggp_gnn(dim: int | None = None, epochs: int | None = None):
    from learners.gnn.iggp import IGGPGNNLearner

    return IGGPGNNLearner(dim, epochs)
