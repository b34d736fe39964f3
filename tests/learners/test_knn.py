"""KNN_k on hand-made tasks: distances, the k/2 vote, ties by training order, chunking, statics."""

from __future__ import annotations

import numpy as np
import pytest
from ilp_tasks import make_task

from learners.base import Budget, make_learner
from learners.knn import NeighbourIndex, knn_predictions, ranked, vote
from tasks.task import bool_csr

ATOMS = ["p(1)", "p(2)", "p(3)"]


def predict(name: str, task, split: str = "test") -> np.ndarray:
    model = make_learner(name).fit(task, Budget(5))
    return model.predict(task, task.split(split)).toarray()


def test_nearest_by_symmetric_difference():
    # Training backgrounds over atoms a..e; query {a, b}.
    train = bool_csr([[0, 1, 2], [0], [3, 4], [0, 1]], 5)  # d = 1, 1, 4, 0
    index = NeighbourIndex.of(train)
    assert index.nearest(bool_csr([[0, 1]], 5), 4).tolist() == [[3, 0, 1, 2]]
    # Empty query: d = |B_i| = 3, 1, 2, 2 -> row 1, then rows 2 and 3 tied (training order), row 0.
    assert index.nearest(bool_csr([[]], 5), 4).tolist() == [[1, 2, 3, 0]]


def test_ties_go_to_the_earlier_training_row():
    train = [
        (["a()", "x()"], ["p(1)"]),  # d = 2 from {a(), b()}
        (["b()", "y()"], ["p(2)"]),  # d = 2 as well
        (["a()", "b()", "c()", "z()"], ["p(3)"]),  # d = 2 as well
        (["q()"], ["p(1)", "p(2)"]),  # d = 3
    ]
    task = make_task({"train": train, "test": [(["a()", "b()"], [])]}, ATOMS)
    assert predict("knn1", task).tolist() == [[True, False, False]]  # row 0 wins the three-way tie
    # knn2: rows 0 and 1; each atom needs >= 1 vote of 2.
    assert predict("knn2", task).tolist() == [[True, True, False]]
    # Reversing the training order reverses the winner.
    rev = make_task({"train": train[2::-1] + train[3:], "test": [(["a()", "b()"], [])]}, ATOMS)
    assert predict("knn1", rev).tolist() == [[False, False, True]]


def test_vote_threshold_is_half_of_k_rounded_up():
    # Five training rows at distances 0..4 from the query {a()}; p(1) in 3 of them, p(2) in 2.
    train = [
        (["a()"], ["p(1)", "p(2)"]),
        (["a()", "b()"], ["p(1)"]),
        (["a()", "b()", "c()"], ["p(2)"]),
        (["a()", "b()", "c()", "d()"], ["p(1)"]),
        (["a()", "b()", "c()", "d()", "e()"], []),
    ]
    task = make_task({"train": train, "test": [(["a()"], [])]}, ATOMS)
    assert predict("knn5", task).tolist() == [[True, False, False]]  # 3 >= 2.5, 2 < 2.5
    assert predict("knn4", task).tolist() == [[True, True, False]]  # 3 >= 2, 2 >= 2
    assert predict("knn3", task).tolist() == [[True, True, False]]  # rows 0-2: p(1) 2, p(2) 2
    assert predict("knn1", task).tolist() == [[True, True, False]]


def test_more_neighbours_than_training_rows_uses_all_with_the_same_threshold():
    train = [(["a()"], ["p(1)"]), (["b()"], ["p(1)", "p(2)"])]
    task = make_task({"train": train, "test": [(["a()"], [])]}, ATOMS)
    # k = 3 but only 2 rows: p(1) has 2 votes >= 1.5, p(2) has 1 < 1.5.
    assert predict("knn3", task).tolist() == [[True, False, False]]


def test_empty_positives_and_empty_backgrounds():
    task = make_task({"train": [([], []), (["a()"], [])], "test": [([], ["p(1)"]), (["a()"], [])]}, ATOMS)
    assert not predict("knn1", task).any()
    assert not predict("knn5", task).any()


