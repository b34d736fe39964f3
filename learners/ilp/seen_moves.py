"""The moves seen legal in training, as a static base for ``legal`` targets of games that declare none.

IGGP's games come with an ``input`` relation: every move there is (``input_move(R, X1, Y1, X2, Y2)``),
and the frame step (:mod:`learners.ilp.frame`) learns ``legal_move`` as "a move there is, from my
piece, to an empty square, on my turn" with that relation as its base. Rulesheets written for GGP
competitions before ``input`` was part of GDL declare no moves (none of the 158 in the shared
corpus does), so a generated ``legal_play`` task has no body predicate with the head's types, the
frame step has nothing to start from, and the seed search must bind every head argument with some
literal: on a 5x5 tictactoe, ``legal_play(xPlayer, I, J, x)`` needs both ``index(I), index(J)`` and
the two head constants before ``not true_mark(I, J, _)`` and ``true_control(xPlayer)`` pay off, and
at 10 s the search ended on coincidences of the training states (0.65 on test).

Here the task gets what ``input`` would have said, from the training examples alone: a static
predicate ``seen_<head>`` with the head's types, true of every head atom that is a positive in some
training example (``seen_legal_play(xPlayer, 3, 2, x)``). It also says which roles make which
moves (x's marks are xPlayer's), which no other background relation does. The frame step takes it
as its base like ``input_*`` (`frame.bases`), the seed search sees it like any static, and a
learned program that uses it carries its facts (a :class:`~learners.ilp.concepts.Concept`, through
`Mode.program`), so it predicts through the one evaluation path. A move legal in a test state but
never legal in a training one is then not predicted: with thousands of training states that is rare,
and a learner told the move universe (IGGP's ``input``) is given the same list.

Only where the game declares no moves (no ``input`` relation in its signature), so a task with its
own ``input`` relation (every IGGP game) is learned exactly as before, and only for ``legal``: ``next`` has its own
fluent as a base, and ``goal``/``terminal`` are not about moves.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from learners.ilp.concepts import Concept
from learners.ilp.program import asp_constant
from tasks.atoms import format_atom, parse_atom
from tasks.signature import Declaration, Signature
from tasks.task import Split, Task, Vocabulary

TARGET = "legal"
PREFIX = "seen_"
MAX_MOVES = 20_000
"""More distinct moves than this and no base is made (its facts would be most of the program)."""


def declares_moves(signature: Signature) -> bool:
    """Whether the game's signature has an ``input`` relation (every IGGP game's does)."""
    return any(d.name == "input" for d in signature.relations())


def extend(task: Task) -> tuple[Task, Concept | None]:
    """``task`` (one ``legal`` predicate, :meth:`Task.for_predicate`) with the static
    ``seen_<head>`` atoms of its training positives, and the concept a program using them carries;
    ``task`` itself and None where the game declares its moves, or no base is made."""
    sig = task.signature
    if task.target != TARGET or sig is None or "train" not in task.splits or len(task.predicates) != 1:
        return task, None
    head = task.predicates[0]
    types = sig.all_flat_predicates().get(head)
    if not types or declares_moves(sig):
        return task, None
    train = task.splits["train"]
    seen = np.flatnonzero(np.bincount(train.positives.indices, minlength=len(task.target_atoms)))
    if len(seen) == 0 or len(seen) > MAX_MOVES:
        return task, None
    name = PREFIX + head
    vocab = Vocabulary.of(task.background_atoms.names)
    args = [parse_atom(task.target_atoms.names[j])[1] for j in seen]
    new = np.asarray([vocab.add(format_atom(name, a)) for a in args], dtype=np.int64)
    facts = "".join(f"{name}({','.join(str(asp_constant(c)) for c in a)}).\n" for a in sorted(args))
    n = len(vocab)
    splits = {
        s_name: Split(s_name, _widened(s.background, n), s.positives, s.candidates)
        for s_name, s in task.splits.items()
    }
    signature = Signature(
        sig.declarations + [Declaration(name, tuple(types), "bool", 0)], sig.subtypes, sig.source, sig.nullary
    )
    statics = np.union1d(np.asarray(task.statics, dtype=np.int64), new)
    out = replace(task, background_atoms=vocab, statics=statics, splits=splits, signature=signature)
    return out, Concept(name, tuple(types), facts)


def _widened(matrix: sp.csr_matrix, n_cols: int) -> sp.csr_matrix:
    """``matrix`` with columns up to ``n_cols`` (the new atoms are statics: no example row holds them)."""
    return sp.csr_matrix((matrix.data, matrix.indices, matrix.indptr), shape=(matrix.shape[0], n_cols))
