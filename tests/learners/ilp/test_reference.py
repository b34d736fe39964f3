"""The ``reference`` learner: a game's own GDL, bridged to flattened atoms, must solve its tasks."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from learners.base import Budget, make_learner
from learners.ilp.reference import NoGDL, reference_model
from learners.metrics import evaluate, pool
from tasks.iggp import Dataset, DatFile, write_dat
from tasks.task import SPLITS, parse_atom

# A hand-made game. Its helper relation ``next_at`` ("one cell further") has the name of the
# flattened fluent ``next(at(X))``, as in firesheep; ``legal(R, noop)`` stays unflattened.
MINI_GDL = """
(role p) (role q)
(succ 1 2) (succ 2 3)
(init (at 1))
(<= (legal ?r noop) (role ?r))
(<= (legal ?r (go ?x)) (role ?r) (true (at ?y)) (succ ?y ?x))
(<= (next_at ?y) (does ?r (go ?x)) (succ ?x ?y))
(<= moved (does ?r (go ?x)))
(<= (next (at ?x)) (does ?r (go ?x)))
(<= (next (at ?x)) (true (at ?x)) (not moved))
(<= (goal ?r 100) (role ?r) (true (at 3)))
(<= (goal ?r 0) (role ?r) (not (true (at 3))))
(<= terminal (true (at 3)))
"""
ROLES, CELLS = ("p", "q"), (1, 2, 3)
STATICS = ["role(p)", "role(q)", "succ(1, 2)", "succ(2, 3)"]


def mini_examples(target: str) -> tuple[list[str], list[tuple[list[str], list[str]]]]:
    """The game's semantics, computed by hand, for every state and joint move."""
    rows = []
    if target == "next":
        atoms = [f"next_at({x})" for x in CELLS]
        for at in CELLS:
            for moves in (
                [("p", "noop"), ("q", "noop")],
                [("p", "go(2)"), ("q", "noop")],
                [("p", "noop"), ("q", "go(3)")],
            ):
                does = [f"does({r}, noop)" if m == "noop" else f"does_go({r}, {m[3]})" for r, m in moves]
                goes = [int(m[3]) for _, m in moves if m != "noop"]
                rows.append(([f"true_at({at})", *does], [f"next_at({x})" for x in (goes or [at])]))
        return atoms, rows
    states = [[f"true_at({x})"] for x in CELLS]
    if target == "legal":
        atoms = [f"legal({r}, noop)" for r in ROLES] + [f"legal_go({r}, {x})" for r in ROLES for x in CELLS]
        for at in CELLS:
            go = [f"legal_go({r}, {at + 1})" for r in ROLES] if at < 3 else []
            rows.append(([f"true_at({at})"], [f"legal({r}, noop)" for r in ROLES] + go))
    elif target == "goal":
        atoms = [f"goal({r}, {s})" for r in ROLES for s in (0, 100)]
        for at, bg in zip(CELLS, states, strict=True):
            rows.append((bg, [f"goal({r}, {100 if at == 3 else 0})" for r in ROLES]))
    else:
        atoms = ["terminal()"]
        rows = [(bg, ["terminal()"] if at == 3 else []) for at, bg in zip(CELLS, states, strict=True)]
    return atoms, rows