def test_chunks_sparse_products_and_several_k_at_once_agree_with_brute_force():
    rng = np.random.default_rng(0)
    n_atoms, n_targets = 30, 12
    train_bg = bool_csr([rng.choice(n_atoms, rng.integers(0, 8), replace=False) for _ in range(60)], n_atoms)
    train_pos = bool_csr(
        [rng.choice(n_targets, rng.integers(0, 4), replace=False) for _ in range(60)], n_targets
    )
    query = bool_csr([rng.choice(n_atoms, rng.integers(0, 8), replace=False) for _ in range(25)], n_atoms)
    index = NeighbourIndex.of(train_bg)
    together = knn_predictions(index, train_pos, query, [1, 5, 3])
    sparse_index = NeighbourIndex.of(train_bg, dense_limit=0)  # the path for huge vocabularies
    assert index.train_t is not None and sparse_index.train_t is None
    assert sparse_index.nearest(query, 60).tolist() == index.nearest(query, 60).tolist()
    for k in (1, 3, 5):
        small_chunks = knn_predictions(index, train_pos, query, [k], chunk_cells=7)[k]
        assert (together[k] != small_chunks).nnz == 0
        # And against a brute-force ranking by (distance, row).
        q, t = query.toarray(), train_bg.toarray()
        for i in range(q.shape[0]):
            d = (q[i] != t).sum(axis=1)
            nearest = sorted(range(len(d)), key=lambda j: (d[j], j))[:k]
            expect = 2 * train_pos[nearest].toarray().sum(axis=0) >= k
            assert together[k][i].toarray().ravel().tolist() == expect.tolist()


def test_static_atoms_in_rows_do_not_change_distances():
    # s() is static; repeating it in some rows must not matter (B = statics + dynamic atoms).
    plain = NeighbourIndex.of(bool_csr([[1], [2]], 3), statics=np.array([0]))
    repeated = NeighbourIndex.of(bool_csr([[0, 1], [2]], 3), statics=np.array([0]))
    query = bool_csr([[2]], 3)
    assert plain.nearest(query, 2).tolist() == repeated.nearest(query, 2).tolist() == [[1, 0]]


def test_vote_is_a_boolean_sparse_matrix():
    votes = vote(np.array([[0, 1], [1, 0]]), bool_csr([[0], [0, 1]], 2), 2)
    assert votes.dtype == bool and votes.toarray().tolist() == [[True, True], [True, True]]


def test_knn_rejects_k_zero_and_empty_training():
    with pytest.raises(ValueError, match="k >= 1"):
        make_learner("knn0")
    task = make_task({"train": [], "test": [(["a()"], [])]}, ATOMS)
    with pytest.raises(ValueError, match="train split is empty"):
        make_learner("knn1").fit(task, Budget(5))


def test_describe_names_k_the_training_size_and_the_tie_rule():
    task = make_task({"train": [(["a()"], ["p(1)"])] * 3, "test": [([], [])]}, ATOMS)
    text = make_learner("knn5").fit(task, Budget(5)).describe()
    assert "knn5 over 3 training backgrounds" in text and "ties by training order" in text


def random_index_and_query(seed: int = 1):
    rng = np.random.default_rng(seed)
    n_atoms = 20
    train = bool_csr([rng.choice(n_atoms, rng.integers(0, 7), replace=False) for _ in range(40)], n_atoms)
    query = bool_csr([rng.choice(n_atoms, rng.integers(0, 7), replace=False) for _ in range(15)], n_atoms)
    return NeighbourIndex.of(train), query


def test_rankings_are_cached_on_disk_and_a_cached_ranking_serves_every_smaller_k(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path))
    index, query = random_index_and_query()
    expected = {k: index.nearest(query, k).tolist() for k in (1, 3, 5)}
    assert ranked(index, query, 1).tolist() == expected[1]  # computed for 5 neighbours, kept
    assert len(list((tmp_path / "neighbours").glob("*.npy"))) == 1

    def no_ranking(*args, **kwargs):
        raise AssertionError("ranked again instead of reading the cache")

    monkeypatch.setattr(NeighbourIndex, "nearest", no_ranking)
    for k in (1, 3, 5):
        assert ranked(index, query, k).tolist() == expected[k]
    # another query is another entry
    _, other = random_index_and_query(seed=2)
    with pytest.raises(AssertionError, match="ranked again"):
        ranked(index, other, 1)


def test_a_broken_or_unwritable_cache_costs_only_the_computation(tmp_path, monkeypatch):
    index, query = random_index_and_query()
    expected = index.nearest(query, 5).tolist()
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path))
    ranked(index, query, 5)
    (entry,) = (tmp_path / "neighbours").glob("*.npy")
    entry.write_bytes(b"not a numpy file")
    assert ranked(index, query, 5).tolist() == expected  # recomputed and written again
    assert np.load(entry).tolist() == expected
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("ORCH_CACHE", str(blocked))  # the cache folder cannot be created
    assert ranked(index, query, 5).tolist() == expected
    monkeypatch.setenv("ORCH_NEIGHBOUR_CACHE", "off")
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "unused"))
    assert ranked(index, query, 3).tolist() == [row[:3] for row in expected]
    assert not (tmp_path / "unused").exists()
