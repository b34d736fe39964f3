"""How much of a task one ``ilasp`` fit holds: a seeded sample of whole examples past a bound.

Why: the learner's tables grow with a split's atoms (its positives and its examples' background
atoms), not with what it needs to see to find the rules. On a generated sudoku, ``legal_play`` has
19 million training positives (53,693 examples, 729 cells each): setting up the tables took 28 s
and 3 GiB before the search began, and the job ended with no program at 10 s. Rules are learned
from a few thousand examples as well, so a split past :attr:`Settings.data_atoms
<learners.ilp.bias.Settings.data_atoms>` atoms is replaced by a sample of its examples (drawn
with the job's seed, so a rerun holds the same examples), sized to fit. The program's description
says so. The published IGGP tasks are all far below the bound (at most 0.12 million atoms in a
train split: breakthrough ``legal_move``), so it changes nothing there. Scoring always uses the
whole splits.
"""

from __future__ import annotations

from tasks.task import Task

BOUNDED_SPLITS = ("train", "validate")


def atoms_of(task: Task, split: str) -> int:
    """A split's size as the learner's tables see it: positives plus background atoms."""
    s = task.split(split)
    return int(s.positives.nnz + s.background.nnz)


def within(task: Task, limit: int | None, seed: int) -> tuple[Task, str]:
    """``task`` with each of train and validate cut to a seeded sample of whole examples of at most
    about ``limit`` atoms (None: no bound), and a note naming what was cut ("" when nothing was)."""
    notes = []
    for split in BOUNDED_SPLITS:
        if limit is None or split not in task.splits:
            continue
        size, n = atoms_of(task, split), task.split(split).n_examples
        if size <= limit:
            continue
        keep = max(1, n * limit // size)
        task = task.sampled(split, keep, seed)
        notes.append(f"{keep:,} of {n:,} {split} examples")
    return task, ("learned from " + " and ".join(notes) + " (data bound)") if notes else ""
