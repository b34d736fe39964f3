"""GraphLog data for the GNNs: a world's tensors and mini-batches of query graphs.

A :class:`WorldData` is what a GNN needs from one world, whichever way it arrived (a generated or
released suite, or a common :class:`tasks.task.Task` decoded back into graphs): the world graph
for the representation module, the classes, and the query graphs per split.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from learners.gnn.incidence import NONE, incidence_table, shifted
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
    # Per-device caches (the class mask, each split's DeviceSplit): built once, reused every step, so
    # a step copies nothing from the host. Not part of what a world is (no compare, no repr).
    _cache: dict = field(default_factory=dict, init=False, compare=False, repr=False)

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
        """Logit mask: queries resolve only to this world's classes (built once per device: a list
        index would otherwise copy from the host on every forward)."""
        key = ("class_mask", str(device))
        if key not in self._cache:
            m = torch.full((MAX_RELATIONS,), float("-inf"))
            m[self.classes] = 0.0
            self._cache[key] = m.to(device)
        return self._cache[key]

    def on_device(self, split: str, device: torch.device) -> DeviceSplit:
        """The split's graphs resident on ``device`` (copied once per world, split and device)."""
        key = ("split", split, str(device))
        if key not in self._cache:
            self._cache[key] = DeviceSplit(self.splits[split], device)
        return self._cache[key]


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
    # The relation ids that may occur in ``rel`` (sorted, fixed per split), when known: lets RGCN
    # size its per-relation weights without ``torch.unique`` (a host sync on the GPU) per batch.
    relations: torch.Tensor | None = None
    # Per-query loss weights: 0 for the padding queries of a padded batch (learners.gnn.graphstep).
    weight: torch.Tensor | None = None
    # Incidence tables (learners.gnn.incidence): per node, its incoming (``into``) and outgoing
    # (``out_of``) edges; the model builds them, with a host sync, for a batch that lacks them.
    into: torch.Tensor | None = None
    out_of: torch.Tensor | None = None

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

    nodes, src, dst = int(n.sum()), g.src[take] + shift, g.dst[take] + shift
    return Batch(
        nodes, t(src), t(g.rel[take]), t(dst), t(g.query_u[idx] + offset), t(g.query_v[idx] + offset),
        t(g.target[idx]), into=t(incidence_table(dst, nodes)), out_of=t(incidence_table(src, nodes)),
    )  # fmt: skip


def batches(g: GraphSet, size: int, device: torch.device, rng: np.random.Generator | None = None):
    """Mini-batches over a split, shuffled when ``rng`` is given."""
    order = rng.permutation(len(g)) if rng is not None else np.arange(len(g))
    for i in range(0, len(order), size):
        yield collate(g, order[i : i + size], device)


