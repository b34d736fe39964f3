"""Offset literals ``Y = X + K`` over integer arguments (``Settings.offsets``, ``_nooffsets``).

``counter``: a counter over the integers 0..40; the move ``jump`` adds 6, ``step`` adds 1 and
``wait`` keeps it. ``next_count(Y) :- true_count(X), Y = X + 6, does(a, jump).`` is one rule
with an offset; without one it is a chain of six ``succ``, eight literals, past the body limit
of five, and ``ilasp_nooffsets`` learns one ground rule per count instead (34 rules, test BA
0.99). (With ``K = 3`` the chain is five literals and both find a general rule.) Game score
updates are the same rule (gt_chicken's ``next_whiteScore``: five ``succ`` and two moves).

The offset's evaluation is checked against clingo through the one evaluation path
(:class:`learners.ilp.evaluate.RuleModel`): a filter between bound variables, a binding of a head
variable, negative ``K``, and a sum that names no constant (dropped, as no target atom has it).
"""

from __future__ import annotations

import numpy as np
import pytest
from ilp_tasks import coverage_and_clingo, test_ba

from learners.base import Budget, make_learner
from learners.ilp.bias import NEQ, Clause, Literal, Settings, bias_for, offset
from learners.ilp.coverage import evaluate_clause, facts_for, targets_for
from learners.ilp.refine import Bottom, Refiner
from tasks.iggp import DatFile, task_from_dats
from tasks.signature import parse_typ

TOP = 40
MOVES = {"jump": 6, "step": 1, "wait": 0}
COUNTER_TYP = f"""
true, next :: prop -> bool.
does :: agent -> action -> bool.
count :: int -> prop.
succ :: int -> int -> bool.
a :: agent.
jump, step, wait :: action.
{", ".join(str(i) for i in range(TOP + 1))} :: int.
"""


def _counter(seed: int, n: int) -> DatFile:
    """States of the counter (0..27) and the move made; the next state's count."""
    rng = np.random.default_rng(seed)
    examples = []
    for _ in range(n):
        count = int(rng.integers(0, TOP - 5))
        move = str(rng.choice(list(MOVES)))
        background = [f"true_count({count})", f"does(a, {move})"]
        examples.append((background, [f"next_count({count + MOVES[move]})"]))
    atoms = [f"next_count({i})" for i in range(TOP + 1)]
    return DatFile(atoms, [f"succ({i}, {i + 1})" for i in range(TOP)], examples)


def counter_task():
    dats = {"train": _counter(1, 300), "validate": _counter(2, 100), "test": _counter(3, 200)}
    task = task_from_dats("counter", "next", dats, signature=parse_typ(COUNTER_TYP, "counter.typ"))
    return task.for_predicate("next_count")


INT2 = ("int", "int")
INT3 = ("int", "int", "int")
AGENT = ("int", "int", "agent")


def _clauses() -> list[Clause]:
    count, succ = "true_count", "succ"
    jump = Literal("does", ("a", "jump"))
    return [
        Clause("next_count", (0,), (Literal(count, (1,)), offset(1, 0, 6), jump), INT2),  # binds the head
        Clause("next_count", (0,), (Literal(count, (1,)), offset(1, 0, -2)), INT2),  # a negative K
        Clause("next_count", (0,), (Literal(count, (1,)), offset(1, 0, 10)), INT2),  # past 40: dropped
        Clause("next_count", (0,), (Literal(count, (1,)), Literal(succ, (2, 0)), offset(1, 2, 4)), INT3),
        Clause("next_count", (0,), (Literal(count, (1,)), Literal(succ, (1, 0)), offset(1, 0, 1)), INT2),
        Clause(
            "next_count",
            (0,),
            (Literal(count, (1,)), offset(1, 0, 6), Literal(NEQ, (0, 1)), Literal(count, (0,), True)),
            INT2,
        ),
    ]


@pytest.mark.parametrize("clause", _clauses(), ids=lambda c: c.text())
def test_offset_coverage_agrees_with_clingo(clause):
    """The vectorised offset (a filter or a binding) derives exactly the atoms clingo does."""
    assert clause.safe()
    keys, expected = coverage_and_clingo(clause, counter_task())
    assert len(keys) > 0
    assert keys == expected


