"""One training step, run eagerly or replayed from a CUDA graph (issue 26, item 4).

Why: at the paper's batch size (32 query graphs) a GNN training step is hundreds of tiny kernels,
and the GPU waits for the host to launch them. Measured on an H200 with
``bench/profile_gnn_step.py``: gat-egat launched 1,380 kernels per step, about 3 ms of device
work behind about 37 ms of host time (560 graphs/s). A CUDA graph records the whole step once
(forward, backward, optimizer) and replays it with one launch: the same step on one fixed batch
replayed at 8,300 graphs/s.

A graph has fixed shapes, so every batch of a split is padded to the largest batch the split can
hold: the nodes and edges of its ``size`` largest query graphs, plus one padding node. Padding
edges join the padding node to itself (and are in no incidence table, so they reach no node),
padding queries ask about it and weigh 0 in the loss, and nodes past a batch's own are isolated.
Real nodes exchange messages only with real nodes, so the loss and the gradients are the unpadded
batch's (tests/learners/gnn/test_graphstep.py checks this on the CPU, where the same padded step
runs eagerly; only dropout draws differ, since they cover the padded tensors).

Per (world, split): the first ``WARMUP_STEPS`` steps run eagerly on a side stream (CUDA's lazy
initialisation must happen outside a capture, and they create the optimizer's state), then the
step is captured and every later batch is copied into the graph's input buffers and replayed.
The learning rate is a constant inside a graph, so a change (the plateau schedule) re-captures.
At most ``MAX_SLOTS`` (world, split) graphs are kept (each holds its own memory pool).
A capture that fails falls back to eager steps for the rest of the run, with a warning.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from learners.gnn.data import Batch, DeviceSplit, WorldData
from learners.gnn.incidence import NONE

WARMUP_STEPS = 2
# Captured (world, split) slots kept at once: each graph holds a private memory pool, so a
# multi-task run over many worlds drops the least recently used one (re-captured when it returns).
MAX_SLOTS = 8


def padded_shape(split: DeviceSplit, size: int) -> tuple[int, int]:
    """(nodes, edges) of the largest batch of ``size`` graphs the split can form, plus a padding node."""
    nodes = np.sort(split.n_nodes_host)[::-1][:size].sum() + 1
    edges = np.sort(split.n_edges_host)[::-1][:size].sum()
    return int(nodes), max(int(edges), 1)


def empty_padded(
    n_nodes: int, n_edges: int, size: int, relations: torch.Tensor | None, device: torch.device,
    widths: tuple[int, int] | None = None,
) -> Batch:  # fmt: skip
    """Input buffers of a padded batch: ``n_nodes`` nodes (the last one the padding node), ``n_edges``
    edges and ``size`` queries, all pointing at the padding node until :func:`fill_padded`; with
    ``widths``, incidence tables of those widths (in and out), empty (padding edges are in none)."""
    pad = n_nodes - 1

    def full(n: int | tuple[int, int], value: int) -> torch.Tensor:
        return torch.full(n if isinstance(n, tuple) else (n,), value, dtype=torch.long, device=device)

    into, out_of = (None, None) if widths is None else (full((n_nodes, w), NONE) for w in widths)
    return Batch(
        n_nodes, full(n_edges, pad), full(n_edges, 0), full(n_edges, pad), full(size, pad), full(size, pad),
        full(size, 0), relations, weight=torch.zeros(size, device=device), into=into, out_of=out_of,
    )  # fmt: skip


def fill_padded(buf: Batch, b: Batch) -> None:
    """Copy batch ``b`` into the head of ``buf``; the tails point at the padding node, and padding
    queries take the batch's first target (a class of the world, so their logits stay finite) with
    weight 0. Sizes are known on the host: no sync."""
    pad = buf.n_nodes - 1
    widths = [
        (t.shape[1], u.shape[1])
        for t, u in ((b.into, buf.into), (b.out_of, buf.out_of))
        if t is not None and u is not None
    ]
    if (
        b.n_nodes > pad
        or len(b.src) > len(buf.src)
        or b.size > buf.size
        or any(w > room for w, room in widths)
    ):
        raise ValueError(
            f"a batch of {b.n_nodes} nodes, {len(b.src)} edges and {b.size} queries does not fit the padded "
            f"shape ({pad} nodes, {len(buf.src)} edges, {buf.size} queries)"
            + "".join(f"; incidence rows {w} wide, room for {room}" for w, room in widths if w > room)
        )
    q = b.size
    for into, src, fill in ((buf.src, b.src, pad), (buf.dst, b.dst, pad), (buf.rel, b.rel, 0),
                            (buf.query_u, b.query_u, pad), (buf.query_v, b.query_v, pad)):  # fmt: skip
        into[: len(src)].copy_(src)
        into[len(src) :].fill_(fill)
    for room, table in ((buf.into, b.into), (buf.out_of, b.out_of)):
        if room is not None and table is not None:
            room[: len(table), : table.shape[1]].copy_(table)
            room[: len(table), table.shape[1] :].fill_(NONE)
            room[len(table) :].fill_(NONE)
    buf.target[:q].copy_(b.target)
    buf.target[q:].copy_(b.target[:1].expand(buf.size - q))
    assert buf.weight is not None
    buf.weight[:q].fill_(1.0)
    buf.weight[q:].fill_(0.0)


@dataclass
class _Slot:
    """A (world, split)'s padded input buffers and, once captured, the graph that reads them."""

    batch: Batch
    steps: int = 0
    graph: Any = None  # torch.cuda.CUDAGraph
    loss: torch.Tensor | None = None
    lr: float = float("nan")


