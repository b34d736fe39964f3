"""The in-memory learning task every learner iterates over.

A *task* is one (game, target) pair of the IGGP benchmark (or a GraphLog world expressed the same
way): a set of examples (B, E+, E-), each a background B and the target atoms that hold in it.
E- is closed-world: every *candidate* target atom that is not a positive.

Atoms are flattened ground atoms in the dataset's text convention, e.g. ``true_cell(1, 2, x)``,
``legal(black, noop)`` or ``terminal()``. They are interned once per task into two vocabularies:

* ``background_atoms``: every atom that occurs in some background (and the statics), and
* ``target_atoms``: the candidate target atoms (the ``atoms:`` section of the dataset).

Each split stores its examples as two boolean CSR matrices over those vocabularies, which is what
makes KNN a sparse product and rule coverage a vectorised join instead of loops over string sets.
Statics (atoms true in every state) are kept once per task and are *not* repeated in the rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from tasks import arrays

# the atom helpers live below this module (tasks.atoms); re-exported, as learners import them here
from tasks.atoms import format_atom as format_atom
from tasks.atoms import parse_atom as parse_atom
from tasks.atoms import predicate_of

if TYPE_CHECKING:
    from tasks.signature import Signature

TARGETS = ("goal", "legal", "next", "terminal")
SPLITS = ("train", "validate", "test")
LEARNING_SPLITS = ("train", "validate")
"""The splits a learner's ``fit`` may read (:meth:`Task.learning_view`); test is for scoring only."""
HELD_OUT = "held out: a learner's fit() sees train and validate only"


@dataclass
class Vocabulary:
    """Interned atom strings: id <-> text. Ids are dense and stable in insertion order."""

    names: list[str] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, names: Iterable[str]) -> Vocabulary:
        v = cls()
        for n in names:
            v.add(n)
        return v

    def add(self, name: str) -> int:
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.names)
            self.names.append(name)
        return i

    def ids(self, names: Iterable[str]) -> np.ndarray:
        """Ids of names that must already be present (KeyError names the atom otherwise)."""
        return np.fromiter((self.index[n] for n in names), dtype=np.int64)

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return name in self.index

    def __getitem__(self, i: int) -> str:
        return self.names[i]


def bool_csr(rows: Sequence[Sequence[int]] | Sequence[np.ndarray], n_cols: int) -> sp.csr_matrix:
    """Build a boolean CSR matrix from per-row column-id lists (duplicates collapse)."""
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    cols: list[np.ndarray] = []
    for i, r in enumerate(rows):
        c = arrays.unique(np.asarray(r, dtype=np.int64))
        cols.append(c)
        indptr[i + 1] = indptr[i] + len(c)
    indices = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    data = np.ones(len(indices), dtype=bool)
    m = sp.csr_matrix((data, indices, indptr), shape=(len(rows), n_cols))
    m.has_sorted_indices = True
    return m


@dataclass
class Split:
    """The examples of one split: row i is example i (background B_i, positives E+_i).

    ``background`` is (n_examples x |background_atoms|) and ``positives`` is
    (n_examples x |target_atoms|), both boolean CSR. ``candidates`` are the target-atom ids listed
    under ``atoms:`` for this split, i.e. the atoms that are scored (E- = candidates - E+).
    Row order is file order, which is what "ties broken by training-file order" refers to.
    """

    name: str
    background: sp.csr_matrix
    positives: sp.csr_matrix
    candidates: np.ndarray

    @property
    def n_examples(self) -> int:
        return self.background.shape[0]

    def background_of(self, i: int) -> np.ndarray:
        b = self.background
        return b.indices[b.indptr[i] : b.indptr[i + 1]]

    def positives_of(self, i: int) -> np.ndarray:
        p = self.positives
        return p.indices[p.indptr[i] : p.indptr[i + 1]]


