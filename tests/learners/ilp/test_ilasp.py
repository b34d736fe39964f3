"""The ilasp learner: small hand-made games learned exactly, anytime behaviour, and two real tasks."""

from __future__ import annotations

import time

import numpy as np
import pytest

from learners.base import Budget, make_learner
from learners.ilp.evaluate import RuleModel
from learners.ilp.ilasp import IlaspLearner, LearnedProgram
from learners.ilp.loop import LoopState
from learners.metrics import evaluate, pool
from tasks.iggp import Dataset, DatFile, task_from_dats
from tasks.signature import parse_typ

LIGHTS_TYP = """
true, next :: prop -> bool.
does :: agent -> action -> bool.
legal :: agent -> action -> bool.
on :: pos -> prop.
toggle :: pos -> action.
noop :: action.
index :: pos -> bool.
a, b :: agent.
1, 2, 3, 4 :: pos.
"""
POSITIONS = ["1", "2", "3", "4"]


def _lights(target: str, seed: int, n: int) -> DatFile:
    """A hand-made game: lights 1..4; agent a toggles one light (or does noop).

    next: a light is on next iff it is on and not toggled, or off and toggled (needs negation with
    an anonymous variable). legal: ``a`` may toggle a light that is on, ``b`` one that is off
    (needs head constants and a negated literal guarded by a static).
    """
    rng = np.random.default_rng(seed)
    statics = [f"index({p})" for p in POSITIONS]
    if target == "next":
        atoms = [f"next_on({p})" for p in POSITIONS]
    else:
        atoms = [f"legal_toggle({g}, {p})" for g in ("a", "b") for p in POSITIONS]
    examples = []
    for _ in range(n):
        on = {p for p in POSITIONS if rng.random() < 0.5}
        background = [f"true_on({p})" for p in sorted(on)]
        if target == "next":
            move = POSITIONS[rng.integers(4)] if rng.random() < 0.8 else None
            background += [f"does_toggle(a, {move})" if move else "does(a, noop)"]
            nxt = on ^ {move} if move else on
            positives = [f"next_on({p})" for p in POSITIONS if p in nxt]
        else:
            positives = [f"legal_toggle(a, {p})" for p in POSITIONS if p in on]
            positives += [f"legal_toggle(b, {p})" for p in POSITIONS if p not in on]
        examples.append((background, positives))
    return DatFile(atoms, statics, examples)


def lights_task(target: str, n_train: int = 60):
    dats = {
        "train": _lights(target, 1, n_train),
        "validate": _lights(target, 2, 30),
        "test": _lights(target, 3, 60),
    }
    return task_from_dats("lights", target, dats, signature=parse_typ(LIGHTS_TYP, "lights.typ"))


def _test_ba(model, task) -> float:
    return pool(evaluate(model, task, ["test"])["test"].values()).balanced_accuracy


@pytest.mark.parametrize("target", ["next", "legal"])
def test_learns_hand_made_game_exactly(target):
    task = lights_task(target).for_predicate(f"{target}_on" if target == "next" else "legal_toggle")
    reported: list = []
    model = IlaspLearner().fit(task, Budget(30), reported.append)
    assert isinstance(model, LearnedProgram) and isinstance(model, RuleModel)
    assert _test_ba(model, task) == 1.0, model.rules()
    assert "not " in model.rules()  # both targets need negation
    assert reported and reported[-1].rules() == model.rules()
    if target == "legal":  # head constants, variables named by type
        assert "legal_toggle(a,Pos1)" in model.rules() and "legal_toggle(b,Pos1)" in model.rules()


def test_no_positives_learns_the_empty_program():
    dat = _lights("legal", 1, 10)
    empty = DatFile(dat.atoms, dat.statics, [(b, []) for b, _ in dat.examples])
    task = task_from_dats("lights", "legal", {"train": empty, "test": empty}, signature=parse_typ(LIGHTS_TYP))
    model = IlaspLearner().fit(task, Budget(5))
    assert model.rules() == ""
    assert _test_ba(model, task) == 1.0


