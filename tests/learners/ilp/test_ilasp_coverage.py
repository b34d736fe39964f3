"""The stages under the ilasp learner: vectorised coverage agrees with clingo; the cover solvers."""

from __future__ import annotations

import numpy as np
import pytest
from ilp_tasks import coverage_and_clingo
from test_ilasp import lights_task

from learners.ilp.bias import NEQ, Clause, Literal
from learners.ilp.cover import RelevantCover, ScoredRule, best_partial_cover
from learners.ilp.relations import Table, join, pack, semi

POS = ("pos",)


def _clauses() -> list[Clause]:
    on, tog, idx = "true_on", "does_toggle", "index"
    return [
        Clause("next_on", (0,), (Literal(on, (0,)),), POS),
        Clause("next_on", (0,), (Literal(on, (0,)), Literal(tog, (None, 0), True)), POS),
        Clause("next_on", (0,), (Literal(tog, (1, 0)), Literal(on, (0,), True)), ("pos", "agent")),
        Clause("next_on", (0,), (Literal(idx, (0,)),), POS),  # statics only: holds in every example
        Clause("next_on", ("2",), (Literal(on, ("1",)),), ()),  # ground head and body
        Clause("next_on", (0,), (Literal(on, (0,)), Literal(on, (1,)), Literal(NEQ, (0, 1))), ("pos", "pos")),
        Clause("next_on", (0,), (Literal(idx, (0,)), Literal("does", (1, "noop"))), ("pos", "agent")),
        Clause("next_on", ("3",), (), ()),  # a fact
        Clause("next_on", (0,), (Literal(on, (0,)), Literal(tog, (None, "2"), True)), POS),  # absence
        Clause("next_on", (0,), (Literal(on, (0,)), Literal(tog, (None, None))), POS),  # a guard of _ only
    ]


@pytest.mark.parametrize("clause", _clauses(), ids=lambda c: c.text())
def test_vectorised_coverage_agrees_with_clingo(clause):
    keys, expected = coverage_and_clingo(clause, lights_task("next").for_predicate("next_on"))
    assert keys == expected


def test_joins_on_packed_keys():
    left = Table({"ex": np.array([0, 0, 1]), 1: np.array([5, 6, 5])}, 3)
    right = Table({"ex": np.array([0, 1, 1]), 1: np.array([5, 5, 5]), 2: np.array([7, 8, 9])}, 3)
    out = join(left, right, ["ex", 1], 100)
    assert sorted(zip(out.cols["ex"].tolist(), out.cols[2].tolist(), strict=True)) == [(0, 7), (1, 8), (1, 9)]
    assert semi(left, right, ["ex", 1], keep=False).cols[1].tolist() == [6]
    big = np.array([2**40, 3])
    a, b = pack([big, big], [[big, np.array([3, 2**40])]])
    assert a[0] != b[0] and a[1] != b[1]  # renumbered densely instead of overflowing


def _rule(text: str, length: int, pos: list[int], neg: list[int] = ()) -> ScoredRule:
    return ScoredRule(text, length, np.array(pos, dtype=np.int64), np.array(neg, dtype=np.int64))


def test_relevant_cover_is_incremental_and_shortest():
    cover = RelevantCover()
    cover.add([_rule("a", 3, [1, 2]), _rule("b", 2, [1])], [1])
    chosen, optimal = cover.solve(5)
    assert chosen == [1] and optimal  # the shorter rule covers the one relevant example
    cover.add([_rule("c", 2, [2])], [2])  # a new example and a new rule: a new program part
    chosen, _ = cover.solve(5)
    assert [cover.rules[i].text for i in chosen] == ["a"]  # 3 literals beat 2 + 2
    cover.add([], [9])  # no rule covers 9: it stays uncovered, the rest is still optimal
    chosen, _ = cover.solve(5)
    assert [cover.rules[i].text for i in chosen] == ["a"]


def test_best_partial_cover_maximises_balanced_accuracy():
    rules = [
        _rule("good", 2, [1, 2, 3], [10]),
        _rule("noisy", 1, [4], [11, 12, 13, 14, 15, 16]),
        _rule("x", 9, [1]),
    ]
    chosen = best_partial_cover(rules, n_pos=4, n_neg=20, seconds=5)
    assert [rules[i].text for i in chosen] == ["good"]


def test_partial_cover_is_anytime_when_the_solver_has_no_time():
    """A solver stopped before its first model must not turn a 0.9 cover into the empty program."""
    from learners.ilp.cover import greedy_partial_cover

    rules = [_rule(f"r{i}", 3, list(range(10 * i, 10 * i + 9)), [1000 + i]) for i in range(40)]
    assert greedy_partial_cover(rules, n_pos=400, n_neg=10_000) == list(range(40))
    assert len(best_partial_cover(rules, n_pos=400, n_neg=10_000, seconds=0.0)) == 40
    rules.append(_rule("bad", 2, [1], list(range(2000, 9000))))
    assert 40 not in best_partial_cover(rules, n_pos=400, n_neg=10_000, seconds=0.0)


def test_facts_of_some_examples_are_their_rows_of_every_dynamic_table():
    from learners.ilp.coverage import facts_for

    task = lights_task("next").for_predicate("next_on")
    train = task.split("train")
    facts = facts_for(task, train)
    examples = np.arange(0, facts.n, 3)
    cut = facts.of_examples(examples)
    assert cut.n == facts.n and cut.static == facts.static
    for pred, table in facts.dynamic.items():
        got = cut.table(pred)
        keep = np.isin(table.cols["ex"], examples)
        assert set(got.cols) == set(table.cols)
        for col, values in table.cols.items():
            assert np.array_equal(got.cols[col], values[keep]), (pred, col)
    for pred in facts.static:
        assert cut.table(pred) is facts.table(pred)
