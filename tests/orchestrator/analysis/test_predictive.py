"""Applicability and effects precision/recall on a hand-made game whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest
from store_rows import row

from orchestrator.analysis.predictive import (
    PR,
    applicability,
    effects,
    macro,
    predictive_power,
    score_store,
    state_action_task,
)
from orchestrator.storage.store import ResultStore
from tasks.iggp import DatFile, task_from_dats, write_dat

# A one-role counter: state true_c(N); moves inc / stay; next_c(N+1) after inc, next_c(N) after stay.
LEGAL = DatFile(
    atoms=["legal(r, inc)", "legal(r, stay)"],
    statics=[],
    examples=[(["true_c(0)"], ["legal(r, inc)", "legal(r, stay)"]), (["true_c(1)"], ["legal(r, stay)"])],
)
NEXT = DatFile(
    atoms=["next_c(0)", "next_c(1)"],
    statics=[],
    examples=[
        (["true_c(0)", "does(r, inc)"], ["next_c(1)"]),
        (["true_c(0)", "does(r, stay)"], ["next_c(0)"]),
        (["true_c(1)", "does(r, stay)"], ["next_c(1)"]),
    ],
)


class Fixed:
    """A model that predicts a fixed matrix per task name (for known answers)."""

    def __init__(self, by_target):
        self.by_target = by_target

    def predict(self, task, split):
        return self.by_target[task.target](task, split)


def truth(task, split):
    return split.positives


def counter_legal(task, split):
    """The true legal rules of the counter: stay always; inc only from c(0)."""
    out = np.zeros((split.n_examples, len(task.target_atoms)), dtype=bool)
    for e in range(split.n_examples):
        state = {task.background_atoms[i] for i in split.background_of(e)}
        out[e, task.target_atoms.index["legal(r, stay)"]] = True
        out[e, task.target_atoms.index["legal(r, inc)"]] = "true_c(0)" in state
    return out


def nothing(task, split):
    return np.zeros((split.n_examples, len(task.target_atoms)), dtype=bool)


@pytest.fixture()
def tasks():
    legal = task_from_dats("counter", "legal", {"test": LEGAL})
    nxt = task_from_dats("counter", "next", {"test": NEXT})
    return legal, nxt


def test_conventions():
    assert PR(0, 0, 3).precision == 1.0 and PR(0, 0, 3).recall == 0.0
    assert PR(0, 2, 0).recall == 1.0 and PR(0, 2, 0).precision == 0.0
    assert macro({}) == (1.0, 1.0)
    assert macro({"a": PR(1, 1, 0), "b": PR(1, 0, 1)}) == (0.75, 0.75)


def test_the_true_model_is_perfect(tasks):
    legal, nxt = tasks
    pp = predictive_power(Fixed({"legal": counter_legal}), Fixed({"next": truth}), legal, nxt)
    assert (pp.applicability_precision, pp.applicability_recall) == (1.0, 1.0)
    assert (pp.effects_precision, pp.effects_recall) == (1.0, 1.0)
    assert pp.actions == 2 and pp.joint_actions == 2


def test_known_counts(tasks):
    legal, nxt = tasks
    s = legal.split("test")
    always = np.ones((2, 2), dtype=bool)
    app = applicability(legal, s, always)
    assert app["legal(r, inc)"] == PR(1, 1, 0) and app["legal(r, stay)"] == PR(2, 0, 0)
    # A next model that never changes anything (inertia): keeps c(0) after inc, which E deletes.
    n = nxt.split("test")
    inertia = np.array([[1, 0], [1, 0], [0, 1]], dtype=bool)
    eff = effects(nxt, n, inertia)
    assert eff["does(r, inc)"] == PR(0, 0, 1)  # the kept c(0) is a false "no change"
    assert eff["does(r, stay)"] == PR(0, 0, 0)


def test_effects_skip_actions_the_model_thinks_illegal(tasks):
    legal, nxt = tasks
    on_states = state_action_task(nxt, legal.target_atoms)
    n = nxt.split("test")
    wrong = np.array([[0, 1], [1, 0], [0, 1]], dtype=bool)
    only_stay = np.array([[0, 1], [0, 1], [0, 1]], dtype=bool)  # inc never legal in M
    eff = effects(nxt, n, wrong, on_states, only_stay)
    assert set(eff) == {"does(r, stay)"}
    no_legal = predictive_power(Fixed({"legal": nothing}), Fixed({"next": truth}), legal, nxt)
    assert no_legal.applicability_precision == 1.0 and no_legal.applicability_recall == 0.0
    assert no_legal.joint_actions == 0 and (no_legal.effects_precision, no_legal.effects_recall) == (1.0, 1.0)


def test_stored_runs_are_joined_and_scored(tmp_path):
    """orch analyse predictive: a run's stored legal and next rules, read back from the store."""
    for split in ("train", "validate", "test"):
        (tmp_path / "data" / split).mkdir(parents=True)
        write_dat(tmp_path / "data" / split / f"counter_legal_{split}.dat", LEGAL)
        write_dat(tmp_path / "data" / split / f"counter_next_{split}.dat", NEXT)
    rules = {
        "legal": "legal(r,stay) :- true_c(N).\nlegal(r,inc) :- true_c(0).",
        "next_c": "next_c(1) :- true_c(0), does(r,inc).\nnext_c(N) :- true_c(N), does(r,stay).",
    }
    rows = [
        row(f"{learner}-{p}", dataset=str(tmp_path), game="counter", target=p.split("_")[0], predicate=p,
            learner=learner, program=text if learner == "rules" else None,
            description="rules" if learner == "rules" else "knn1 over 3 training backgrounds")
        for learner in ("rules", "knn1")
        for p, text in rules.items()
    ]  # fmt: skip
    rows.append(row("failed", dataset=str(tmp_path), game="counter", target="next", predicate="next_c",
                    learner="rules", status="error", program="garbage :- ."))  # fmt: skip
    store = ResultStore(tmp_path / "store")
    store.write(rows)
    [got] = score_store(store)  # knn1's models are descriptions; the error row is not a model
    assert got["learner"] == "rules" and got["game"] == "counter" and got["sweep"] == "s1"
    assert (got["applicability_precision"], got["applicability_recall"]) == (1.0, 1.0)
    assert (got["effects_precision"], got["effects_recall"]) == (1.0, 1.0)


