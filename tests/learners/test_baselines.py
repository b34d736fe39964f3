"""True, Inertia and Mean on hand-made tasks whose answers are known, plus the registry entries."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from ilp_tasks import make_task

from learners.base import Budget, UnknownLearner, make_learner, registered
from learners.baselines import InertiaModel, MeanModel, TrueModel, inertia_sources
from learners.metrics import Counts, count, pool


def dense(pred) -> np.ndarray:
    return pred.toarray() if sp.issparse(pred) else np.asarray(pred)


def fit(name: str, task):
    return make_learner(name).fit(task, Budget(5))


NEXT_ATOMS = ["next_cell(1, x)", "next_cell(2, x)", "next_step(2)", "next_flag()"]


def next_task():
    """A next task with a static ``true_flag()`` and ``next_step(2)`` that has no true_ counterpart."""
    train = [
        (["true_cell(1, x)", "true_step(1)"], ["next_cell(1, x)", "next_step(2)"]),
        (["true_cell(2, x)"], ["next_cell(2, x)", "next_cell(1, x)"]),
        (["true_cell(1, x)", "true_cell(2, x)"], ["next_cell(1, x)"]),
        ([], ["next_flag()"]),
    ]
    test = [
        (["true_cell(1, x)"], ["next_cell(1, x)", "next_flag()"]),
        (["true_cell(2, x)", "true_step(1)"], ["next_step(2)"]),
    ]
    return make_task({"train": train, "test": test}, NEXT_ATOMS, statics=["true_flag()"], target="next")


def test_true_predicts_every_atom_and_counts_follow():
    task = next_task()
    test = task.split("test")
    pred = dense(fit("true", task).predict(task, test))
    assert pred.shape == (2, 4) and pred.all()
    # 3 positives among 8 cells: all of them tp, the other 5 cells fp.
    assert pool(count(task, test, pred).values()) == Counts(tp=3, fp=5, tn=0, fn=0)


def test_inertia_copies_true_atoms_for_next_and_statics_count_as_background():
    task = next_task()
    sources = inertia_sources(task)
    names = task.background_atoms.names
    assert [names[s] if s >= 0 else None for s in sources] == [
        "true_cell(1, x)",
        "true_cell(2, x)",
        None,
        "true_flag()",
    ]
    pred = dense(fit("inertia", task).predict(task, task.split("test")))
    # row 0: true_cell(1, x) and the static true_flag(); row 1: true_cell(2, x) and the static.
    assert pred.tolist() == [[True, False, False, True], [False, True, False, True]]
    assert "3 of 4 target atoms" in fit("inertia", task).describe()


@pytest.mark.parametrize("target", ["goal", "legal", "terminal"])
def test_inertia_is_true_for_other_targets(target):
    task = make_task(
        {"train": [(["true_cell(1, x)"], ["legal(p, noop)"])], "test": [([], [])]},
        ["legal(p, noop)", "legal(p, mark)"],
        target=target,
    )
    model = fit("inertia", task)
    assert isinstance(model, InertiaModel)
    assert dense(model.predict(task, task.split("test"))).all()
    assert "same as true" in model.describe()


def test_mean_needs_at_least_half_of_the_training_triples():
    task = next_task()  # 4 training triples: next_cell(1, x) in 3, the others in 1
    model = fit("mean", task)
    assert isinstance(model, MeanModel)
    assert model.holds.tolist() == [True, False, False, False]
    # Exactly half (2 of 4) holds as well: add a second next_cell(2, x).
    train = [
        (["a()"], ["next_cell(2, x)"]),
        (["b()"], ["next_cell(2, x)"]),
        (["c()"], []),
        (["d()"], ["next_step(2)"]),
    ]
    half = make_task({"train": train, "test": [([], [])]}, NEXT_ATOMS)
    assert fit("mean", half).holds.tolist() == [False, True, False, False]
    # Odd n: 2 of 3 is above half, 1 of 3 below.
    above = make_task({"train": train[:3], "test": [([], [])]}, NEXT_ATOMS)
    assert fit("mean", above).holds.tolist() == [False, True, False, False]
    below = make_task({"train": train[1:], "test": [([], [])]}, NEXT_ATOMS)
    assert fit("mean", below).holds.tolist() == [False, False, False, False]
    assert "1 of 4 atoms" in model.describe() and "next_cell(1, x)" in model.describe()


def test_mean_with_no_positives_predicts_nothing():
    task = make_task(
        {"train": [(["a()"], []), (["b()"], [])], "test": [(["a()"], ["p(1)"])]}, ["p(1)", "p(2)"]
    )
    pred = dense(fit("mean", task).predict(task, task.split("test")))
    assert not pred.any()
    assert pool(count(task, task.split("test"), pred).values()) == Counts(tp=0, fp=0, tn=1, fn=1)


def test_models_report_themselves_and_have_no_rules():
    task = next_task()
    for name in ("true", "inertia", "mean", "knn1", "knn5"):
        seen = []
        model = make_learner(name).fit(task, Budget(5), report=seen.append)
        assert seen == [model], name  # the anytime contract: the final model was reported
        assert model.rules() is None and model.describe()
    assert isinstance(fit("true", task), TrueModel)


def test_learners_without_a_train_split_say_why():
    task = next_task()
    del task.splits["train"]
    task.missing["train"] = "toy_next_train.dat: file not found"
    for name in ("mean", "knn1"):
        with pytest.raises(KeyError, match="file not found"):
            fit(name, task)


def test_registry_has_the_baselines_with_descriptions():
    specs = {s.example: s for s in registered()}
    for name in ("true", "inertia", "mean", "knn5"):
        assert name in specs and specs[name].description and specs[name].resources
    assert make_learner("knn13").k == 13 and make_learner("knn13").name == "knn13"
    with pytest.raises(UnknownLearner, match="known learners: .*knn5"):
        make_learner("knn")


def test_whole_target_and_per_predicate_fits_give_the_same_counts():
    """The orchestrator fits ``task.for_predicate(p)``; the baselines must not depend on that."""
    task = next_task()
    test = task.split("test")
    for name in ("true", "inertia", "mean", "knn1", "knn5"):
        whole = count(task, test, fit(name, task).predict(task, test))
        for p in task.predicates:
            sub = task.for_predicate(p)
            part = count(sub, sub.split("test"), fit(name, sub).predict(sub, sub.split("test")))
            assert part == {p: whole[p]}, (name, p)