@pytest.mark.parametrize(
    "body",
    [
        (Literal("true_gone", (1,)), offset(1, 0, 1)),  # a predicate no example holds
        (Literal("succ", ("77", 1)), offset(1, 0, 1)),  # a constant no example has
        (Literal("true_gone", (1, 2)), Literal(NEQ, (1, 2)), offset(1, 0, 1)),
        (Literal("true_count", (1,)), Literal("true_gone", (1,), True), offset(1, 0, 1)),
    ],
    ids=lambda body: ", ".join(lit.pred + ("~" if lit.negated else "") for lit in body),
)
def test_a_literal_that_holds_nowhere_still_binds_its_variables(body):
    """A split may lack a predicate or constant that another split has (validate, scored by the
    learner with these joins): the literals after it still read its variables, and the clause
    derives what clingo derives (nothing, or everything for the negated one)."""
    clause = Clause("next_count", (0,), body, ("int",) * 3)
    keys, expected = coverage_and_clingo(clause, counter_task())
    assert keys == expected
    assert (len(keys) > 0) == body[1].negated


def test_offset_is_written_in_clingo_syntax_and_binds():
    up, down = _clauses()[0], _clauses()[1]
    assert up.text() == "next_count(Int1) :- true_count(Int2), Int1 = Int2 + 6, does(a,jump)."
    assert down.text() == "next_count(Int1) :- true_count(Int2), Int1 = Int2 - 2."
    assert up.bound() == {0, 1}
    unbound = Clause("next_count", (0,), (offset(1, 0, 3),), INT2)
    assert not unbound.safe()  # X itself is bound by nothing


def test_refinements_propose_the_seed_offset_only_with_the_switch():
    """From the seed ``true_count(4), does(a, jump)`` -> ``next_count(10)``: ``true_count(X)`` with
    ``Y = X + 6`` in one step (the only ``K``; never from a static: ``succ(X, 10), Y = X + 1`` is
    a ground head in disguise), and nothing of the kind under ``_nooffsets``."""
    task = counter_task()
    bottom = Bottom.of([("true_count", ("4",)), ("does", ("a", "jump"))], [("succ", ("9", "10"))])
    for on in (True, False):
        refiner = Refiner(bias_for(task, Settings(offsets=on)), bottom)
        root, theta = refiner.root("next_count", ("10",))
        texts = [c.text() for c, _, _ in refiner.refinements(root, theta)]
        offsets = [t for t in texts if " = " in t]
        assert offsets == (["next_count(Int1) :- true_count(Int2), Int1 = Int2 + 6."] if on else [])


def _counter_rules() -> list[Clause]:
    """The counter's rules as the learner writes them (the one agent a variable: the rule does not
    need its name, `Clause.specificity`)."""
    count = "true_count"
    return [
        Clause("next_count", (0,), (Literal(count, (0,)), Literal("does", (None, "wait"))), ("int",)),
        Clause(
            "next_count", (0,), (Literal(count, (1,)), offset(1, 0, 1), Literal("does", (2, "step"))), AGENT
        ),
        Clause(
            "next_count", (0,), (Literal(count, (1,)), offset(1, 0, 6), Literal("does", (2, "jump"))), AGENT
        ),
    ]


def test_ilasp_learns_the_counter_with_an_offset():
    task = counter_task()
    model = make_learner("ilasp").fit(task, Budget(20))
    assert test_ba(model, task) == 1.0, model.rules()
    assert "Int1 = Int2 + 6, does(Agent1,jump)" in model.rules(), model.rules()
    rules = _counter_rules()
    assert sorted(model.rules().strip().splitlines()) == sorted(c.text() for c in rules)
    # what the search counted (vectorised) is what the model predicts (clingo), on test too
    split = task.split("test")
    facts = facts_for(task, split)
    targets = targets_for(task, split, facts.constants)
    counted = np.unique(np.concatenate([evaluate_clause(c, facts, targets, 10**6) for c in rules]))
    pred = model.predict(task, split).tocoo()
    assert counted.tolist() == np.sort(pred.row.astype(np.int64) * targets.n_atoms + pred.col).tolist()
    assert model.train_ba == 1.0
    without = make_learner("ilasp_nooffsets").fit(task, Budget(20))
    assert "+" not in without.rules(), without.rules()
    assert len(without.rules().strip().splitlines()) > 3, without.rules()  # a ground rule per count