def test_macro_averages_by_hand(tasks):
    legal, _ = tasks
    always = np.ones((2, 2), dtype=bool)
    # inc: TP 1, FP 1 -> P 0.5, R 1; stay: TP 2 -> P 1, R 1; macro P = 0.75, R = 1
    assert macro(applicability(legal, legal.split("test"), always)) == (0.75, 1.0)
    # a model that predicts stay only: inc TP 0 FN 1 -> P 1 (nothing predicted), R 0; macro (1, 0.5)
    only_stay = np.array([[0, 1], [0, 1]], dtype=bool)
    assert macro(applicability(legal, legal.split("test"), only_stay)) == (1.0, 0.5)


def test_terminal_states_are_no_joint_action():
    """A terminal state (no does atom) is not an effects example: it used to be an empty action."""
    with_terminal = DatFile(NEXT.atoms, NEXT.statics, [*NEXT.examples, (["true_c(1)"], [])])
    nxt = task_from_dats("counter", "next", {"test": with_terminal})
    n = nxt.split("test")
    # inertia on every example: the terminal one keeps c(1), which E (no successor) does not have
    inertia = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], dtype=bool)
    eff = effects(nxt, n, inertia)
    assert set(eff) == {"does(r, inc)", "does(r, stay)"}  # no "" action
    # by hand: inc keeps c(0) (FN 1, R 0); stay changes nothing (P = R = 1): macro recall 0.5
    assert macro(eff) == (1.0, 0.5)


def test_an_empty_learned_program_is_scored_not_dropped(tmp_path):
    """An empty learned program (``program`` "", with its description) is scored, never dropped."""
    for split in ("train", "validate", "test"):
        (tmp_path / "data" / split).mkdir(parents=True)
        write_dat(tmp_path / "data" / split / f"counter_legal_{split}.dat", LEGAL)
        write_dat(tmp_path / "data" / split / f"counter_next_{split}.dat", NEXT)
    rows = [
        row("l", dataset=str(tmp_path), game="counter", target="legal", predicate="legal", learner="ilasp",
            program="", description="ilasp: 0 rules; budget; best partial cover, 3 iterations, train BA 0.500"),
        row("n", dataset=str(tmp_path), game="counter", target="next", predicate="next_c", learner="ilasp",
            program="next_c(N) :- true_c(N), does(r,stay).", description="ilasp: 1 rule"),
        row("k", dataset=str(tmp_path), game="counter", target="legal", predicate="legal", learner="knn1",
            program=None, description="knn1 over 3 training backgrounds"),
        row("k2", dataset=str(tmp_path), game="counter", target="next", predicate="next_c", learner="knn1",
            program=None, description="knn1 over 3 training backgrounds"),
    ]  # fmt: skip
    store = ResultStore(tmp_path / "store")
    store.write(rows)
    skipped: list[dict] = []
    [got] = score_store(store, skipped=skipped)
    assert got["learner"] == "ilasp"
    # the empty legal program predicts nothing: P = 1 (vacuous), R = 0 over inc and stay
    assert (got["applicability_precision"], got["applicability_recall"]) == (1.0, 0.0)
    # no action is legal in M, so no state is scored for effects: P = R = 1, zero joint actions
    assert got["joint_actions"] == 0
    assert [(s["learner"], s["reason"]) for s in skipped] == [("knn1", "not rules (a non-symbolic model)")]
