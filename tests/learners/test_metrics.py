"""Counts and balanced accuracy: the paper's edge cases, pooling, strict candidate scoring."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from ilp_tasks import make_task

from learners.metrics import Counts, balanced_accuracy, count, evaluate, pool


@pytest.mark.parametrize(
    ("tp", "fp", "tn", "fn", "expected"),
    [
        (3, 1, 3, 1, (3 / 4 + 3 / 4) / 2),
        (1, 0, 9, 3, (1 / 4 + 1) / 2),
        (0, 2, 6, 0, 6 / 8),  # no positives: tn / n
        (0, 0, 5, 0, 1.0),
        (2, 0, 0, 2, 2 / 4),  # no negatives: tp / p
        (0, 0, 0, 0, 1.0),  # an empty task
        (0, 5, 0, 5, 0.0),
    ],
)
def test_balanced_accuracy_edge_cases(tp, fp, tn, fn, expected):
    assert balanced_accuracy(tp, fp, tn, fn) == pytest.approx(expected)
    assert Counts(tp, fp, tn, fn).balanced_accuracy == pytest.approx(expected)


def test_perfect_means_no_error_at_all():
    assert Counts(tp=5, tn=7).perfect
    assert Counts(tn=7).perfect  # the trivial task: no positives, nothing predicted
    assert not Counts(tp=5, tn=7, fn=1).perfect
    assert not Counts(tp=5, tn=7, fp=1).perfect


def test_pooling_adds_counts_before_the_ratio():
    a, b = Counts(tp=1, fp=0, tn=9, fn=0), Counts(tp=0, fp=0, tn=0, fn=1)
    pooled = pool([a, b])
    assert pooled == Counts(1, 0, 9, 1)
    # Pooled balanced accuracy is not the mean of the per-predicate ones (1.0 and 0.0).
    assert pooled.balanced_accuracy == pytest.approx((1 / 2 + 1) / 2)


def two_predicate_task():
    atoms = ["next_a(1)", "next_a(2)", "next_b(1)"]
    test = [(["x()"], ["next_a(1)", "next_b(1)"]), (["y()"], ["next_a(2)"])]
    return make_task({"train": test, "test": test}, atoms)


def test_count_per_predicate_dense_and_sparse_agree():
    task = two_predicate_task()
    test = task.split("test")
    pred = np.array([[True, True, False], [False, True, True]])
    expected = {"next_a": Counts(tp=2, fp=1, tn=1, fn=0), "next_b": Counts(tp=0, fp=1, tn=0, fn=1)}
    assert count(task, test, pred) == expected
    assert count(task, test, sp.csr_matrix(pred)) == expected


def test_only_candidates_are_scored_and_each_once():
    task = two_predicate_task()
    test = task.split("test")
    pred = np.ones((2, 3), dtype=bool)
    test.candidates = np.array([0, 1])  # next_b(1) is not listed under atoms: in this split
    assert count(task, test, pred) == {"next_a": Counts(tp=2, fp=2), "next_b": Counts()}
    test.candidates = np.array([0, 1, 1, 2, 0])  # an atom listed twice is still one atom
    assert count(task, test, pred) == {"next_a": Counts(tp=2, fp=2), "next_b": Counts(tp=1, fp=1)}


def cell_by_cell(task, split, pred) -> dict[str, Counts]:
    """The definition of the counts, one cell at a time (the reference for :func:`count`)."""
    dense = pred.toarray() if sp.issparse(pred) else np.asarray(pred)
    labels = split.positives.toarray()
    out = {p: Counts() for p in task.predicates}
    for col in sorted(set(int(c) for c in split.candidates)):
        name = task.predicates[task.predicate_ids()[col]]
        for row in range(split.n_examples):
            said, truth = bool(dense[row, col]), bool(labels[row, col])
            out[name] = out[name] + Counts(
                said and truth, said and not truth, not (said or truth), truth and not said
            )
    return out


@pytest.mark.parametrize("seed", range(20))
def test_count_equals_the_cell_by_cell_definition(seed):
    """Random tasks and predictions: dense (any dtype), sparse with values other than 1 and an
    explicit zero, candidates that repeat or leave columns out."""
    rng = np.random.default_rng(seed)
    n_atoms = int(rng.integers(1, 12))
    atoms = [f"next_{'abc'[int(rng.integers(3))]}({i})" for i in range(n_atoms)]
    examples = [
        ([f"x({i})"], [a for a in atoms if rng.random() < 0.4]) for i in range(int(rng.integers(1, 9)))
    ]
    task = make_task({"train": examples, "test": examples}, atoms)
    test = task.split("test")
    test.candidates = rng.integers(0, n_atoms, size=int(rng.integers(0, 2 * n_atoms)))
    shape = (test.n_examples, n_atoms)
    dense = rng.integers(0, 3, size=shape)  # 0, 1 or 2: any nonzero predicts true
    rows, cols = np.nonzero(dense)
    doubled = sp.csr_matrix(  # every entry given twice (summed to 2 or 4), plus an explicit zero
        (np.r_[dense[rows, cols], dense[rows, cols], [0]], (np.r_[rows, rows, [0]], np.r_[cols, cols, [0]])),
        shape=shape,
    )
    expected = cell_by_cell(task, test, dense)
    assert count(task, test, dense) == expected
    assert count(task, test, dense.astype(bool)) == expected
    assert count(task, test, doubled) == expected


def test_count_leaves_its_inputs_as_they_were():
    """Explicit zeros are pruned on copies: scipy prunes in place, through arrays a same-dtype
    ``csr_matrix(x)`` shares with ``x``, which would rewrite the caller's rows."""
    task = two_predicate_task()
    test = task.split("test")

    def with_explicit_zero():  # row 0: atoms 0 and 2, plus a stored False for atom 1
        return sp.csr_matrix(
            (np.array([True, False, True, True]), np.array([0, 1, 2, 0]), np.array([0, 3, 4])), shape=(2, 3)
        )

    pred, positives = with_explicit_zero(), with_explicit_zero()
    test.positives = positives
    expected = cell_by_cell(task, test, pred)
    assert count(task, test, pred) == expected
    for m in (pred, positives):
        assert m.toarray().tolist() == with_explicit_zero().toarray().tolist()
        assert m.indptr.tolist() == [0, 3, 4]


def test_count_rejects_predictions_of_the_wrong_shape():
    task = two_predicate_task()
    with pytest.raises(ValueError, match="expected \\(2, 3\\)"):
        count(task, task.split("test"), np.ones((2, 2), dtype=bool))


def test_evaluate_skips_missing_splits():
    class Everything:
        def predict(self, task, split):
            return np.ones((split.n_examples, len(task.target_atoms)), dtype=bool)

    task = two_predicate_task()
    result = evaluate(Everything(), task, ("validate", "test"))
    assert list(result) == ["test"]
    assert pool(result["test"].values()) == Counts(tp=3, fp=3)
