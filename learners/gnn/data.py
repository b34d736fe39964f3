"""GraphLog data for the GNNs: a world's tensors and mini-batches of query graphs.

A :class:`WorldData` is what a GNN needs from one world, whichever way it arrived (a generated or
released suite, or a common :class:`tasks.task.Task` decoded back into graphs): the world graph
for the representation module, the classes, and the query graphs per split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from tasks.graphlog.as_task import decode_split
from tasks.graphlog.generator import World
from tasks.graphlog.graphs import GraphSet
from tasks.task import Task

# Relation ids the networks can embed; GraphLog uses K = 20 and ids must stay below OTHER.
MAX_RELATIONS = 64
# The class of a query none of the task's target relations holds for: a task restricted to one
# predicate (``Task.for_predicate("rel_r5")``, one orchestrator job) becomes "r5 or other".
OTHER = MAX_RELATIONS - 1


@dataclass
class WorldData:
    name: str
    classes: list[int]
    graph_src: np.ndarray
    graph_rel: np.ndarray
    graph_dst: np.ndarray
    graph_nodes: int
    splits: dict[str, GraphSet]

    @classmethod
    def of_world(cls, w: World) -> WorldData:
        from tasks.graphlog.as_task import world_classes

        return cls(
            w.name, world_classes(w), w.graph_src, w.graph_rel, w.graph_dst, w.graph_nodes, dict(w.splits)
        )

    @classmethod
    def of_task(cls, task: Task, max_graph_examples: int = 1000) -> WorldData:
        """A Task in the GraphLog encoding; the world graph is the union of (up to 1000) train graphs."""
        splits: dict[str, GraphSet] = {}
        classes: list[int] = []
        for name, s in task.splits.items():
            splits[name], classes = decode_split(task, s)
        if any((g.target < 0).any() for g in splits.values()):
            for g in splits.values():
                g.target[g.target < 0] = OTHER
            classes = classes + [OTHER]
        train = splits["train"].subset(range(min(len(splits["train"]), max_graph_examples)))
        offsets = np.repeat(np.cumsum(np.r_[0, train.n_nodes[:-1]]), np.diff(train.edge_ptr)).astype(np.int32)
        return cls(
            task.name,
            classes,
            train.src + offsets,
            train.rel,
            train.dst + offsets,
            int(train.n_nodes.sum()),
            splits,
        )

    def check(self) -> None:
        used = [int(g.rel.max(initial=0)) for g in self.splits.values()] + [
            c for c in self.classes if c != OTHER
        ]
        if max(used + [0]) >= OTHER:
            raise ValueError(f"world {self.name}: relation id {max(used)} exceeds the supported {OTHER - 1}")

    def class_mask(self, device: torch.device) -> torch.Tensor:
        """Logit mask: queries resolve only to this world's classes."""
        m = torch.full((MAX_RELATIONS,), float("-inf"), device=device)
        m[self.classes] = 0.0
        return m


@dataclass
class Batch:
    """Query graphs stacked into one disconnected graph (node ids offset per graph)."""

    n_nodes: int
    src: torch.Tensor
    rel: torch.Tensor
    dst: torch.Tensor
    query_u: torch.Tensor
    query_v: torch.Tensor
    target: torch.Tensor

    @property
    def size(self) -> int:
        return len(self.target)


def collate(g: GraphSet, idx: np.ndarray, device: torch.device) -> Batch:
    n = g.n_nodes[idx].astype(np.int64)
    offset = np.r_[0, np.cumsum(n)[:-1]]
    starts, ends = g.edge_ptr[idx], g.edge_ptr[idx + 1]
    take = (
        np.concatenate([np.arange(a, b) for a, b in zip(starts, ends, strict=True)])
        if len(idx)
        else np.zeros(0)
    )
    take = take.astype(np.int64)
    shift = np.repeat(offset, ends - starts)

    def t(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.asarray(a, dtype=np.int64), device=device)

    return Batch(
        int(n.sum()), t(g.src[take] + shift), t(g.rel[take]), t(g.dst[take] + shift),
        t(g.query_u[idx] + offset), t(g.query_v[idx] + offset), t(g.target[idx]),
    )  # fmt: skip


def batches(g: GraphSet, size: int, device: torch.device, rng: np.random.Generator | None = None):
    """Mini-batches over a split, shuffled when ``rng`` is given."""
    order = rng.permutation(len(g)) if rng is not None else np.arange(len(g))
    for i in range(0, len(order), size):
        yield collate(g, order[i : i + size], device)
