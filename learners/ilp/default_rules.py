"""Default values of functional targets: ``goal(white, 0) :- not goal(white, 100).``

GDL's ``goal`` gives each role exactly one value in every state, and in most states that value is
the same (0: nobody has won yet). Learned directly, the default value needs the negation of every
way to win, which no short clause says ("no white piece on row 8" is an absence literal with two
constants); the few winning states are then a handful of positives among thousands. Written as a
default, it is one ground rule per key from the other values of that key, and only the
non-default atoms are left to learn, the rare and short part of the concept.

The rule is found in the examples alone, never in the game: a target ``h(K.., V)`` is functional
when every training example holds exactly one value ``V`` for every key ``K..`` of its scored atoms,
and a key's default is the value it holds in more than half of the training examples. The default
rules are normal rules over the target itself (stratified: a default atom is derived only from the
key's other values, which never depend on it), so the program predicts through the one evaluation
path like any other. ``IlaspLearner._learn`` tries them on demand (``_nodefaults`` switches them off).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from learners.ilp.coverage import Targets
from learners.ilp.program import asp_atom
from tasks import arrays
from tasks.atoms import parse_atoms
from tasks.task import Task, parse_atom


@dataclass(frozen=True)
class Defaults:
    """The default target atoms (ids into ``task.target_atoms``, sorted), the other values of each
    one's key (the atoms whose absence its rule asks for, aligned with ``atoms``) and the rules."""

    atoms: np.ndarray
    others: tuple[np.ndarray, ...]
    rules: str

    def restrict(self, targets: Targets) -> Targets:
        """``targets`` less the default atoms: what is left to learn."""
        keep = ~arrays.isin(targets.table.cols["atom"], self.atoms)
        positives = targets.positives[~arrays.isin(targets.positives % max(targets.n_atoms, 1), self.atoms)]
        return Targets(targets.table.take(np.flatnonzero(keep)), targets.n_atoms, positives, targets.rows)


def defaults_for(task: Task) -> Defaults | None:
    """The defaults of ``task``'s target, None where it is not functional or no key has a majority
    value (see the module docstring). Only the train split is read."""
    names = task.target_atoms.names
    if not len(names) or "train" not in task.splits:
        return None
    if not parse_atom(names[0])[1]:
        return None  # a 0-ary target has no value (its complement is learned instead)
    train = task.split("train")
    cand = arrays.unique(np.asarray(train.candidates, dtype=np.int64))
    if train.n_examples == 0 or len(cand) < 2:
        return None
    pos = train.positives.tocoo()
    # one value per key in every example: as many scored positives in each, checked before any
    # parse (a generated ``legal_jump`` of 352,947 atoms, not functional, spent 2.7 s parsing)
    scored = np.zeros(len(names), dtype=bool)
    scored[cand] = True
    held_per_example = np.bincount(pos.row[scored[pos.col]], minlength=train.n_examples)
    if held_per_example.min() == 0 or held_per_example.min() != held_per_example.max():
        return None
    keys: dict[tuple, int] = {}
    key_of = np.full(len(names), -1, dtype=np.int64)
    for atom, (_, args) in zip(cand.tolist(), parse_atoms([names[a] for a in cand.tolist()]), strict=True):
        key_of[atom] = keys.setdefault(tuple(args[:-1]), len(keys))
    on = key_of[pos.col] >= 0
    rows, cols = pos.row[on].astype(np.int64), pos.col[on].astype(np.int64)
    # exactly one value per (example, key): as many pairs as examples x keys, none twice (a dense
    # count over examples x keys would take gigabytes on a big board: hallway, 3 GiB)
    codes = rows * len(keys) + key_of[cols]
    if len(codes) != train.n_examples * len(keys) or len(arrays.unique(codes)) != len(codes):
        return None  # some example holds no value or several for a key
    held = np.bincount(cols, minlength=len(names))
    found: list[tuple[int, np.ndarray, str]] = []
    for k in keys.values():
        values = cand[key_of[cand] == k]
        if len(values) < 2:
            continue
        default = int(values[np.argmax(held[values])])
        if 2 * held[default] <= train.n_examples:
            continue
        # constants spelled as the evaluator reads them (``asp_atom``: quoted where they must be)
        others = values[values != default]
        absent = ", ".join(f"not {asp_atom(names[v])}" for v in others.tolist())
        found.append((default, others, f"{asp_atom(names[default])} :- {absent}."))
    if not found:
        return None
    rules = "\n".join(f[2] for f in found)  # in the keys' order, as written before
    found.sort(key=lambda f: f[0])
    return Defaults(np.asarray([f[0] for f in found], dtype=np.int64), tuple(f[1] for f in found), rules)
