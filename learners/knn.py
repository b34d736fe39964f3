"""KNN_k, the IGGP paper's propositional baseline (sect. 5.1), vectorised so all 159 tasks take seconds.

Definition (Fig. 11): find the k training triples whose backgrounds B_i are nearest to the query
background B by symmetric-difference size ``d(A, B) = |A - B| + |B - A|``; an atom holds iff it is
positive in at least k/2 of them (``2 * votes >= k``: with k = 1 the single neighbour decides, with
k = 5 three of five must agree).

**Ties** are broken by training-file order: among equally distant triples the lower row index
comes first. This is what makes the results reproducible and comparable with other
implementations. It is exact because neighbours are ranked by the integer key
``d * n_train + row`` (unique per row), never by a float.

How it is fast:

* ``d(A, B) = |A| + |B| - 2 |A ∩ B|``, and all |A ∩ B| of a chunk of query rows come from one sparse
  x dense product (query CSR times the transposed training backgrounds; sparse x sparse when the
  vocabulary is huge), chunked over query rows so memory stays bounded (``chunk_cells`` distances
  at a time).
* The k smallest keys per row come from ``np.argpartition`` (``argmin`` for k = 1), then a sort of
  just those k; keys are int32 whenever they fit.
* The vote is a sparse product: a neighbour-indicator matrix (n_query x n_train, k ones per row)
  times the training positives.
* :func:`knn_predictions` ranks neighbours once for several k, and :func:`ranked` keeps each
  ranking on disk (``$ORCH_CACHE/neighbours``), so the jobs of a task's other predicates and of
  knn1/knn5 read it instead of ranking again.

Statics are the same in every example, so they cancel in the distance; any static atom that also
appears in rows is masked out so that the distance is exactly that of B = statics + dynamic atoms.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from learners.base import Budget, Report, ignore_report, register
from tasks.task import Split, Task

DEFAULT_CHUNK_CELLS = 1 << 22
"""Distances computed at once (4M int64 keys = 32 MiB), which bounds the peak memory of a query."""

DENSE_LIMIT_CELLS = 1 << 25
"""Largest training matrix (n_train x atoms) kept dense for the product: 32M float32 = 128 MiB."""


def _dynamic_columns(n_atoms: int, statics: Sequence[int] | np.ndarray) -> np.ndarray | None:
    """Background columns that can differ between examples, or None when that is all of them."""
    statics = np.asarray(statics, dtype=np.int64)
    if len(statics) == 0:
        return None
    keep = np.ones(n_atoms, dtype=bool)
    keep[statics] = False
    return np.flatnonzero(keep)


def _as_sets(m: sp.spmatrix) -> sp.csr_matrix:
    """A float32 0/1 CSR copy with one stored entry per member atom (so row lengths are |B|)."""
    m = sp.csr_matrix(m, dtype=np.float32, copy=True)
    m.sum_duplicates()
    m.eliminate_zeros()
    m.data[:] = 1.0
    return m


@dataclass
class NeighbourIndex:
    """The training backgrounds, prepared once for distance queries.

    The transposed backgrounds are kept dense when that is small (``DENSE_LIMIT_CELLS``): a sparse
    query times a dense matrix is the fastest product here. Huge vocabularies keep them sparse, so
    memory stays bounded whatever the task family.
    """

    train: sp.csr_matrix  # (n_train x used columns) float32 0/1
    train_sizes: np.ndarray  # |B_i| per training row (int64)
    columns: np.ndarray | None  # background columns used (statics removed), None = all
    train_t: np.ndarray | None = None  # dense B^T (used columns x n_train), C-contiguous, if small

    @classmethod
    def of(
        cls,
        background: sp.csr_matrix,
        statics: Sequence[int] | np.ndarray = (),
        dense_limit: int = DENSE_LIMIT_CELLS,
    ) -> NeighbourIndex:
        columns = _dynamic_columns(background.shape[1], statics)
        b = _as_sets(background if columns is None else background[:, columns])
        dense = np.ascontiguousarray(b.T.toarray()) if b.shape[0] * b.shape[1] <= dense_limit else None
        return cls(b, np.diff(b.indptr).astype(np.int64), columns, dense)

    def intersections(self, query_rows: sp.csr_matrix, dtype: type = np.int64) -> np.ndarray:
        """|A ∩ B_i| for every query row A and training row B_i.

        Exact: sums of 1.0 in float32 are exact integers below 2**24 atoms per background.
        """
        if self.train_t is not None:
            inter = query_rows @ self.train_t
        else:
            inter = (query_rows @ self.train.T).toarray()
        return inter.astype(dtype)

    @property
    def n_train(self) -> int:
        return self.train.shape[0]

    def nearest(self, query: sp.csr_matrix, k: int, chunk_cells: int = DEFAULT_CHUNK_CELLS) -> np.ndarray:
        """Row indices of the k nearest training rows per query row, nearest first (n_query x min(k, n)).

        Rows are ranked by the integer key ``distance * n_train + row``: unique, so the order is
        total and equal distances go to the earlier training row. Keys are int32 when they fit
        (twice as fast to partition), int64 otherwise.
        """
        n = self.n_train
        if n == 0:
            raise ValueError("KNN needs at least one training example")
        k = min(k, n)
        q = _as_sets(query if self.columns is None else query[:, self.columns])
        q_sizes = np.diff(q.indptr).astype(np.int64)
        largest_key = (int(q_sizes.max(initial=0)) + int(self.train_sizes.max(initial=0)) + 1) * n
        dtype = np.int32 if largest_key < np.iinfo(np.int32).max else np.int64
        # distance * n + row = (|A| + |B_i|) * n + row - 2n |A ∩ B_i|; the first part per row/column.
        q_part = (q_sizes * n).astype(dtype)
        t_part = (self.train_sizes * n + np.arange(n)).astype(dtype)
        step = max(1, chunk_cells // n)
        out = np.empty((q.shape[0], k), dtype=np.int64)
        for lo in range(0, q.shape[0], step):
            hi = min(lo + step, q.shape[0])
            key = self.intersections(q[lo:hi], dtype)
            key *= -2 * n
            key += t_part[None, :]
            key += q_part[lo:hi, None]
            if k == 1:
                out[lo:hi, 0] = key.argmin(axis=1)
                continue
            part = (
                np.argpartition(key, k - 1, axis=1)[:, :k]
                if k < n
                else np.broadcast_to(np.arange(n), key.shape)
            )
            order = np.argsort(np.take_along_axis(key, part, axis=1), axis=1)
            out[lo:hi] = np.take_along_axis(part, order, axis=1)
        return out


def vote(neighbours: np.ndarray, train_positives: sp.csr_matrix, k: int) -> sp.csr_matrix:
    """Atoms positive in at least k/2 of each row's first k neighbours (boolean CSR, n_query x m).

    ``neighbours`` holds at least k columns unless there are fewer training rows; the threshold is
    always the paper's k/2.
    """
    nb = neighbours[:, :k]
    n_query, kk = nb.shape
    indicator = sp.csr_matrix(
        (np.ones(nb.size, dtype=np.int32), nb.ravel(), np.arange(n_query + 1) * kk),
        shape=(n_query, train_positives.shape[0]),
    )
    votes = (indicator @ sp.csr_matrix(train_positives, dtype=np.int32)).tocsr()
    votes.data = 2 * votes.data >= k
    votes.eliminate_zeros()
    return votes.astype(bool)


RANKED_AT_LEAST = 5
"""Neighbours ranked (and cached) per query row whatever k asks: knn1 and knn5 share one ranking."""

CACHE_KEEP = 4096
"""Rankings kept on disk; the oldest beyond this are deleted after each write."""


def neighbour_cache() -> Path | None:
    """Where rankings are cached across processes (``$ORCH_CACHE/neighbours``); None when
    ``ORCH_NEIGHBOUR_CACHE=off``."""
    if os.environ.get("ORCH_NEIGHBOUR_CACHE", "").lower() in ("0", "off", "no", "false"):
        return None
    from tasks.cache import cache_dir

    return cache_dir("neighbours")


def ranking_key(index: NeighbourIndex, query: sp.csr_matrix, k: int) -> str:
    """A hash of everything a ranking depends on: the indexed training rows, the query rows (its
    dynamic columns), k and this definition's version."""
    q = _as_sets(query if index.columns is None else query[:, index.columns])
    digest = hashlib.sha256(f"knn-ranking-v1/{k}/{index.train.shape}/{q.shape}".encode())
    for part in (index.train.indptr, index.train.indices, q.indptr, q.indices):
        digest.update(np.ascontiguousarray(part, dtype=np.int64).tobytes())
    return digest.hexdigest()[:32]


