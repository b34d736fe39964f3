"""Gathers and per-node sums over a graph's edges that are deterministic without sorting (issue 26).

Why: message passing moves values from nodes to edges (``h[src]``) and sums them back per node
(``index_add``, ``scatter``). Each gather's gradient is such a sum, and on the GPU a sum by index
uses atomic adds, whose order varies from run to run. Under deterministic algorithms PyTorch
replaces every one of them by a sort of the index and a segmented pass: a dozen kernels each, and
a GNN step has dozens of them (gat-egat, replayed from a CUDA graph on an H200, was bound by them:
8 ms of device time per step of 32 query graphs, 95% utilisation).

Here every index comes with its inverse, a padded *incidence table*: row ``v`` lists the edges
whose index is ``v`` (``-1`` where the row is shorter than the longest). A per-node sum is then a
gather of the table's rows and a sum over them, in a fixed order: two kernels, deterministic on any
device, no sort, no host sync. The gradient of a gather is that sum; the gradient of that sum is a
gather. The tables are built once per split, on the host (:func:`incidence_table`), and carried by
each batch (``learners.gnn.data``); a batch without them gets them here, with a sort and a host sync
(:func:`table_of`).

A row of ``-1`` entries reads an appended zero row: the sum over no edges is 0. Padding edges (the
padded batches of ``learners.gnn.graphstep``) are in no table, so they add nothing to any node.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

NONE = -1  # a table entry past the row's edges: reads the zero row appended to the values


def incidence_table(index: np.ndarray, n: int, width: int | None = None) -> np.ndarray:
    """``(n, width)`` int64: row ``v`` holds, in increasing order, the positions ``e`` with
    ``index[e] == v``, then ``NONE``. ``width`` defaults to the longest row (at least 1)."""
    index = np.asarray(index, dtype=np.int64)
    counts = np.bincount(index, minlength=n)[:n] if len(index) else np.zeros(n, dtype=np.int64)
    longest = int(counts.max(initial=0))
    width = max(longest, 1) if width is None else width
    if longest > width:
        raise ValueError(f"an incidence row of {longest} entries does not fit width {width}")
    order = np.argsort(index, kind="stable")
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    table = np.full((n, width), NONE, dtype=np.int64)
    table[index[order], np.arange(len(index)) - starts[index[order]]] = order
    return table


def table_of(index: torch.Tensor, n: int) -> torch.Tensor:
    """:func:`incidence_table` of a device tensor, built on the host (a sync: batches that carry
    their tables never come here)."""
    return torch.as_tensor(incidence_table(index.cpu().numpy(), n), device=index.device)


def shifted(table: torch.Tensor, by: int | torch.Tensor) -> torch.Tensor:
    """``table`` with its entries renumbered by ``by`` (an int, or a column per row); NONE stays."""
    return torch.where(table == NONE, table, table + by)


def _table_sum(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Row ``v``: the sum of ``x[e]`` over the entries ``e`` of ``table[v]``, in table order."""
    padded = torch.cat([x, x.new_zeros((1, *x.shape[1:]))])
    return padded[table].sum(1)


class _Gather(torch.autograd.Function):
    """``x[index]``, whose gradient is the table sum (not an ``index_add``)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, index: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(table)
        return x.index_select(0, index)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (table,) = ctx.saved_tensors
        return _table_sum(grad, table), None, None


class _Sum(torch.autograd.Function):
    """Per-node sums through the table, whose gradient is a gather."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, index: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(index)
        return _table_sum(x, table)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (index,) = ctx.saved_tensors
        return grad.index_select(0, index), None, None


@dataclass(frozen=True)
class Incidence:
    """An index (edge -> node) with its table (node -> edges): ``gather`` and ``sum`` are each
    other's gradients, both deterministic."""

    index: torch.Tensor  # (E,) the node of each edge
    table: torch.Tensor  # (n, K) the edges of each node, NONE past them

    @classmethod
    def of(cls, index: torch.Tensor, n: int, table: torch.Tensor | None = None) -> Incidence:
        return cls(index, table_of(index, n) if table is None else table)

    def gather(self, x: torch.Tensor) -> torch.Tensor:
        """``x[index]``: one row per edge."""
        return _Gather.apply(x, self.index, self.table)

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        """Per node, the sum of the rows of ``x`` (one per edge) of its edges; 0 for a node without."""
        return _Sum.apply(x, self.index, self.table)

    def softmax(self, logit: torch.Tensor) -> torch.Tensor:
        """Softmax of edge scores over each node's edges (as ``torch_geometric.utils.softmax``).

        The maximum subtracted for stability is a constant per node (no gradient, as in PyG); a node
        without edges has none (0 instead of -inf), and exponents are capped at 0: only padding
        edges, which are in no table, ever reach the cap, and they stay finite."""
        with torch.no_grad():
            filler = torch.full((1, *logit.shape[1:]), float("-inf"), dtype=logit.dtype, device=logit.device)
            top = torch.cat([logit, filler])[self.table].amax(1)
            top = torch.nan_to_num(top, neginf=0.0)
        ex = (logit - top.index_select(0, self.index)).clamp_max(0.0).exp()
        return ex / (self.gather(self.sum(ex)) + 1e-16)


def one_hot_rows(index: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
    """``(len(index), n)`` one-hot rows, by comparison (no scatter): ``one_hot_rows(i, n) @ x`` is
    ``x[i]`` with a matrix product for gradient, for small ``n`` (relations, a batch's queries)."""
    return (index[:, None] == torch.arange(n, device=index.device)).to(dtype)