def test_budget_stop_returns_the_best_hypothesis_so_far():
    task = lights_task("next", n_train=200).for_predicate("next_on")
    reported: list = []
    start = time.monotonic()
    model = IlaspLearner().fit(task, Budget(0.3), reported.append)
    assert time.monotonic() - start < 5
    assert reported, "the anytime contract: at least one hypothesis is reported"
    assert model.status == "complete" or model.status.startswith("budget"), model.status
    # what is returned is at least as good on train as the last reported iteration
    assert model.train_ba >= max(getattr(m, "train_ba", 0.0) for m in reported[:-1] or reported)


def test_registered_with_params():
    learner = make_learner("ilasp_b3")
    assert learner.settings.max_body == 3
    assert make_learner("ilasp").settings.max_body == 5
    bounded = make_learner("ilasp_b4_d300000_w900_nocombine").settings
    assert (bounded.max_body, bounded.data_atoms, bounded.max_work, bounded.combine) == (
        4,
        300_000,
        900,
        False,
    )
    assert make_learner("ilasp").settings.data_atoms == 2_000_000


@pytest.mark.parametrize(("game", "target"), [("scissors_paper_stone", "next"), ("tictactoe", "legal")])
def test_real_easy_tasks_are_learned_perfectly(iggp_dir, game, target):
    task = Dataset(iggp_dir).load_task(game, target)
    counts = []
    for p in task.predicates:
        sub = task.for_predicate(p)
        model = IlaspLearner().fit(sub, Budget(30))
        counts += list(evaluate(model, sub, ["test"])["test"].values())
    assert pool(counts).perfect


COIN_TYP = """
true :: prop -> bool.
terminal :: bool.
on :: pos -> prop.
step :: time -> prop.
1, 2, 3, 4 :: pos.
5, 6, 7, 8 :: time.
"""


def _coincidence(examples: list[tuple[set[str], int, bool]]) -> DatFile:
    """``terminal`` iff lights 1 and 2 are on; each example is (lights on, step, terminal)."""
    rows = []
    for on, step, terminal in examples:
        assert terminal == ({"1", "2"} <= on)
        rows.append(
            ([f"true_on({p})" for p in sorted(on)] + [f"true_step({step})"], ["terminal"] if terminal else [])
        )
    return DatFile(["terminal"], [], rows)


def test_a_train_perfect_coincidence_is_refit_away_on_train_and_validate():
    """On train every terminal state happens to be at step 8 and none other is, so the shortest
    train-perfect program is ``terminal :- true_step(8)``; validate has terminal states at other
    steps, so learning once more from both finds the concept (`IlaspLearner._refit`)."""
    lights = [{"1", "2"}, {"1", "2", "3"}, {"1"}, {"2", "4"}, {"3"}, {"1", "3", "4"}, set(), {"2", "3"}]
    train = [(on, 8 if {"1", "2"} <= on else 5 + i % 3, {"1", "2"} <= on) for i, on in enumerate(lights)]
    validate = [({"1", "2", "4"}, 6, True), ({"1", "2"}, 5, True), ({"1", "4"}, 8, False), ({"4"}, 7, False)]
    test = [({"1", "2", "3", "4"}, 7, True), ({"1", "2"}, 6, True), ({"2"}, 8, False), ({"3", "4"}, 5, False)]
    dats = {"train": _coincidence(train), "validate": _coincidence(validate), "test": _coincidence(test)}
    task = task_from_dats("coincidence", "terminal", dats, signature=parse_typ(COIN_TYP, "coincidence.typ"))
    view = task.learning_view()
    once = make_learner("ilasp_norefit").fit(view, Budget(20))
    assert once.rules().strip() == "terminal :- true_step(8).", once.rules()
    reported: list = []
    model = make_learner("ilasp").fit(view, Budget(20), reported.append)
    assert _test_ba(once, task) < 1.0 and _test_ba(model, task) == 1.0, model.rules()
    assert "refit on train+validate" in model.describe() and reported[-1] is model
    assert task.pooled_train().split("train").n_examples == len(train) + len(validate)


