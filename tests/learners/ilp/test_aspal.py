"""The ``aspal`` learner: the whole hypothesis space in one clingo program, on tiny tasks."""

from __future__ import annotations

import pytest
from ilp_tasks import make_task

from learners.base import Budget, make_learner
from learners.ilp.aspal import AspalLearner, hypothesis_space
from learners.ilp.bias import Settings, bias_for
from learners.ilp.program import check_rules
from learners.metrics import evaluate, pool
from tasks.signature import parse_typ

# Two lamps; one player flips all lamps or waits. next_on needs a constant (flip/wait) and negation.
LAMPS_TYP = """true, next :: prop -> bool.
does :: agent -> action -> bool.
lamp :: light -> bool.
on :: light -> prop.
flip, wait :: action.
p :: agent.
a, b :: light.
"""


def lamp_example(on: list[str], action: str) -> tuple[list[str], list[str]]:
    background = [f"true_on({light})" for light in on] + [f"does(p, {action})"]
    lit_next = [light for light in "ab" if (light in on) != (action == "flip")]
    return background, [f"next_on({light})" for light in lit_next]


def lamps_task(rows=None):
    if rows is None:
        rows = [lamp_example(on, act) for on in ([], ["a"], ["b"], ["a", "b"]) for act in ("flip", "wait")]
    task = make_task(
        {"train": rows, "test": rows[::-1]}, ["next_on(a)", "next_on(b)"], statics=["lamp(a)", "lamp(b)"]
    )
    task.signature = parse_typ(LAMPS_TYP)
    return task


def test_space_is_safe_typed_and_without_duplicates():
    bias = bias_for(lamps_task(), Settings(max_body=2))
    for size in range(3):
        clauses = list(hypothesis_space(bias, size))
        texts = [c.text() for c in clauses]
        assert clauses and len(set(texts)) == len(texts)
        assert all(len(c.body) == size for c in clauses)
        check_rules("".join(texts))  # clingo accepts every rule: safe, well formed
    assert {c.text() for c in hypothesis_space(bias, 0)} == {"next_on(a).", "next_on(b)."}
    two = {c.text() for c in hypothesis_space(bias, 2)}
    assert "next_on(Light1) :- does(Agent1,wait), true_on(Light1)." in two
    assert "next_on(Light1) :- true_on(Light1), not does(_,flip)." in two
    assert not any("does(Light" in t for t in two)  # types respected


def test_learns_a_rule_with_a_constant_and_a_negation_exactly():
    task = lamps_task()
    reported = []
    model = AspalLearner(max_body=3).fit(task, Budget(120), reported.append)
    scores = evaluate(model, task, ("train", "test"))
    assert all(pool(c.values()).perfect for c in scores.values())
    # Optimal: 7 literals, e.g. "on and wait" + "lamp, flip, not on" (or an equally short variant).
    assert "optimal" in model.describe() and "cost [7]" in model.describe()
    assert "not " in model.rules()
    # Anytime: the empty program first, then better programs; the last one is what fit returns.
    assert reported[0].rules() == "" and reported[-1].rules() == model.rules()
    assert len(reported) >= 2


def test_no_positive_example_learns_the_empty_program():
    rows = [(["true_on(a)", "does(p, wait)"], []), (["does(p, flip)"], [])]
    task = lamps_task(rows)
    model = make_learner("aspal").fit(task, Budget(10))
    assert model.rules() == ""
    assert "no positive" in model.describe()


def test_strict_is_unsatisfiable_on_contradictions_and_soft_pays_for_them():
    rows = [lamp_example(on, act) for on in ([], ["a"]) for act in ("flip", "wait")]
    rows.append((["true_on(a)", "does(p, wait)"], []))  # contradicts the second row
    strict = AspalLearner(max_body=2).fit(lamps_task(rows), Budget(60))
    assert strict.rules() == "" and "unsatisfiable" in strict.describe()
    soft = make_learner("aspal2_soft").fit(lamps_task(rows), Budget(60))
    counts = pool(evaluate(soft, lamps_task(rows), ("train",))["train"].values())
    assert soft.rules() and counts.fp + counts.fn == 1  # only the contradiction is wrong


def test_an_expired_budget_returns_the_best_so_far():
    reported = []
    model = AspalLearner(max_body=3).fit(lamps_task(), Budget(0), reported.append)
    assert model.rules() == "" and "budget" in model.describe()
    assert len(reported) == 1


@pytest.mark.parametrize(
    ("name", "max_body", "soft"), [("aspal", 5, False), ("aspal2", 2, False), ("aspal3_soft", 3, True)]
)
def test_registered_names(name, max_body, soft):
    learner = make_learner(name)
    assert learner.settings.max_body == max_body and learner.soft is soft


def test_keeps_its_own_budget_on_a_task_whose_grounding_outlasts_it(iggp_dir):
    """tictactoe next grounds for far longer than 2 s: aspal must stop by itself within 1 s of it.

    (Before the solve moved into a child the learner kills, clingo's uninterruptible grounding
    overran budgets by 20 s to 72 s and relied on the worker's kill.)
    """
    import time

    from tasks.iggp import Dataset

    task = Dataset(iggp_dir).load_task("tictactoe", "next").learning_view()
    started = time.monotonic()
    model = make_learner("aspal").fit(task, Budget(2.0))
    assert time.monotonic() - started < 2.0 + 1.0
    assert "budget spent" in model.describe()