def ranked(
    index: NeighbourIndex, query: sp.csr_matrix, k: int, chunk_cells: int = DEFAULT_CHUNK_CELLS
) -> np.ndarray:
    """``index.nearest(query, k)``, read from the on-disk cache when this ranking was made before.

    Why: every flattened predicate of a task is its own job (``next_cell``, ``next_control``), in
    its own process, but they share the backgrounds, so their neighbours are the same. On a large
    generated game the ranking is nearly all of a knn job's time. The first ``k`` of a ranking made
    for more neighbours are exactly the ranking for ``k`` (keys are unique), so one ranking of
    :data:`RANKED_AT_LEAST` serves knn1 and knn5. A missing, unreadable or unwritable cache only
    costs the computation.
    """
    root = neighbour_cache()
    wanted = max(k, RANKED_AT_LEAST)
    if root is None:
        return index.nearest(query, k, chunk_cells)
    path = root / f"{ranking_key(index, query, wanted)}.npy"
    try:
        return np.load(path, allow_pickle=False)[:, :k]
    except (OSError, ValueError):
        pass
    out = index.nearest(query, wanted, chunk_cells)
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            np.save(f, out.astype(np.int32 if index.n_train < 2**31 else np.int64), allow_pickle=False)
        os.replace(tmp, path)  # atomic: a reader sees a whole file or none
        _prune(root)
    except OSError:  # a full or read-only disk: the ranking is still right, just not kept
        pass
    return out[:, :k]


