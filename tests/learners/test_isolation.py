"""Isolation by construction: ``fit`` gets train and validate only, so the test split cannot shape a model.

The worker is run for real (forked children, no Ray) on a task and on the same task with its test
split replaced; every learner family must learn the very same model. A ``peek`` learner, which
reads the test split when it can, shows the test would have leaked if the worker passed the task.
"""

from __future__ import annotations

import numpy as np
import pytest
from ilp_tasks import make_task
from sweep_helpers import write_tiny_dataset

from learners.base import Budget, register
from learners.ilp.bias import bias_for
from learners.testing import NothingModel
from orchestrator.scheduling.sweep import build_jobs
from orchestrator.scheduling.worker import JobLimits, run_jobs
from tasks.iggp import Dataset
from tasks.signature import parse_typ
from tasks.task import Split, Task


class _PeekModel(NothingModel):
    def __init__(self, seen: str) -> None:
        self.seen = seen

    def describe(self) -> str:
        return self.seen


@register(r"peek", description="test learner: describes the test split if fit can read it", testing=True)
class PeekLearner:
    name = "peek"

    def fit(self, task: Task, budget: Budget, report=lambda m: None) -> _PeekModel:
        test = task.splits.get("test")
        return _PeekModel("no test split" if test is None else f"test positives {test.positives.nnz}")


def _with_other_test(task: Task) -> Task:
    """``task`` with its test positives inverted over the candidates and its rows reversed."""
    test = task.split("test")
    dense = test.positives.toarray()
    flipped = np.zeros_like(dense)
    flipped[:, test.candidates] = ~dense[:, test.candidates]
    rows = np.arange(test.n_examples)[::-1]
    import scipy.sparse as sp

    other = Split("test", test.background[rows], sp.csr_matrix(flipped[rows]), test.candidates)
    return Task(
        task.game, task.target, task.background_atoms, task.target_atoms, task.statics,
        {**task.splits, "test": other}, task.signature, task.source, dict(task.missing),
    )  # fmt: skip


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return Dataset(write_tiny_dataset(tmp_path_factory.mktemp("iso") / "ds", games=("alpha",)))


def test_the_learning_view_has_no_test_split():
    task = make_task({"train": [(["a"], ["t"])], "test": [(["b"], [])]}, ["t"])
    view = task.learning_view()
    assert set(view.splits) == {"train"} and "test" in task.splits
    with pytest.raises(KeyError, match="held out"):
        view.split("test")


LEARNERS = ["true", "inertia", "mean", "knn1", "knn5", "ilasp", "aspal2", "peek"]


@pytest.mark.parametrize(
    ("learners", "budget"),
    [
        pytest.param(LEARNERS, 10.0, id="symbolic-and-baselines"),
        pytest.param(["gnn-iggp-d8-e3"], 300.0, marks=pytest.mark.slow, id="gnn"),  # torch start-up: slow
    ],
)
def test_changing_the_test_split_changes_no_learned_model(source, learners, budget):
    jobs = build_jobs(source, source.root, ["alpha"], learners, targets=["next"], budget_s=budget)
    jobs = [j for j in jobs if j.predicate == "next_p"]
    task = source.load_task("alpha", "next").for_predicate("next_p")
    other = _with_other_test(task)
    assert task.split("test").positives.nnz != other.split("test").positives.nnz
    rows = run_jobs(jobs + jobs, [task] * len(jobs) + [other] * len(jobs), JobLimits())
    first, second = rows[: len(jobs)], rows[len(jobs) :]
    for job, a, b in zip(jobs, first, second, strict=True):
        assert a["status"] == b["status"] == "ok", (job.learner, a["error"], b["error"])
        assert (a.get("program"), a.get("description")) == (b.get("program"), b.get("description")), (
            job.learner
        )
        assert [a[f"validate_{c}"] for c in "tp fp tn fn".split()] == [
            b[f"validate_{c}"] for c in "tp fp tn fn".split()
        ], job.learner
        # the scores on the changed test split do differ: the models were scored on each
        assert a["test_tp"] + a["test_fn"] != b["test_tp"] + b["test_fn"]
    if "peek" in learners:
        assert first[learners.index("peek")]["description"] == "no test split"


TYP = "true, next :: prop -> bool.\non :: light -> prop.\na, b :: light.\n"


def test_bias_infers_predicates_and_types_from_train_and_validate_only():
    train = [(["true_on(a)"], ["next_on(a)"]), (["true_on(b)"], ["next_on(b)"])]

    def task_with(test_background: list[str]) -> Task:
        t = make_task({"train": train, "test": [(test_background, [])]}, ["next_on(a)", "next_on(b)"])
        t.signature = parse_typ(TYP)
        return t

    plain = bias_for(task_with(["true_on(a)"]).learning_view())
    # the test split holds a predicate nobody declared: it must not reach the bias under fit
    leaky = task_with(["true_on(a)", "odd(zz, 3)"])
    assert "odd" in bias_for(leaky).body_types  # the whole task would have shown it
    assert bias_for(leaky.learning_view()).body_types == plain.body_types
    assert "odd" not in plain.body_types
