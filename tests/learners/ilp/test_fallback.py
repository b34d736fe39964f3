"""The fallback's inputs and its anytime report: the partial pool holds one rule per coverage,
the compacted keys index their union, and the greedy cover is reported before the optimisation."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from learners.base import Budget
from learners.ilp.cover import ScoredRule, _compact
from learners.ilp.ilasp import IlaspLearner
from learners.ilp.pool import Pool
from tasks import arrays
from tests.learners.ilp.test_ilasp import lights_task


def _rule(text: str, length: int, pos: list[int], neg: list[int]) -> ScoredRule:
    return ScoredRule(text, length, np.array(pos, dtype=np.int64), np.array(neg, dtype=np.int64))


def test_a_partial_rule_covering_what_a_kept_one_covers_is_kept_only_if_cheaper():
    pool = Pool(np.arange(10, dtype=np.int64), n_neg=100)
    pool.add_partial(_rule("a", 3, [1, 2], [50]))
    pool.add_partial(_rule("b", 2, [1, 3], [50]))
    pool.add_partial(_rule("longer", 4, [1, 2], [50]))  # a's coverage, costlier: dropped
    pool.add_partial(_rule("shorter", 1, [1, 3], [50]))  # b's coverage, cheaper: in b's place
    assert [r.text for r in pool.partial] == ["a", "shorter"]
    assert pool.partial_keys == 6


def test_the_partial_pool_forgets_the_coverage_of_a_rule_it_dropped():
    """Past its key bound the pool drops its worst rules; their coverage may come back later."""
    pool = Pool(np.arange(10, dtype=np.int64), n_neg=100, max_keys=8)
    pool.add_partial(_rule("good", 1, [1, 2, 3], [50]))
    pool.add_partial(_rule("bad", 1, [4], [60, 61, 62, 63]))  # 9 keys: the worst is dropped
    assert [r.text for r in pool.partial] == ["good"]
    pool.max_keys = 100
    pool.add_partial(_rule("bad again", 1, [4], [60, 61, 62, 63]))
    assert [r.text for r in pool.partial] == ["good", "bad again"]


keys = st.lists(
    st.lists(st.integers(0, 10**12), max_size=40).map(lambda k: np.unique(np.array(k, dtype=np.int64))),
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(keys)
def test_compacted_keys_index_the_union_of_all_of_them(arrays_of_keys):
    union = arrays.union(arrays_of_keys)
    compact = _compact(arrays_of_keys)
    assert len(compact) == len(arrays_of_keys)
    for k, ids in zip(arrays_of_keys, compact, strict=True):
        assert np.array_equal(union[ids], k)


def test_a_loop_with_only_inconsistent_rules_reports_the_greedy_partial_cover_before_its_choice():
    """Labels flipped in a fifth of the examples leave no consistent rule; the fallback's greedy
    cover, reported first, beats the baseline on train, and the final choice comes after it (so a
    job cut during the optimisation scores the cover, not the baseline)."""
    task = lights_task("legal", n_train=200)
    task = task.for_predicate(task.predicates[0])
    split = task.splits["train"]
    flipped = split.positives.tolil()
    for i in np.random.default_rng(0).choice(split.n_examples, 40, replace=False):
        for j in range(flipped.shape[1]):
            flipped[i, j] = not flipped[i, j]
    task.splits["train"] = type(split)(split.name, split.background, flipped.tocsr(), split.candidates)
    reported: list = []
    model = IlaspLearner().fit(task, Budget(5), reported.append)
    notes = [m.status for m in reported]
    greedy = [i for i, m in enumerate(reported) if "greedy partial cover" in m.status]
    assert greedy, notes
    assert reported[greedy[0]].train_ba > reported[0].train_ba and reported[greedy[0]].fallback
    assert greedy[0] < len(reported) - 1 and model.fallback, notes