def _prune(root: Path) -> None:
    entries = sorted(root.glob("*.npy"), key=lambda p: p.stat().st_mtime)
    for old in entries[: max(0, len(entries) - CACHE_KEEP)]:
        old.unlink(missing_ok=True)


def knn_predictions(
    index: NeighbourIndex,
    train_positives: sp.csr_matrix,
    query: sp.csr_matrix,
    ks: Iterable[int],
    chunk_cells: int = DEFAULT_CHUNK_CELLS,
) -> dict[int, sp.csr_matrix]:
    """Predictions for several k at once, ranking the neighbours only once (for the largest k)."""
    ks = sorted(set(int(k) for k in ks))
    neighbours = ranked(index, query, max(ks), chunk_cells)
    return {k: vote(neighbours, train_positives, k) for k in ks}


@dataclass
class KNNModel:
    """KNN_k over the training triples of one task; ties by training-file order."""

    k: int
    index: NeighbourIndex
    train_positives: sp.csr_matrix
    chunk_cells: int = DEFAULT_CHUNK_CELLS

    def predict(self, task: Task, split: Split) -> sp.csr_matrix:
        if self.train_positives.shape[1] != len(task.target_atoms):
            raise ValueError(
                f"knn{self.k} was trained on {self.train_positives.shape[1]} target atoms, "
                f"but {task.name} has {len(task.target_atoms)}"
            )
        return knn_predictions(
            self.index, self.train_positives, split.background, [self.k], self.chunk_cells
        )[self.k]

    def describe(self) -> str:
        return (
            f"knn{self.k} over {self.index.n_train} training backgrounds (symmetric-difference distance); "
            f"an atom holds iff positive in >= {self.k}/2 of the {self.k} nearest; ties by training order"
        )

    def rules(self) -> str | None:
        return None


def fit_knn(task: Task, k: int) -> KNNModel:
    """Index the task's training backgrounds (KeyError naming the reason if there is no train split)."""
    train = task.split("train")
    if train.n_examples == 0:
        raise ValueError(f"task {task.name}: knn{k} needs training examples, the train split is empty")
    return KNNModel(k, NeighbourIndex.of(train.background, task.statics), train.positives.tocsr())


@register(
    r"knn(?P<k>\d+)",
    description="Baseline: atoms positive in >= k/2 of the k training triples with the nearest backgrounds.",
    params="k: neighbours (>= 1), e.g. knn1, knn5; distance |A-B|+|B-A|; ties by training-file order",
    resources={"num_cpus": 1},
    example="knn5",
)
class KNNLearner:
    name = "knn"

    def __init__(self, k: int = 5) -> None:
        self.k = int(k)
        if self.k < 1:
            raise ValueError(f"knn needs k >= 1, got {self.k}")
        self.name = f"knn{self.k}"

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> KNNModel:
        model = fit_knn(task, self.k)
        report(model)
        return model
