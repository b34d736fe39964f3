"""A set of GraphLog query graphs in columnar form: what is stored, read, batched and encoded.

Each graph g_i is a small relational graph with local node ids 0..n_i-1, edges (src, rel, dst), a
query (u, v) and the target relation of the hidden edge u -> v. Its *descriptor* is the relation
sequence of its resolution path (the path whose rules resolve to the target), and ``path_nodes``
are that path's local node ids. Columns (flat arrays with offsets) make Parquet I/O, torch
batching and statistics one vectorised operation each instead of loops over Python objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _offsets(lengths: Sequence[int]) -> np.ndarray:
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=out[1:])
    return out


@dataclass
class QueryGraph:
    """One graph, row-wise (used while generating and reading; stored columnar)."""

    n_nodes: int
    edges: list[tuple[int, int, int]]  # (src, rel, dst)
    query: tuple[int, int]
    target: int
    descriptor: tuple[int, ...] = ()
    path_nodes: tuple[int, ...] = ()


@dataclass
class GraphSet:
    """N graphs as flat columns; graph i's edges are ``src[edge_ptr[i]:edge_ptr[i+1]]`` etc."""

    n_nodes: np.ndarray
    edge_ptr: np.ndarray
    src: np.ndarray
    rel: np.ndarray
    dst: np.ndarray
    query_u: np.ndarray
    query_v: np.ndarray
    target: np.ndarray
    desc_ptr: np.ndarray
    descriptor: np.ndarray
    path_ptr: np.ndarray
    path_nodes: np.ndarray

    @classmethod
    def from_graphs(cls, graphs: Sequence[QueryGraph]) -> GraphSet:
        def flat(values: list[list[int]]) -> np.ndarray:
            return np.fromiter((x for v in values for x in v), dtype=np.int32)

        edges = [g.edges for g in graphs]
        return cls(
            n_nodes=np.array([g.n_nodes for g in graphs], dtype=np.int32),
            edge_ptr=_offsets([len(e) for e in edges]),
            src=flat([[e[0] for e in es] for es in edges]),
            rel=flat([[e[1] for e in es] for es in edges]),
            dst=flat([[e[2] for e in es] for es in edges]),
            query_u=np.array([g.query[0] for g in graphs], dtype=np.int32),
            query_v=np.array([g.query[1] for g in graphs], dtype=np.int32),
            target=np.array([g.target for g in graphs], dtype=np.int32),
            desc_ptr=_offsets([len(g.descriptor) for g in graphs]),
            descriptor=flat([list(g.descriptor) for g in graphs]),
            path_ptr=_offsets([len(g.path_nodes) for g in graphs]),
            path_nodes=flat([list(g.path_nodes) for g in graphs]),
        )

    def __len__(self) -> int:
        return len(self.n_nodes)

    def graph(self, i: int) -> QueryGraph:
        a, b = self.edge_ptr[i], self.edge_ptr[i + 1]
        edges = list(zip(self.src[a:b].tolist(), self.rel[a:b].tolist(), self.dst[a:b].tolist(), strict=True))
        return QueryGraph(
            int(self.n_nodes[i]),
            edges,
            (int(self.query_u[i]), int(self.query_v[i])),
            int(self.target[i]),
            tuple(self.descriptor[self.desc_ptr[i] : self.desc_ptr[i + 1]].tolist()),
            tuple(self.path_nodes[self.path_ptr[i] : self.path_ptr[i + 1]].tolist()),
        )

    def subset(self, idx: Sequence[int] | np.ndarray) -> GraphSet:
        return GraphSet.from_graphs([self.graph(int(i)) for i in idx])

    def descriptors(self) -> set[tuple[int, ...]]:
        return {
            tuple(self.descriptor[self.desc_ptr[i] : self.desc_ptr[i + 1]].tolist()) for i in range(len(self))
        }

    def classes(self) -> np.ndarray:
        return np.unique(self.target)

    def stats(self) -> dict[str, float]:
        """Table 6's per-split statistics: classes, descriptors, resolution length, nodes, edges."""
        n = max(len(self), 1)
        return {
            "graphs": len(self),
            "classes": len(self.classes()),
            "descriptors": len(self.descriptors()),
            "avg_resolution_length": float(np.diff(self.desc_ptr).sum() / n),
            "avg_nodes": float(self.n_nodes.sum() / n),
            "avg_edges": float(np.diff(self.edge_ptr).sum() / n),
        }