def test_an_atom_positive_in_every_training_example_is_learned_as_a_fact():
    """Four examples and no negative: the shortest consistent rule is the fact, not a coincidence
    of the four states (``legal(a, noop) :- not true_on(4).``) that validate or test refutes."""
    typ = "true :: prop -> bool.\nlegal :: agent -> action -> bool.\non :: pos -> prop.\na :: agent.\n"
    typ += "noop :: action.\n1, 2, 3, 4 :: pos.\n"

    def dat(lights: list[str]) -> DatFile:
        return DatFile(["legal(a, noop)"], [], [([f"true_on({p})"], ["legal(a, noop)"]) for p in lights])

    dats = {"train": dat(["1", "2", "3", "1"]), "validate": dat(["4"]), "test": dat(["4", "2"])}
    task = task_from_dats("always", "legal", dats, signature=parse_typ(typ, "always.typ"))
    model = make_learner("ilasp").fit(task.learning_view(), Budget(10))
    assert model.rules().strip() == "legal(a,noop).", model.rules()
    assert _test_ba(model, task) == 1.0


def test_a_split_past_the_data_bound_is_learned_from_a_seeded_sample_of_whole_examples():
    from dataclasses import replace

    from learners.ilp import data_bound
    from learners.ilp.bias import Settings

    task = lights_task("next", n_train=400).for_predicate("next_on")
    limit = data_bound.atoms_of(task, "train") // 4
    bounded, note = data_bound.within(task, limit, seed=7)
    n = bounded.split("train").n_examples
    assert 0 < n < 400 and data_bound.atoms_of(bounded, "train") <= limit * 1.2
    assert note.startswith(f"learned from {n:,} of 400 train examples")
    assert bounded.split("validate") is task.split("validate")  # under the bound: untouched
    again, _ = data_bound.within(task, limit, seed=7)
    assert (
        again.split("train").positives != bounded.split("train").positives
    ).nnz == 0  # same seed, same rows
    assert data_bound.within(task, None, seed=7) == (task, "")
    reported: list = []
    model = IlaspLearner(replace(Settings(), data_atoms=limit)).fit(task, Budget(30), reported.append, seed=7)
    assert _test_ba(model, task) == 1.0, model.rules()  # the rules are in a quarter of the data too
    assert "(data bound)" in model.describe() and all("(data bound)" in m.describe() for m in reported)
    assert "data bound" not in IlaspLearner().fit(task, Budget(30)).describe()


def test_the_first_report_is_the_baseline_program_and_later_ones_beat_it_on_train():
    """A budget that stops the search before its first hypothesis still leaves a model: the inertia
    rule, reported before any search (learners/ilp/baseline.py); an iteration is reported after it
    only if better on train."""
    task = lights_task("next", n_train=200).for_predicate("next_on")
    reported: list = []
    model = make_learner("ilasp_w1").fit(task, Budget(30), reported.append)
    first = reported[0]
    assert first.status == "baseline" and first.fallback, first.status
    assert first.rules().strip() == "next_on(Pos1) :- true_on(Pos1).", first.rules()
    assert first.train_ba > 0.7
    iterations = [m for m in reported if m.status == "iteration"]
    assert all(m.train_ba > first.train_ba for m in iterations)
    assert _test_ba(model, task) >= _test_ba(first, task) - 0.05  # the fallback offers it too


def test_the_baseline_keeps_a_fact_only_if_it_raises_train_balanced_accuracy():
    from learners.ilp.baseline import best_subset
    from learners.ilp.cover import ScoredRule

    def rule(text: str, pos: list[int], neg: list[int]) -> ScoredRule:
        return ScoredRule(text, 1, np.array(pos, dtype=np.int64), np.array(neg, dtype=np.int64), 0)

    good = rule("good.", [0, 1, 2, 3], [10])
    noisy = rule("noisy.", [4], [11, 12, 13, 14, 15, 16])
    chosen = best_subset([noisy, good], n_pos=6, n_neg=10)
    assert [r.text for r in chosen] == ["good."]


def test_seeds_alternate_between_positives_the_frame_cover_explains_and_the_rest():
    state = LoopState(explained=np.array([1, 2, 3], dtype=np.int64))
    rng = np.random.default_rng(0)
    drawn = [state.next_seed(np.array([1, 2, 3, 7, 9]), rng) for _ in range(40)]
    assert set(drawn[0::2]) == {7, 9} and set(drawn[1::2]) == {1, 2, 3}
    assert {state.next_seed(np.array([2, 3]), rng) for _ in range(20)} == {2, 3}  # one side left
    assert {state.next_seed(np.array([7, 9]), rng) for _ in range(20)} == {7, 9}
    assert {LoopState().next_seed(np.array([4, 5]), rng) for _ in range(20)} == {4, 5}
