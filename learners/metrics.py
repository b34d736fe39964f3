"""IGGP metrics from raw counts, so results computed on many machines combine exactly.

Conventions (IGGP paper sect. 5, ../shared/papers/notes.md):

* Per (game, learner, predicate) and split: tp, fp, tn, fn over the split's candidate atoms.
* Per task (game, target): pool the counts of its sub-predicates, then balanced accuracy
  ``(tp/p + tn/n) / 2`` with p = tp + fn and n = tn + fp; if p = 0 it is tn/n, if n = 0 it is
  tp/p (and 1.0 when both are 0, an empty task, which no published task is).
* Perfectly solved: the task's balanced accuracy is exactly 1.0 (computed from integer counts,
  so there is no floating-point slack: it means fp = fn = 0).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from tasks.task import Split, Task


@dataclass(frozen=True)
class Counts:
    """A confusion matrix. Adding two Counts pools them."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.tp + other.tp, self.fp + other.fp, self.tn + other.tn, self.fn + other.fn)

    @property
    def positives(self) -> int:
        return self.tp + self.fn

    @property
    def negatives(self) -> int:
        return self.tn + self.fp

    @property
    def balanced_accuracy(self) -> float:
        return balanced_accuracy(self.tp, self.fp, self.tn, self.fn)

    @property
    def perfect(self) -> bool:
        return self.fp == 0 and self.fn == 0

    def as_dict(self, prefix: str = "") -> dict[str, int]:
        return {
            f"{prefix}tp": self.tp,
            f"{prefix}fp": self.fp,
            f"{prefix}tn": self.tn,
            f"{prefix}fn": self.fn,
        }


def balanced_accuracy(tp: int, fp: int, tn: int, fn: int) -> float:
    """Balanced accuracy with the paper's edge cases (p = 0 -> tn/n; n = 0 -> tp/p)."""
    p, n = tp + fn, tn + fp
    if p == 0 and n == 0:
        return 1.0
    if p == 0:
        return tn / n
    if n == 0:
        return tp / p
    return (tp / p + tn / n) / 2


def pool(counts: Iterable[Counts]) -> Counts:
    total = Counts()
    for c in counts:
        total = total + c
    return total


def count(task: Task, split: Split, predictions: np.ndarray | sp.spmatrix) -> dict[str, Counts]:
    """Counts per flattened predicate of ``task`` for ``predictions`` on ``split``.

    Only the split's candidate columns are scored (strict scoring of every atom under ``atoms:``).
    Why it is written this way: a generated task can have 10^5 target atoms and 10^4 examples, so
    the counts come from one pass over the predictions and one over the positives' nonzeros,
    without copying the (possibly dense) prediction matrix.
    """
    n, m = split.n_examples, len(task.target_atoms)
    if predictions.shape != (n, m):
        raise ValueError(
            f"predictions have shape {predictions.shape}, expected {(n, m)} for {task.name}/{split.name}"
        )
    labels = sp.csr_matrix(split.positives, dtype=bool, copy=True)  # pruned below: never the split's own
    labels.eliminate_zeros()
    rows = np.repeat(np.arange(n), np.diff(labels.indptr))
    cols = labels.indices.astype(np.int64)
    if sp.issparse(predictions):
        pred = sp.csr_matrix(predictions, dtype=bool, copy=True)  # pruned below: never the caller's
        pred.sum_duplicates()
        pred.eliminate_zeros()
        pp_col = np.bincount(pred.indices, minlength=m)
        hit = np.asarray(pred[rows, cols]).ravel().astype(bool) if len(cols) else np.zeros(0, dtype=bool)
    else:
        dense = np.asarray(predictions)
        pp_col = np.count_nonzero(dense, axis=0)
        hit = dense[rows, cols].astype(bool)
    tp_col = np.bincount(cols[hit], minlength=m)
    lp_col = np.bincount(cols, minlength=m)
    # The atoms: section is a set; some published files list an atom twice (ttcc4), score it once.
    cand = np.unique(np.asarray(split.candidates, dtype=np.int64))
    pid = task.predicate_ids()[cand]
    k = len(task.predicates)
    tp = np.bincount(pid, tp_col[cand], minlength=k).astype(np.int64)
    pp = np.bincount(pid, pp_col[cand], minlength=k).astype(np.int64)
    lp = np.bincount(pid, lp_col[cand], minlength=k).astype(np.int64)
    cells = np.bincount(pid, minlength=k).astype(np.int64) * n
    out = {}
    for i, name in enumerate(task.predicates):
        fp, fn = pp[i] - tp[i], lp[i] - tp[i]
        out[name] = Counts(int(tp[i]), int(fp), int(cells[i] - tp[i] - fp - fn), int(fn))
    return out


def evaluate(model, task: Task, splits: Iterable[str] = ("validate", "test")) -> dict[str, dict[str, Counts]]:
    """Score ``model`` on each named split of ``task`` that exists: {split: {predicate: Counts}}.

    A missing split (e.g. a published file that is absent) is skipped; ``task.missing`` says why.
    """
    out: dict[str, dict[str, Counts]] = {}
    for name in splits:
        if name in task.splits:
            split = task.splits[name]
            out[name] = count(task, split, model.predict(task, split))
    return out