@dataclass
class Task:
    """One learning task: a (game, target) with its vocabularies, statics and splits.

    ``predicates`` are the flattened sub-predicates of the target (``next_cell``, ``next_control``)
    in a stable order; ``predicate_columns(p)`` gives their target-atom ids. A split may be absent
    (the published ``ttcc4_legal_train.dat`` is missing); ``missing`` records why, by split name.
    ``signature`` is the game's type signature (``tasks.signature.Signature``) where one is known.
    ``source`` says where the task came from (a dataset path, ``bundled``, ``graphlog:...``).
    """

    game: str
    target: str
    background_atoms: Vocabulary
    target_atoms: Vocabulary
    statics: np.ndarray
    splits: dict[str, Split]
    signature: Signature | None = None
    source: str = ""
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.game}_{self.target}"

    @property
    def predicates(self) -> list[str]:
        return list(self._predicate_index[0])

    def predicate_ids(self) -> np.ndarray:
        """For every target atom, the index of its predicate in ``self.predicates`` (read-only)."""
        return self._predicate_index[1]

    @cached_property
    def _predicate_index(self) -> tuple[tuple[str, ...], np.ndarray]:
        """The predicates in first-seen order and each target atom's predicate index, computed once:
        scoring asks for them per job and split, and a generated task has 10^5 target atoms."""
        preds: dict[str, int] = {}
        ids = np.fromiter(
            (preds.setdefault(predicate_of(a), len(preds)) for a in self.target_atoms.names), dtype=np.int64
        )
        ids.setflags(write=False)
        return tuple(preds), ids

    def predicate_columns(self, predicate: str) -> np.ndarray:
        return np.flatnonzero(self.predicate_ids() == self.predicates.index(predicate))

    def split(self, name: str) -> Split:
        """The named split; a clear KeyError says why when it is missing."""
        if name not in self.splits:
            why = self.missing.get(name, "not loaded")
            raise KeyError(f"task {self.name} has no {name} split: {why}")
        return self.splits[name]

    def for_predicate(self, predicate: str) -> Task:
        """The same task restricted to one flattened target predicate (one orchestrator job).

        The background vocabulary is shared (not copied); target columns are re-indexed.
        """
        if predicate not in self.predicates:
            raise KeyError(f"task {self.name} has no predicate {predicate!r}; it has {self.predicates}")
        cols = self.predicate_columns(predicate)
        remap = np.full(len(self.target_atoms), -1, dtype=np.int64)
        remap[cols] = np.arange(len(cols))
        target = Vocabulary.of(self.target_atoms.names[c] for c in cols)
        splits = {}
        for name, s in self.splits.items():
            cand = remap[s.candidates]
            splits[name] = Split(name, s.background, s.positives[:, cols].tocsr(), cand[cand >= 0])
        return Task(
            self.game,
            self.target,
            self.background_atoms,
            target,
            self.statics,
            splits,
            self.signature,
            self.source,
            dict(self.missing),
        )

    def resample_train(self, repeat: int, fraction: float = 0.8) -> Task:
        """A repeat of this task whose train split is a seeded random subset (rows kept in file order).

        Repeat 0 is the task itself; repeat r > 0 keeps ``fraction`` of the training examples,
        drawn with seed r. This gives deterministic learners (KNN, Mean) the run-to-run variance
        that information-gain task selection needs; validate and test are never touched.
        """
        if repeat == 0 or "train" not in self.splits:
            return self
        return self.sampled("train", round(fraction * self.splits["train"].n_examples), repeat)

    def sampled(self, split: str, n: int, seed: int) -> Task:
        """This task with ``n`` (at least one) of ``split``'s examples, drawn with ``seed`` and kept
        in file order; the other splits and the vocabularies are shared."""
        whole = self.splits[split]
        rng = np.random.default_rng(seed)
        keep = np.sort(rng.choice(whole.n_examples, size=min(max(1, n), whole.n_examples), replace=False))
        splits = dict(self.splits)
        splits[split] = Split(split, whole.background[keep], whole.positives[keep], whole.candidates)
        return self._with_splits(splits, dict(self.missing))

    def learning_view(self) -> Task:
        """This task as ``Learner.fit`` receives it: the train and validate splits only.

        Why: keeping test away from learners by convention is not enough for figures others must
        trust; with the test split absent from the object, no learner (nor its bias or type
        inference) can read it. ``split("test")`` on the view raises a KeyError saying so. The
        vocabularies and statics are shared, not copied (they are the candidate atoms and the
        atom names, not examples); use :meth:`seen_background_ids` for the atoms the view's
        examples actually contain.
        """
        splits = {n: s for n, s in self.splits.items() if n in LEARNING_SPLITS}
        missing = {n: why for n, why in self.missing.items() if n in LEARNING_SPLITS}
        missing.update({n: HELD_OUT for n in SPLITS if n not in LEARNING_SPLITS})
        return self._with_splits(splits, missing)

    def pooled_train(self) -> Task | None:
        """This task with the validate examples appended to train and no validate split (None if
        it has no validate split, or if the two splits score different candidate atoms).

        Why: validate is for choosing between models; once a learner has chosen (e.g. ``ilasp``
        found that its train-perfect program is not exact on validate), learning once more from
        every example it may see is the standard last step, and few-example targets need it most.
        Candidates must match, since a split's negatives are its candidates minus its positives.
        """
        if "train" not in self.splits or "validate" not in self.splits:
            return None
        train, validate = self.splits["train"], self.splits["validate"]
        if not np.array_equal(np.sort(train.candidates), np.sort(validate.candidates)):
            return None
        pooled = Split(
            "train",
            sp.vstack([train.background, validate.background]).tocsr(),
            sp.vstack([train.positives, validate.positives]).tocsr(),
            train.candidates,
        )
        missing = {**self.missing, "validate": "pooled into train (Task.pooled_train)"}
        splits = {n: s for n, s in self.splits.items() if n not in ("train", "validate")}
        return self._with_splits({"train": pooled, **splits}, missing)

    def _with_splits(self, splits: dict[str, Split], missing: dict[str, str]) -> Task:
        """This task with other splits (and reasons for the absent ones); all else shared."""
        return Task(
            self.game,
            self.target,
            self.background_atoms,
            self.target_atoms,
            self.statics,
            splits,
            self.signature,
            self.source,
            missing,
        )

    def seen_background_ids(self) -> np.ndarray:
        """Sorted ids of the background atoms that occur in this task's splits or its statics.

        On a :meth:`learning_view` these are the atoms of train and validate only, which is what a
        bias may infer types and predicates from (the vocabulary itself spans every split).
        """
        parts = [np.asarray(self.statics, dtype=np.int64)]
        parts += [s.background.indices.astype(np.int64) for s in self.splits.values()]
        return arrays.union(parts)

    def static_atoms(self) -> list[str]:
        return [self.background_atoms.names[i] for i in self.statics]

    def describe(self) -> str:
        parts = [f"{s}={self.splits[s].n_examples}" for s in SPLITS if s in self.splits]
        return (
            f"{self.name}: {len(self.predicates)} predicates, {len(self.target_atoms)} target atoms, "
            f"{len(self.background_atoms)} background atoms, {len(self.statics)} statics; " + ", ".join(parts)
        )
