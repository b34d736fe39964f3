"""The five baselines on a few real published tasks, against a naive pure-Python implementation.

The naive side works on sets of atom strings straight from the ``.dat`` text (B = statics +
background, E- = atoms - E+ with ``atoms:`` taken as a set), exactly as the paper and the
dataset's README define them, so it shares nothing with the sparse implementation but the parser.
``ttcc4_next`` is included because its ``atoms:`` sections list some atoms twice.
"""

from __future__ import annotations

from collections import Counter

import pytest

from learners.base import Budget, make_learner
from learners.metrics import Counts, count
from tasks.iggp import Dataset, read_dat
from tasks.task import predicate_of

TASKS = [
    ("minimal_decay", "next"),
    ("minimal_decay", "goal"),
    ("buttons_and_lights", "next"),
    ("scissors_paper_stone", "legal"),
    ("gt_centipede", "terminal"),
    ("ttcc4", "next"),
]
LEARNERS = ("true", "inertia", "mean", "knn1", "knn5")


def naive_predict(name: str, target: str, train, statics: set[str], background: set[str], atom: str) -> bool:
    """Fig. 11 of the paper, one atom at a time."""
    if name == "true":
        return True
    if name == "inertia":
        if target != "next":
            return True
        return "true_" + atom[len("next_") :] in background
    if name == "mean":
        return 2 * sum(atom in pos for _, pos in train) >= len(train)
    k = int(name[3:])
    # sorted() is stable, so equal distances keep training-file order.
    ranked = sorted(train, key=lambda ex: len((statics | ex[0]) ^ background))
    return 2 * sum(atom in pos for _, pos in ranked[:k]) >= k


def naive_counts(name: str, dataset: Dataset, game: str, target: str) -> dict[str, Counts]:
    train_dat = dataset.read(game, target, "train")
    test_dat = dataset.read(game, target, "test")
    statics = set(train_dat.statics)
    train = [(set(b), set(p)) for b, p in train_dat.examples]
    atoms = sorted(set(test_dat.atoms))
    cells: dict[str, Counter] = {}
    for b, pos in test_dat.examples:
        background = statics | set(b)
        for atom in atoms:
            predicted = naive_predict(name, target, train, statics, background, atom)
            actual = atom in pos
            kind = {(True, True): "tp", (True, False): "fp", (False, False): "tn", (False, True): "fn"}
            cells.setdefault(predicate_of(atom), Counter())[kind[predicted, actual]] += 1
    return {p: Counts(c["tp"], c["fp"], c["tn"], c["fn"]) for p, c in cells.items()}


@pytest.mark.parametrize(("game", "target"), TASKS)
def test_baselines_match_the_naive_implementation(iggp_dir, game, target):
    dataset = Dataset(iggp_dir)
    task = dataset.load_task(game, target)
    test = task.split("test")
    for name in LEARNERS:
        model = make_learner(name).fit(task, Budget(60))
        got = {p: c for p, c in count(task, test, model.predict(task, test)).items() if c != Counts()}
        assert got == naive_counts(name, dataset, game, target), (game, target, name)


def test_per_predicate_fits_match_the_whole_target(iggp_dir):
    task = Dataset(iggp_dir).load_task("buttons_and_lights", "next")
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


def test_read_dat_is_the_only_shared_piece(iggp_dir):
    """Sanity check of the naive side: the parser gives set-like sections for a task used above."""
    dat = read_dat(iggp_dir / "data" / "test" / "minimal_decay_next_test.dat")
    assert dat.atoms and dat.examples