class StepRunner:
    """Runs training steps (``loss_of(world, batch, cache)``, then ``opt``): eagerly, or padded and
    replayed from CUDA graphs.

    ``graphs``: capture on CUDA (the optimizer must be capturable: ``learners.gnn.train.make_optimizer``).
    ``padded`` without ``graphs`` runs the padded step eagerly (the CPU tests of the padding).
    """

    def __init__(self, opt: torch.optim.Optimizer, loss_of: Any, graphs: bool, padded: bool):
        self.opt, self.loss_of = opt, loss_of
        self.graphs, self.padded = graphs, padded or graphs
        self.slots: dict[tuple[str, str, int], _Slot] = {}

    def step(self, world: WorldData, split: str, b: Batch, size: int) -> torch.Tensor:
        """One training step on batch ``b`` of ``world``'s ``split``; its loss as a detached device tensor."""
        if not self.padded:
            return self._eager(world, b)
        slot = self._slot(world, split, size, b)
        fill_padded(slot.batch, b)
        if not self.graphs:
            return self._eager(world, slot.batch)
        lr = float(self.opt.param_groups[0]["lr"])  # a Python float: no sync
        if slot.graph is not None and slot.lr != lr:
            slot.graph, slot.loss = None, None  # the rate is baked into the graph: capture again
        if slot.graph is None:
            if slot.steps < WARMUP_STEPS:
                slot.steps += 1
                return self._side_stream(world, slot.batch)
            if not self._capture(world, slot, lr):
                return self._eager(world, b)
        slot.graph.replay()
        assert slot.loss is not None
        return slot.loss.detach().clone()

    def _slot(self, world: WorldData, split: str, size: int, b: Batch) -> _Slot:
        key = (world.name, split, size)
        slot = self.slots.pop(key, None)  # re-inserted last: the dict's order is the recency order
        if slot is None:
            device = b.src.device
            on_device = world.on_device(split, device)
            nodes, edges = padded_shape(on_device, size)
            widths = (on_device.into.shape[1], on_device.out_of.shape[1])
            slot = _Slot(empty_padded(nodes, edges, size, b.relations, device, widths))
            while len(self.slots) >= MAX_SLOTS:
                self.slots.pop(next(iter(self.slots)))  # the least recently used, with its graph
        self.slots[key] = slot
        return slot

    def _eager(self, world: WorldData, b: Batch, cache: bool = True) -> torch.Tensor:
        loss = self.loss_of(world, b, cache)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return loss.detach()

    def _side_stream(self, world: WorldData, b: Batch) -> torch.Tensor:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            loss = self._eager(world, b)
        torch.cuda.current_stream().wait_stream(side)
        return loss

    def _capture(self, world: WorldData, slot: _Slot, lr: float) -> bool:
        """Record the padded step into ``slot`` (it runs at the next replay); False, and eager steps
        from now on, when the capture fails."""
        graph = torch.cuda.CUDAGraph()
        self.opt.zero_grad(set_to_none=True)  # the graph allocates the gradients it writes
        try:
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                loss = self.loss_of(world, slot.batch, False)  # autocast's cast cache off in a capture
                loss.backward()
                self.opt.step()
        except Exception as exc:  # noqa: BLE001 (a step that cannot be captured still trains)
            warnings.warn(f"CUDA graph capture failed, training eagerly: {exc}", RuntimeWarning, stacklevel=2)
            self.graphs = self.padded = False
            self.slots.clear()
            return False
        slot.graph, slot.loss, slot.lr = graph, loss, lr
        return True
