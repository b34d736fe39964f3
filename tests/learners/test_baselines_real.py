"""The five baselines on a few real published tasks, against a naive pure-Python implementation.

The naive side works on sets of atom strings straight from the ``.dat`` text (B = statics +
background, E- = atoms - E+ with ``atoms:`` taken as a set), exactly as the paper and the
dataset's README define them, so it shares nothing with the sparse implementation but the parser.
``ttcc4_next`` is included because its ``atoms:`` sections list some atoms twice (scoring is
learner-independent, so True/Inertia/Mean cover it; naive KNN over its 4048 statics takes 20 s).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pytest

from learners.base import Budget, make_learner
from learners.metrics import Counts, count
from tasks.iggp import Dataset
from tasks.task import predicate_of

TASKS = [
    ("minimal_decay", "next"),
    ("minimal_decay", "goal"),
    ("buttons_and_lights", "next"),
    ("scissors_paper_stone", "legal"),
    ("gt_centipede", "terminal"),
    ("untwisty_corridor", "next"),  # un-flattened next(q1) atoms beside next_step(1)
    ("ttcc4", "next"),  # atoms listed twice; 4048 statics make naive KNN slow, so not for KNN
]
LEARNERS = ("true", "inertia", "mean", "knn1", "knn5")
NAIVE_KNN_TOO_SLOW = {("ttcc4", "next")}


def naive_holds(
    name: str, target: str, train, statics: set[str], background: set[str]
) -> Callable[[str], bool]:
    """Fig. 11 of the paper for one test background: a predicate over atom strings."""
    if name == "true" or (name == "inertia" and target != "next"):
        return lambda atom: True
    if name == "inertia":
        return lambda atom: "true_" + atom[len("next_") :] in background
    if name == "mean":
        times_positive = Counter(atom for _, pos in train for atom in pos)
        return lambda atom: 2 * times_positive[atom] >= len(train)
    k = int(name[3:])
    # sorted() is stable, so equally distant triples keep training-file order.
    nearest = sorted(train, key=lambda ex: len((statics | ex[0]) ^ background))[:k]
    return lambda atom: 2 * sum(atom in pos for _, pos in nearest) >= k


def naive_counts(name: str, dataset: Dataset, game: str, target: str) -> dict[str, Counts]:
    train_dat = dataset.read(game, target, "train")
    test_dat = dataset.read(game, target, "test")
    statics = set(train_dat.statics)
    train = [(set(b), set(p)) for b, p in train_dat.examples]
    atoms = sorted(set(test_dat.atoms))
    kind = {(True, True): "tp", (True, False): "fp", (False, False): "tn", (False, True): "fn"}
    cells: dict[str, Counter] = {}
    for b, pos in test_dat.examples:
        holds, positive = naive_holds(name, target, train, statics, statics | set(b)), set(pos)
        for atom in atoms:
            cells.setdefault(predicate_of(atom), Counter())[kind[holds(atom), atom in positive]] += 1
    return {p: Counts(c["tp"], c["fp"], c["tn"], c["fn"]) for p, c in cells.items()}


@pytest.mark.parametrize(("game", "target"), TASKS)
def test_baselines_match_the_naive_implementation(iggp_dir, game, target):
    dataset = Dataset(iggp_dir)
    task = dataset.load_task(game, target)
    test = task.split("test")
    for name in LEARNERS:
        if name.startswith("knn") and (game, target) in NAIVE_KNN_TOO_SLOW:
            continue
        model = make_learner(name).fit(task, Budget(60))
        got = {p: c for p, c in count(task, test, model.predict(task, test)).items() if c != Counts()}
        assert got == naive_counts(name, dataset, game, target), (game, target, name)


def test_per_predicate_fits_match_the_whole_target(iggp_dir):
    task = Dataset(iggp_dir).load_task("gt_centipede", "next")
    assert len(task.predicates) > 1
    test = task.split("test")
    for name in LEARNERS:
        whole = count(task, test, make_learner(name).fit(task, Budget(60)).predict(task, test))
        for p in task.predicates:
            sub = task.for_predicate(p)
            model = make_learner(name).fit(sub, Budget(60))
            assert count(sub, sub.split("test"), model.predict(sub, sub.split("test"))) == {p: whole[p]}


def test_the_task_without_training_data_is_reported(iggp_dir):
    task = Dataset(iggp_dir).load_task("ttcc4", "legal")
    assert "train" in task.missing
    with pytest.raises(KeyError, match="no train split"):
        make_learner("knn5").fit(task, Budget(60))
