"""The symbolic evaluation path: rules + backgrounds -> predictions, identical across strategies."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from ilp_tasks import make_task

from learners.ilp.evaluate import RuleModel
from learners.ilp.program import RuleError, asp_atom, asp_constant, constant_text, flat_atom
from learners.metrics import evaluate, pool
from tasks.gdl.terms import constant_to_asp

STRATEGIES = ("batched", "externals")

# A two-cell board: players mark cells; ``flipped`` is auxiliary; ``role`` and ``mark_of`` are statics.
TARGETS = [
    "next_cell(1, x)",
    "next_cell(2, x)",
    "next_cell(1, o)",
    "next_cell(2, o)",
    "next_cell(1, b)",
    "next_cell(2, b)",
    "next_control(white)",
    "next_control(black)",
]
STATICS = ["role(white)", "role(black)", "mark_of(white, x)", "mark_of(black, o)"]
EXAMPLES = [
    (["true_cell(1, b)", "true_cell(2, x)", "does_mark(white, 1)", "true_control(white)"], []),
    (["true_cell(1, o)", "true_cell(2, b)", "does_mark(black, 2)", "true_control(black)"], []),
    (["true_cell(1, b)", "true_cell(2, b)", "does_mark(white, 2)", "true_control(white)"], []),
]
RULES = """
next_cell(C, M) :- does_mark(P, C), mark_of(P, M).
next_cell(C, M) :- true_cell(C, M), not marked(C).
marked(C) :- does_mark(_, C).
next_control(P) :- role(P), not true_control(P).
"""
EXPECTED = [
    {"next_cell(1, x)", "next_cell(2, x)", "next_control(black)"},
    {"next_cell(1, o)", "next_cell(2, o)", "next_control(white)"},
    {"next_cell(1, b)", "next_cell(2, x)", "next_control(black)"},
]


def board_task(split_rows=EXAMPLES):
    return make_task({"test": split_rows, "train": split_rows}, TARGETS, STATICS)


def predicted_atoms(task, matrix) -> list[set[str]]:
    dense = np.asarray(matrix.todense())
    return [{task.target_atoms[j] for j in np.flatnonzero(row)} for row in dense]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_constants_negation_auxiliary_and_static_only_bodies(strategy):
    task = board_task()
    model = RuleModel(RULES, name="toy", strategy=strategy)
    pred = model.predict(task, task.split("test"))
    assert pred.shape == (3, len(TARGETS))
    assert predicted_atoms(task, pred) == EXPECTED


@pytest.mark.parametrize("chunk", [1, 2, 512])
def test_batched_chunks_agree_with_externals(chunk):
    task = board_task()
    a = RuleModel(RULES, strategy="batched", chunk=chunk).predict(task, task.split("test"))
    b = RuleModel(RULES, strategy="externals").predict(task, task.split("test"))
    assert (a != b).nnz == 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_externals_switch_back_between_examples(strategy):
    """Evaluating twice (and in another order) must not leak one example's background into the next."""
    task = board_task(EXAMPLES + EXAMPLES[::-1])
    model = RuleModel(RULES, strategy=strategy)
    first = predicted_atoms(task, model.predict(task, task.split("test")))
    again = predicted_atoms(task, model.predict(task, task.split("test")))
    assert first == again == EXPECTED + EXPECTED[::-1]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_nullary_target_and_atoms_outside_the_vocabulary(strategy):
    rows = [(["true_cell(1, x)", "true_cell(2, x)"], ["terminal()"]), (["true_cell(1, b)"], [])]
    task = make_task({"test": rows}, ["terminal()"], target="terminal")
    # The second rule derives terminal-like atoms that are not target atoms: they are ignored.
    rules = "terminal :- true_cell(1, x), true_cell(2, x).\nterminal(C) :- true_cell(C, b).\n"
    model = RuleModel(rules, strategy=strategy)
    assert predicted_atoms(task, model.predict(task, task.split("test"))) == [{"terminal()"}, set()]
    (counts,) = evaluate(model, task, ["test"])["test"].values()
    assert counts.perfect


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_constants_that_are_not_asp_identifiers(strategy):
    """Capitalised names, leading zeros, hyphens and spaces travel as strings, both ways."""
    odd = ["Alice", "007", "a-b", "two words", 'q"uote']
    rows = [([f"true_owner({c}, {i})"], [f"next_owner({c}, {i})"]) for i, c in enumerate(odd)]
    targets = [f"next_owner({c}, {i})" for i, c in enumerate(odd)]
    task = make_task({"test": rows}, targets)
    model = RuleModel("next_owner(C, I) :- true_owner(C, I).", strategy=strategy)
    assert predicted_atoms(task, model.predict(task, task.split("test"))) == [{t} for t in targets]
    # A rule naming an odd constant spells it with asp_constant.
    only_alice = RuleModel(f"next_owner({asp_constant('Alice')}, I) :- true_owner(_, I).", strategy=strategy)
    got = predicted_atoms(task, only_alice.predict(task, task.split("test")))
    assert got[0] == {"next_owner(Alice, 0)"} and got[1] == set()