@pytest.fixture(scope="module")
def mini_dataset(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mini")
    (root / "games").mkdir()
    (root / "games" / "mini.txt").write_text(MINI_GDL)
    for split in SPLITS:
        (root / "data" / split).mkdir(parents=True)
        for target in ("goal", "legal", "next", "terminal"):
            atoms, rows = mini_examples(target)
            write_dat(root / "data" / split / f"mini_{target}_{split}.dat", DatFile(atoms, STATICS, rows))
    return root


@pytest.mark.parametrize("target", ["goal", "legal", "next", "terminal"])
def test_reference_solves_a_hand_made_game(mini_dataset, target):
    task = Dataset(mini_dataset).load_task("mini", target)
    reported = []
    model = make_learner("reference").fit(task, Budget(60), reported.append)
    assert reported == [model]
    for split, per_predicate in evaluate(model, task, SPLITS).items():
        assert pool(per_predicate.values()).perfect, (target, split)


def test_a_gdl_relation_named_like_a_flattened_predicate_is_renamed(mini_dataset):
    task = Dataset(mini_dataset).load_task("mini", "next")
    model = reference_model(task)
    assert "next_at__gdl(" in model.rules()
    assert "next_at(A0) :- next(at(A0))." in model.rules()
    assert "next_at" in model.describe()


def test_nullary_constants_and_goal_need_no_bridge(mini_dataset):
    rules = reference_model(Dataset(mini_dataset).load_task("mini", "legal")).rules()
    assert "legal_go(A0,A1) :- legal(A0,go(A1))." in rules
    assert ":- legal(A0,A1)." not in rules  # legal(p, noop) is shared by GDL and data as it is


def test_a_game_without_gdl_is_a_clear_error(iggp_dir):
    task = Dataset(iggp_dir).load_task("coins", "next")  # published with a Prolog version only
    with pytest.raises(NoGDL, match="no GDL for game coins"):
        make_learner("reference").fit(task, Budget(10))


def test_a_task_without_a_source_is_a_clear_error(mini_dataset):
    task = Dataset(mini_dataset).load_task("mini", "goal")
    task.source = ""
    with pytest.raises(NoGDL, match="no GDL for game mini"):
        reference_model(task)


def _score(dataset: Dataset, game: str, target: str) -> dict[str, object]:
    task = dataset.load_task(game, target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # GDL files with Prolog-style lines warn when parsed
        model = reference_model(task)
    return {split: pool(c.values()) for split, c in evaluate(model, task, ("validate", "test")).items()}


@pytest.mark.parametrize("game", ["tictactoe", "buttons_and_lights", "dont_touch", "gt_chicken"])
def test_reference_is_perfect_on_published_games(iggp_dir, game):
    dataset = Dataset(iggp_dir)
    for target in dataset.targets(game):
        for split, counts in _score(dataset, game, target).items():
            assert counts.perfect, (game, target, split, counts)


@pytest.mark.slow
def test_reference_on_every_published_task(iggp_dir):
    """All 40 games: every task with GDL is perfect, the two known data defects included."""
    dataset = Dataset(iggp_dir)
    imperfect, scored = {}, 0
    for game in dataset.games():
        for target in dataset.targets(game):
            task = dataset.load_task(game, target)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = make_learner("reference").fit(task, Budget(600))
            except NoGDL:
                continue
            scored += 1
            counts = evaluate(model, task, SPLITS)
            bad = {s: pool(c.values()) for s, c in counts.items() if not pool(c.values()).perfect}
            if bad:
                imperfect[(game, target)] = bad
    assert scored == 132 and not imperfect, imperfect


def _published_and_corrected(task):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return reference_model(task), reference_model(task, corrected=True)


def test_firesheep_misses_are_exactly_the_killed_sheep(iggp_dir):
    """The published GDL misses exactly the fluents of killed sheep; the corrected one misses nothing."""
    task = Dataset(iggp_dir).load_task("firesheep", "next")
    split = task.split("validate")
    published, corrected = _published_and_corrected(task)
    predicted = published.predict(task, split).toarray()
    labels = split.positives.toarray()
    wrong = np.zeros_like(labels)
    wrong[:, split.candidates] = (predicted != labels)[:, split.candidates]
    assert wrong.any()
    for e in np.flatnonzero(wrong.any(axis=1)):
        killed = {
            parse_atom(task.background_atoms[i])[1][1]
            for i in split.background_of(e)
            if task.background_atoms[i].startswith("does_kill(")
        }
        assert killed, e
        for j in np.flatnonzero(wrong[e]):
            _, args = parse_atom(task.target_atoms[j])
            assert args[0] in killed, (task.target_atoms[j], killed)  # the fluent of a killed sheep
    assert pool(evaluate(corrected, task, ["validate"])["validate"].values()).perfect
    assert "next_at__gdl(" in corrected.rules()  # the dataset kept next(at(..)) and next_at apart


def test_pilgrimage_misses_are_exactly_the_renamed_action(iggp_dir):
    """legal(P, place_pilgrim_action(I, J)) in the GDL, but the data's legal atoms use the .typ's
    name ``legal_place_pilgrim`` (its does/input atoms keep the GDL's); corrected, nothing is missed."""
    task = Dataset(iggp_dir).load_task("pilgrimage", "legal")
    split = task.split("validate")
    published, corrected = _published_and_corrected(task)
    predicted = published.predict(task, split).toarray()
    labels = split.positives.toarray()
    cand = split.candidates
    missed = labels[:, cand] & ~predicted[:, cand]
    extra = predicted[:, cand] & ~labels[:, cand]
    assert missed.any() and not extra.any()
    assert {parse_atom(task.target_atoms[j])[0] for j in cand[np.flatnonzero(missed.any(axis=0))]} == {
        "legal_place_pilgrim"
    }
    assert pool(evaluate(corrected, task, ["validate"])["validate"].values()).perfect


# A hand-made game that contains pilgrimage's one corrected rule, to test how the learner chooses.
PILGRIM_GDL = """
(role red)
(index 1) (index 2)
(init (free 1))
(<= (legal_pilgrim ?p ?i ?j) (role ?p) (true (free ?i)) (index ?j))
(<= (legal ?p (place_pilgrim_action ?i ?j)) (legal_pilgrim ?p ?i ?j))
(<= (next (free ?j)) (does ?p (place_pilgrim_action ?i ?j)))
(<= (goal red 0) (true (free 1)))
(<= terminal (true (free 2)))
"""


@pytest.mark.parametrize("action", ["place_pilgrim_action", "place_pilgrim"])
def test_the_reference_keeps_the_program_that_fits_the_training_data(tmp_path, action):
    """Data named as in the GDL keeps the published program; data named as in the published
    pilgrimage data (place_pilgrim) gets the corrected one. Either way every split is perfect."""
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "pilgrimage.txt").write_text(PILGRIM_GDL)
    atoms = [f"legal_{action}(red, {i}, {j})" for i in (1, 2) for j in (1, 2)]
    rows = [([f"true_free({i})"], [f"legal_{action}(red, {i}, {j})" for j in (1, 2)]) for i in (1, 2)]
    for split in SPLITS:
        (tmp_path / "data" / split).mkdir(parents=True)
        write_dat(tmp_path / "data" / split / f"pilgrimage_legal_{split}.dat", DatFile(atoms, [], rows))
    task = Dataset(tmp_path).load_task("pilgrimage", "legal")
    reported = []
    model = make_learner("reference").fit(task, Budget(60), reported.append)
    assert ("corrected for a known defect" in model.describe()) == (action == "place_pilgrim")
    assert len(reported) == (2 if action == "place_pilgrim" else 1) and reported[-1] is model
    for split, per_predicate in evaluate(model, task, SPLITS).items():
        assert pool(per_predicate.values()).perfect, split


LEFT_TO_THE_QUERY = """
(role r) (init (score 0))
(add 0 1 1) (add 1 1 2) (add 2 1 3)
(<= (add ?x 0 ?x))
(<= (legal r (inc ?y)) (true (score ?x)) (add ?x 1 ?y))
(<= (legal r stay) (true (score ?x)))
(<= (next (score ?y)) (does r (inc ?y)))
(<= (next (score ?z)) (does r stay) (true (score ?x)) (add ?x 0 ?z))
(<= terminal (true (score 3)))
(<= (goal r 100) (true (score 3)))
(<= (goal r 0) (not (true (score 3))))
"""


def test_a_game_played_anyway_is_read_with_the_same_leniency(tmp_path):
    """``(<= (add ?x 0 ?x))`` leaves ?x to the query: the generator binds it by the universe
    (docs/gdl.md, "play anyway"), and so must the reference, or clingo calls the rule unsafe."""
    from tasks.generate import generate_game

    gdl = tmp_path / "q.txt"
    gdl.write_text(LEFT_TO_THE_QUERY)
    generate_game(gdl, None, tmp_path / "ds", episodes=30, steps=6, seed=0)
    ds = Dataset(tmp_path / "ds")
    for target in ds.targets("q"):
        task = ds.load_task("q", target)
        model = make_learner("reference").fit(task, Budget(30.0))
        for split in ("train", "test"):
            assert pool(evaluate(model, task, (split,))[split].values()).perfect, (target, split)


@pytest.mark.parametrize("target", ["goal", "legal", "next", "terminal"])
def test_a_game_too_big_for_clingo_per_example_is_predicted_by_the_engine(mini_dataset, monkeypatch, target):
    """Past `SYMBOLIC_ATOMS` the same rules are predicted by the compiled engine: still perfect on
    every split (the helper named like a flattened fluent included), and still after pickling."""
    import pickle

    from learners.ilp import reference

    task = Dataset(mini_dataset).load_task("mini", target)
    assert type(make_learner("reference").fit(task, Budget(60))).__name__ == "RuleModel"
    monkeypatch.setattr(reference, "SYMBOLIC_ATOMS", 0)
    reported = []
    model = make_learner("reference").fit(task, Budget(60), reported.append)
    assert isinstance(model, reference.EngineModel) and "compiled engine" in model.describe()
    assert len(reported) == 2 and reported[-1] is model  # the clingo model first, at once
    assert model.rules() == reference_model(task).rules()
    for m in (model, pickle.loads(pickle.dumps(model))):
        for split, per_predicate in evaluate(m, task, SPLITS).items():
            assert pool(per_predicate.values()).perfect, (target, split)


@pytest.mark.parametrize(
    "game", ["tictactoe", "pilgrimage", pytest.param("firesheep", marks=pytest.mark.slow)]
)
def test_the_engine_route_is_perfect_on_published_games(iggp_dir, monkeypatch, game):
    """The engine route on published games, the two with a data defect included (the corrected
    GDL is chosen on train as on the clingo route)."""
    from learners.ilp import reference

    monkeypatch.setattr(reference, "SYMBOLIC_ATOMS", 0)
    dataset = Dataset(iggp_dir)
    for target in dataset.targets(game):
        task = dataset.load_task(game, target)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = make_learner("reference").fit(task, Budget(600))
        assert isinstance(model, reference.EngineModel)
        for split, counts in evaluate(model, task, ("validate", "test")).items():
            assert pool(counts.values()).perfect, (game, target, split)


def test_a_game_the_engine_cannot_ground_in_time_is_predicted_by_the_per_state_engine(
    mini_dataset, monkeypatch
):
    """Past the engine's grounding bound the engine route evaluates with the per-state engine, one
    clingo grounding per state (what ``orch games check`` falls back to as well): still perfect."""
    import tasks.gdl.engine
    from learners.ilp import reference

    monkeypatch.setattr(reference, "SYMBOLIC_ATOMS", 0)
    monkeypatch.setattr(tasks.gdl.engine, "GROUND_SECONDS", 0.0)
    task = Dataset(mini_dataset).load_task("mini", "next")
    model = make_learner("reference").fit(task, Budget(60))
    assert isinstance(model, reference.EngineModel) and "the per-state engine" in model.describe()
    for split, per_predicate in evaluate(model, task, SPLITS).items():
        assert pool(per_predicate.values()).perfect, split