class DeviceSplit:
    """A split's query graphs as flat tensors resident on one device, batched by index arithmetic.

    Why: at batch 32 a GPU step is bound by per-batch overhead. The host path (:func:`collate`)
    builds every batch in numpy and copies it to the device. Here the split is copied once; each
    epoch's batches are then gathered on the device from one permutation (a single host-to-device
    copy of ``len(split)`` indices per epoch) and handed out as slices (views) of the permuted
    tensors. Batch sizes in nodes and edges are computed on the host from host-side counts, so no
    step waits for the device. The batches are exactly those :func:`batches` builds from the same
    order (same graphs, edges in the same order, the same node numbering).
    """

    def __init__(self, g: GraphSet, device: torch.device):
        self.device = device
        self.n_graphs = len(g)
        self.n_nodes_host = np.asarray(g.n_nodes, dtype=np.int64)
        self.n_edges_host = np.diff(np.asarray(g.edge_ptr, dtype=np.int64))

        def t(a: np.ndarray) -> torch.Tensor:
            return torch.as_tensor(np.asarray(a, dtype=np.int64)).to(device)

        self.src, self.rel, self.dst = t(g.src), t(g.rel), t(g.dst)
        self.edge_start, self.n_nodes, self.n_edges = t(g.edge_ptr[:-1]), t(g.n_nodes), t(self.n_edges_host)
        self.query_u, self.query_v, self.target = t(g.query_u), t(g.query_v), t(g.target)
        self.relations = t(np.unique(np.asarray(g.rel)))
        # Incidence tables of every graph, one row per node (rows of a graph together, its edges
        # numbered from 0), as wide as the split's largest in- and out-degree: every batch of the
        # split has the same widths (one shape for a CUDA graph).
        edge_ptr = np.asarray(g.edge_ptr, dtype=np.int64)
        node_ptr = np.r_[0, np.cumsum(self.n_nodes_host)]
        owner = np.repeat(np.arange(self.n_graphs), np.asarray(self.n_edges_host, dtype=np.int64))
        first_edge = np.repeat(edge_ptr[:-1], self.n_nodes_host)  # per node: its graph's first edge
        self.node_start = t(node_ptr[:-1])

        def local_table(end: np.ndarray) -> torch.Tensor:
            table = incidence_table(end + node_ptr[owner], int(node_ptr[-1]))
            return t(np.where(table == NONE, NONE, table - first_edge[:, None]))

        self.into, self.out_of = local_table(np.asarray(g.dst)), local_table(np.asarray(g.src))

    def epoch(self, order: np.ndarray, size: int) -> list[Batch]:
        """The batches of ``order`` (graph indices) in chunks of ``size``, collated on the device."""
        n = len(order)
        if n == 0:
            return []
        nodes = self.n_nodes_host[order]
        edges = self.n_edges_host[order]
        first = np.arange(0, n, size)
        batch_nodes = np.add.reduceat(nodes, first)
        edge_bounds = np.r_[0, np.cumsum(np.add.reduceat(edges, first))]
        total_edges = int(edge_bounds[-1])
        idx = torch.as_tensor(np.asarray(order, dtype=np.int64)).to(self.device, non_blocking=True)
        # node offset of each graph inside its batch: exclusive cumsum, restarted at every batch
        n_t = self.n_nodes[idx]
        before = torch.cumsum(n_t, 0) - n_t
        batch_of = torch.arange(n, device=self.device) // size
        node_off = before - before[batch_of * size]
        # every edge of the permuted graphs, in order: owner graph (position) and source index
        m_t = self.n_edges[idx]
        owner = torch.repeat_interleave(torch.arange(n, device=self.device), m_t, output_size=total_edges)
        edge_before = torch.cumsum(m_t, 0) - m_t
        take = (
            self.edge_start[idx][owner] + torch.arange(total_edges, device=self.device) - edge_before[owner]
        )
        shift = node_off[owner]
        src, dst, rel = self.src[take] + shift, self.dst[take] + shift, self.rel[take]
        qu, qv, tgt = self.query_u[idx] + node_off, self.query_v[idx] + node_off, self.target[idx]
        into, out_of = self._tables(
            idx, n_t, edge_before - edge_before[batch_of * size], int(batch_nodes.sum())
        )
        node_bounds = np.r_[0, np.cumsum(batch_nodes)]
        out = []
        for k, a in enumerate(first.tolist()):
            b, e0, e1 = min(a + size, n), int(edge_bounds[k]), int(edge_bounds[k + 1])
            v0, v1 = int(node_bounds[k]), int(node_bounds[k + 1])
            out.append(
                Batch(int(batch_nodes[k]), src[e0:e1], rel[e0:e1], dst[e0:e1], qu[a:b], qv[a:b], tgt[a:b],
                      self.relations, into=into[v0:v1], out_of=out_of[v0:v1])
            )  # fmt: skip
        return out

    def _tables(
        self, idx: torch.Tensor, n_t: torch.Tensor, edge_off: torch.Tensor, total_nodes: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The incidence tables of the permuted graphs ``idx`` (``n_t`` nodes each), every graph's
        rows shifted by ``edge_off``, the position of its first edge in its batch."""
        owner = torch.repeat_interleave(
            torch.arange(len(idx), device=self.device), n_t, output_size=total_nodes
        )
        node_before = torch.cumsum(n_t, 0) - n_t
        rows = (
            self.node_start[idx][owner] + torch.arange(total_nodes, device=self.device) - node_before[owner]
        )
        off = edge_off[owner][:, None]
        return shifted(self.into[rows], off), shifted(self.out_of[rows], off)


def device_batches(
    world: WorldData, split: str, size: int, device: torch.device, rng: np.random.Generator | None = None
) -> list[Batch]:
    """The batches :func:`batches` would give (same ``rng`` draws, same order), collated on the device."""
    g = world.on_device(split, device)
    order = rng.permutation(g.n_graphs) if rng is not None else np.arange(g.n_graphs)
    return g.epoch(order, size)
