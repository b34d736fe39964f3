"""Small hand-made IGGP-style tasks for the ILP tests (never excerpts of the shared dataset)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tasks.task import Split, Task, Vocabulary, bool_csr


def make_task(
    examples: dict[str, Sequence[tuple[Sequence[str], Sequence[str]]]],
    target_atoms: Sequence[str],
    statics: Sequence[str] = (),
    game: str = "toy",
    target: str = "next",
) -> Task:
    """A Task from literal (background, positives) pairs per split; every target atom is a candidate."""
    background = Vocabulary.of(statics)
    for rows in examples.values():
        for bg, _ in rows:
            for a in bg:
                background.add(a)
    targets = Vocabulary.of(target_atoms)
    splits = {}
    for name, rows in examples.items():
        b = bool_csr([background.ids(bg) for bg, _ in rows], len(background))
        p = bool_csr([targets.ids(pos) for _, pos in rows], len(targets))
        splits[name] = Split(name, b, p, np.arange(len(targets)))
    return Task(game, target, background, targets, background.ids(statics), splits)


def coverage_and_clingo(clause, task: Task, split_name: str = "test") -> tuple[list[int], list[int]]:
    """The atom keys (example x atom) a clause derives on a split: by the vectorised coverage, and
    by clingo running the clause's text. The two must agree."""
    from learners.ilp.coverage import evaluate_clause, facts_for, targets_for
    from learners.ilp.evaluate import RuleModel

    split = task.split(split_name)
    facts = facts_for(task, split)
    targets = targets_for(task, split, facts.constants)
    keys = np.sort(evaluate_clause(clause, facts, targets, 10**6))
    pred = RuleModel(clause.text()).predict(task, split).tocoo()
    expected = np.sort(pred.row.astype(np.int64) * targets.n_atoms + pred.col)
    return keys.tolist(), expected.tolist()


def frame_texts(task: Task, settings=None, max_rows: int = 10**6) -> list[str]:
    """The frame step's candidate rules on the task's training split, as text."""
    from learners.ilp.bias import bias_for
    from learners.ilp.coverage import facts_for, targets_for
    from learners.ilp.frame import frame_clauses

    train = task.split("train")
    facts = facts_for(task, train)
    targets = targets_for(task, train, facts.constants)
    bias = bias_for(task) if settings is None else bias_for(task, settings)
    return [c.text() for c in frame_clauses(bias, facts, targets, max_rows)]


def typed_task(game: str, target: str, predicate: str, typ: str, dats: dict) -> Task:
    """A Task from generated ``.dat`` contents per split (``tasks.iggp.DatFile``) and a ``.typ``
    text, narrowed to one target predicate: the synthetic tasks the learner's switches are tested on."""
    from tasks.iggp import task_from_dats
    from tasks.signature import parse_typ

    return task_from_dats(game, target, dats, signature=parse_typ(typ, f"{game}.typ")).for_predicate(
        predicate
    )


def test_ba(model, task: Task) -> float:
    """The model's balanced accuracy on the test split, sub-predicates pooled (strict scoring)."""
    from learners.metrics import evaluate, pool

    return pool(evaluate(model, task, ["test"])["test"].values()).balanced_accuracy


test_ba.__test__ = False  # a helper, not a test
