"""``gnn-<rep>-<comp>``: the GraphLog GNNs as learners over a common Task (GraphLog encoding).

The Task is decoded back into query graphs (``tasks.graphlog.as_task``); the representation
module sees the union of the training graphs as the world graph. Predictions are one-hot: the
class the network ranks first among the task's target relations. A task restricted to a single
predicate ``rel_rK`` (one orchestrator job) is still trained on the full multi-class problem of the
training queries, and predicts ``rel_rK(u, v)`` exactly when K is the argmax.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from learners.base import Budget, Report, ignore_report
from learners.gnn.state import cpu_state
from tasks.task import Split, Task


@dataclass
class GraphLogGNNModel:
    """Weights on the CPU plus the configuration: picklable, so Ray can ship it out of the worker."""

    net_config: dict
    state: dict
    classes: list[int]
    valid_acc: float
    epoch: int
    # [{"epoch", "loss", "valid_acc"}, ...] up to this model: for the results' ``extra.learning_curve``.
    learning_curve: list[dict] = field(default_factory=list)
    # Seconds of the budget spent before the first training step (importing torch and PyG when the
    # process had not, decoding the task, building the network): a budget shorter than this is
    # overrun by the difference, since there is no model to return before it.
    setup_s: float = 0.0

    def __getstate__(self) -> dict:
        """Pickled with CPU tensors only, wherever the weights were."""
        return {**self.__dict__, "state": cpu_state(self.state)}

    def _net(self):
        from learners.gnn.modules import GraphLogNet, NetConfig
        from learners.gnn.train import pick_device, use_deterministic

        use_deterministic()  # scores repeat too (scatter sums on the GPU)
        net = GraphLogNet(NetConfig(**self.net_config))
        net.load_state_dict(self.state)
        return net.to(pick_device())

    def predict(self, task: Task, split: Split) -> np.ndarray:
        from learners.gnn.data import WorldData
        from learners.gnn.train import predict_classes
        from tasks.graphlog.as_task import decode_split

        graphs, task_classes = decode_split(task, split)
        world = WorldData(task.name, self.classes, *_world_graph(task), {"eval": graphs})
        pred = predict_classes(self._net(), world, "eval")
        column = {c: i for i, c in enumerate(task_classes)}
        out = np.zeros((split.n_examples, len(task.target_atoms)), dtype=bool)
        for i, c in enumerate(pred):
            if int(c) in column:
                out[i, column[int(c)]] = True
        return out

    def describe(self) -> str:
        from learners.gnn.modules import NetConfig, model_name

        c = self.net_config
        return (
            f"GraphLog GNN {model_name(NetConfig(**c))} (dim {c['dim']}), best validation accuracy "
            f"{self.valid_acc:.3f} at epoch {self.epoch} (setup {self.setup_s:.1f} s before training)"
        )

    def rules(self) -> str | None:
        return None


def _world_graph(task: Task) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    from learners.gnn.data import WorldData

    w = WorldData.of_task(task)
    return w.graph_src, w.graph_rel, w.graph_dst, w.graph_nodes


class GraphLogGNNLearner:
    name = "gnn"

    def __init__(
        self, model: str, dim: int | None = None, epochs: int | None = None, seed: int | None = None
    ):
        self.model = model  # <rep>-<comp>[-bi][-rand]: see learners.gnn.modules.parse_model
        self.dim = int(dim) if dim is not None else 64
        self.epochs = int(epochs) if epochs is not None else 500
        self.seed = seed  # None: the job's (fit's ``seed``, else drawn from the job-seeded numpy RNG)

    def applies(self, task: Task) -> tuple[bool, str]:
        """GraphLog tasks only: the network reads query graphs, which other tasks do not encode."""
        from tasks.graphlog.as_task import TARGET

        if task.target == TARGET:
            return True, ""
        return (
            False,
            f"{self.name} learns GraphLog tasks only (target {TARGET!r}), not {task.game}/{task.target}",
        )

    def prepare(self) -> None:
        """Import torch and PyG now (seconds in a fresh process), so that a caller that calls this
        before starting a job's clock does not charge the imports to the budget. Touches no GPU."""
        from learners.gnn.train import use_deterministic

        use_deterministic()

    def fit(
        self, task: Task, budget: Budget, report: Report = ignore_report, seed: int | None = None
    ) -> GraphLogGNNModel:
        """Train within ``budget``; ``seed`` (else the learner's, else one drawn from numpy's global
        generator, which the orchestrator's worker seeds per job) fixes the initialisation, the
        batch order and dropout, so a seeded job reruns to the same weights and scores."""
        from learners.gnn.train import use_deterministic

        use_deterministic()  # first: sets CUBLAS_WORKSPACE_CONFIG before this job's first CUDA call
        from learners.gnn.data import WorldData
        from learners.gnn.modules import GraphLogNet, NetConfig, parse_model
        from learners.gnn.train import TrainConfig, build_net, fit, job_seed, pick_device

        seed = job_seed(seed if seed is not None else self.seed)
        world = WorldData.of_task(task)
        world.check()
        cfg = NetConfig(**parse_model(self.model), dim=self.dim, seed=seed)
        net = build_net(lambda: GraphLogNet(cfg), seed, pick_device())
        best: list[GraphLogGNNModel] = []
        setup_s = time.monotonic() - budget.started

        def improved(state: dict, valid: float) -> None:
            model = GraphLogGNNModel(asdict(cfg), state, world.classes, valid, len(best), setup_s=setup_s)
            best.append(model)
            report(model)

        hist = fit(net, [world], TrainConfig(epochs=self.epochs, seed=seed), budget, on_improve=improved)
        if best:
            best[-1].epoch = hist.best_epoch
            best[-1].learning_curve = list(hist.epochs)
            return best[-1]
        state = cpu_state(net.state_dict())
        return GraphLogGNNModel(asdict(cfg), state, world.classes, float("nan"), -1, setup_s=setup_s)