@pytest.mark.parametrize("text", ["Alice", "007", "a-b", "x", "12", "-3", "0", "-0", "_x", "a b", "é"])
def test_constant_spelling_round_trips_and_matches_the_gdl_layer(text):
    symbol = asp_constant(text)
    assert constant_text(symbol) == text
    assert str(symbol) == constant_to_asp(text)
    atom = f"p({text}, b)"
    assert flat_atom(asp_atom(atom)) == atom


def test_flat_atom_spelling():
    assert str(asp_atom("terminal()")) == "terminal"
    assert flat_atom(asp_atom("terminal()")) == "terminal()"
    assert str(asp_atom("true_cell(1, 2, x)")) == "true_cell(1,2,x)"


def test_unparsable_rules_name_the_rule():
    with pytest.raises(RuleError) as e:
        RuleModel("next_cell(C, x) :- true_cell(C, b).\nnext_cell(C, o) :- true_cell(C, .\n")
    assert "line 2: next_cell(C, o) :- true_cell(C, ." in str(e.value)
    assert "line 1" not in str(e.value)


def test_unsafe_rules_name_the_rule():
    with pytest.raises(RuleError) as e:
        RuleModel("next_cell(C, x) :- true_cell(C, b).\nnext_cell(C, M) :- not true_cell(C, M).\n")
    assert "unsafe" in str(e.value)
    assert "line 2: next_cell(C, M) :- not true_cell(C, M)." in str(e.value)


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="externals"):
        RuleModel("p :- q.", strategy="magic")


def test_model_pickles_after_use_and_predicts_the_same():
    task = board_task()
    model = RuleModel(RULES, name="toy")
    before = model.predict(task, task.split("test"))
    clone = pickle.loads(pickle.dumps(model))
    assert clone.rules() == RULES and clone.describe() == "toy: 4 rules"
    assert (clone.predict(task, task.split("test")) != before).nnz == 0


def test_restricted_task_and_empty_split():
    task = board_task().for_predicate("next_control")
    model = RuleModel(RULES)
    got = predicted_atoms(task, model.predict(task, task.split("test")))
    assert got == [{"next_control(black)"}, {"next_control(white)"}, {"next_control(black)"}]
    empty = make_task({"test": []}, TARGETS, STATICS)
    assert model.predict(empty, empty.split("test")).shape == (0, len(TARGETS))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_static_atoms_of_a_predicate_that_also_changes(strategy):
    """``open(1)`` is static but ``open(2)`` comes and goes: both must be seen in every example."""
    rows = [(["open(2)"], []), ([], [])]
    task = make_task({"test": rows}, ["legal_go(1)", "legal_go(2)"], statics=["open(1)"], target="legal")
    model = RuleModel("legal_go(C) :- open(C).", strategy=strategy)
    got = predicted_atoms(task, model.predict(task, task.split("test")))
    assert got == [{"legal_go(1)", "legal_go(2)"}, {"legal_go(1)"}]


TICTACTOE_NEXT = """
next_cell(M, N, x) :- does_mark(white, M, N), true_cell(M, N, b).
next_cell(M, N, o) :- does_mark(black, M, N), true_cell(M, N, b).
next_cell(M, N, W) :- true_cell(M, N, W), W != b.
next_cell(M, N, b) :- true_cell(M, N, b), does_mark(P, J, K), M != J.
next_cell(M, N, b) :- true_cell(M, N, b), does_mark(P, J, K), N != K.
next_control(white) :- true_control(black).
next_control(black) :- true_control(white).
"""


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_hand_written_tictactoe_next_rules_solve_the_published_task(iggp_dir, strategy):
    from tasks.iggp import Dataset

    task = Dataset(iggp_dir).load_task("tictactoe", "next")
    scores = evaluate(RuleModel(TICTACTOE_NEXT, strategy=strategy), task, ("train", "test"))
    for split, per_predicate in scores.items():
        assert pool(per_predicate.values()).perfect, split
    # Dropping the rule for o's moves must cost exactly the o-marks, as false negatives.
    weaker = "\n".join(line for line in TICTACTOE_NEXT.splitlines() if "black, M, N" not in line)
    counts = evaluate(RuleModel(weaker, strategy=strategy), task, ("test",))["test"]["next_cell"]
    assert counts.fn > 0 and counts.fp == 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_empty_program_predicts_nothing(strategy):
    task = board_task()
    pred = RuleModel("", name="empty", strategy=strategy).predict(task, task.split("test"))
    assert pred.shape == (3, len(TARGETS)) and pred.nnz == 0
