"""The recursive closure of rule programs over GraphLog query graphs (tasks.graphlog.closure)."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.graphlog.closure import ClosureError, closure, compile_program, prediction, score
from tasks.graphlog.generator import GeneratorConfig, generate_suite
from tasks.graphlog.graphs import GraphSet, QueryGraph

SMALL = GeneratorConfig(n_train=150, n_valid=50, n_test=100, world_nodes=150)


@pytest.fixture(scope="module")
def worlds():
    return generate_suite(SMALL, worlds=[0, 3])


def _cyk(desc, rules) -> set[int]:
    """Every relation some bracketing of the descriptor composes to (an oracle independent of clingo)."""
    table = {r.body: r.head for r in rules}
    n = len(desc)
    cell = {(i, i + 1): {desc[i]} for i in range(n)}
    for span in range(2, n + 1):
        for i in range(n - span + 1):
            cell[(i, i + span)] = {
                table[(a, b)]
                for k in range(i + 1, i + span)
                for a in cell[(i, k)]
                for b in cell[(k, i + span)]
                if (a, b) in table
            }
    return cell[(0, n)]


def _learned_form(rules, var=("X", "Y", "Z")) -> str:
    """The rules as a learner writes them: ``rel_rK`` heads, reaching bodies only through the bridge."""
    x, y, z = var
    return "\n".join(f"rel_r{r.head}({x}, {y}) :- r{r.body1}({x}, {z}), r{r.body2}({z}, {y})." for r in rules)


def test_world_rules_resolve_every_graph_exactly(worlds):
    for w in worlds:
        for name, g in w.splits.items():
            got = closure(w.rules, g)
            assert not got.unsat
            wrong = [i for i in range(len(g)) if got.derived[i] != {int(g.target[i])}]
            assert not wrong, f"{w.name}/{name}: graph {wrong[0]} derives {sorted(got.derived[wrong[0]])}"
            # Paths longer than 2 are the point: one rule application could not resolve them.
            assert max(len(g.graph(i).descriptor) for i in range(len(g))) > 2


def test_learned_heads_compose_through_the_bridge(worlds):
    w = worlds[0]
    g = w.splits["test"]
    learned = closure(_learned_form(w.rules, var=("A", "Bx", "C_1")), g, chunk=7)  # chunks of 7 graphs
    assert learned.derived == closure(w.rules, g).derived
    assert score(learned.derived, g.target).exact == 1.0
    _, derivable = compile_program(_learned_form(w.rules))
    assert derivable == {r.head for r in w.rules}


def test_a_missing_rule_fails_exactly_where_it_is_needed(worlds):
    w = worlds[0]
    g = w.splits["train"]
    graphs = [g.graph(i) for i in range(len(g))]
    needed = {
        r: [i for i, q in enumerate(graphs) if q.target not in _cyk(q.descriptor, set(w.rules) - {r})]
        for r in w.rules
    }
    rule = max(w.rules, key=lambda r: len(needed[r]))
    assert needed[rule], "no graph in the fixture needs any rule"
    fewer = [r for r in w.rules if r != rule]
    got = closure(fewer, g).derived
    for i, q in enumerate(graphs):
        if i in needed[rule]:
            assert q.target not in got[i], f"graph {i} resolves without {rule.text()}"
        else:
            assert got[i] == {q.target}
    s = score(got, g.target)
    assert s.exact == pytest.approx(1 - len(needed[rule]) / len(g))


def test_clause_text_with_query_constants_and_negation(worlds):
    w = worlds[1]
    g = w.splits["train"]
    # Guarded by query(A, B), a chain clause applies only to the query pair: one step, no recursion.
    guarded = "\n".join(
        f"rel_r{r.head}(A, B) :- query(A, B), r{r.body1}(A, Mid), r{r.body2}(Mid, B)." for r in w.rules
    )
    got = closure(guarded, g).derived
    for i in range(len(g)):
        q = g.graph(i)
        assert got[i] == ({q.target} if len(q.descriptor) == 2 else set())
    assert any(len(g.graph(i).descriptor) == 2 for i in range(len(g)))
    # Constants u and v name the query nodes, as in the Task encoding; negation and comparisons work.
    text = (
        "% a comment\nrel_r1(u, v) :- query(u, v).\nrel_r2(X, Y) :- query(X, Y), X != Y, not rel_r1(X, Y).\n"
    )
    assert all(d == {1} for d in closure(text, g).derived)


def test_derived_atoms_stay_on_the_graph_nodes(worlds):
    g = worlds[0].splits["test"]
    # w is not a node of any graph: rel_r1(u, w) must not be derived, so rel_r2 never fires.
    text = "rel_r1(X, w) :- query(X, _).\nrel_r2(X, Y) :- query(X, Y), r1(X, w).\n"
    assert all(d == frozenset() for d in closure(text, g).derived)


def test_graphs_without_a_stable_model_are_reported(worlds):
    w = worlds[0]
    g = w.splits["test"]
    # An odd loop through the bridge, only where u has an outgoing edge of relation a: no model there.
    a, h = int(np.bincount(g.rel).argmax()), w.rules[0].head
    text = _learned_form(w.rules) + f"\nrel_r{h}(X, Y) :- query(X, Y), r{a}(X, _), not r{h}(X, Y).\n"
    got = closure(text, g)
    has_a = [i for i in range(len(g)) if any(s == g.query_u[i] and r == a for s, r, _ in g.graph(i).edges)]
    # A graph whose target is that head already derives it, so the odd loop is satisfied there.
    expect = [i for i in has_a if int(g.target[i]) != h]
    assert expect and got.unsat == expect
    for i in range(len(g)):
        if i not in got.unsat and i not in has_a:
            assert got.derived[i] == {int(g.target[i])}
    # Two stable models ({r1} and {r2}): only what holds in both is derived.
    choice = (
        "rel_r1(X, Y) :- query(X, Y), not rel_r2(X, Y).\nrel_r2(X, Y) :- query(X, Y), not rel_r1(X, Y).\n"
    )
    both = closure(choice, g)
    assert not both.unsat and all(d == frozenset() for d in both.derived)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("rel_r5(X, Y) :- r1(X, Z) r2(Z, Y).", "clingo rejects the clauses.*syntax error"),
        ("rel_r5(X, Y) :- r1(X, Z).", "clingo rejects the clauses.*unsafe"),
        ("{ rel_r5(X, Y) } :- r1(X, Y).", "only rules with an atom head"),
        ("#const k = 3.\nrel_r5(X, Y) :- r1(X, Y).", "only normal rules"),
    ],
)
def test_malformed_clause_text_gives_a_clear_error(text, match):
    g = GraphSet.from_graphs([QueryGraph(3, [(0, 1, 2), (2, 2, 1)], (0, 1), 5)])
    with pytest.raises(ClosureError, match=match):
        closure(text, g)


def test_scores_and_prediction():
    derived = [frozenset({1}), frozenset({1, 2}), frozenset(), frozenset({3})]
    s = score(derived, [1, 2, 4, 4])
    assert (s.exact, s.resolved, s.ambiguous, s.n) == (0.25, 0.5, 0.25, 4)
    assert [prediction(d) for d in derived] == [1, -1, -1, 3]
    with pytest.raises(ValueError, match="3 targets"):
        score(derived, [1, 2, 3])
