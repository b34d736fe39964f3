"""Seed search: the relevant hypothesis space of one seed (a training positive), searched on a sample.

ILASP* builds the space for its newest relevant example. Here the seed's bottom clause (its
example's dynamic atoms and the statics) is searched top-down (:class:`learners.ilp.search.Search`)
on a sample of the training examples that always holds the seed's own example. What the stage
learns from one seed shapes the next: a seed whose space held nothing consistent doubles the beam
(the space was too narrow), and one whose search ran out of its share doubles the share the next
search may take (the rules left need longer searches). Both are decided by the search's own
result, never by the clock: with a work meter they come out the same on any machine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from learners.ilp.coverage import Facts, example_atoms, facts_for
from learners.ilp.meter import Meter
from learners.ilp.search import Bottom, Search, SearchResult
from tasks.task import parse_atom

if TYPE_CHECKING:
    from learners.ilp.learning import Learning

SEARCH_SHARE = 0.34
"""At most this share of the loop's remaining allowance goes to one seed's search (the loop needs several)."""
MAX_BEAM = 96
"""The beam doubles (up to this) each time a seed's search ends without a consistent rule."""
SEED_CAP = 1 / 4
"""With the combine step, one seed's search gets at most this share of the whole allowance (5 s
of 60) at first; the cap doubles each time a search runs out without a consistent rule."""


class SeedSearch:
    """The searches of one learning, seed after seed, with the sample and limits they share."""

    def __init__(self, learning: Learning, rng: np.random.Generator) -> None:
        """Draws the search sample from ``rng`` (the job's seed), before any seed is drawn."""
        self.learning = learning
        task, settings = learning.task, learning.settings
        self.statics = [parse_atom(a) for a in task.static_atoms()]
        n = learning.facts.n
        self.sample_rows = np.sort(rng.choice(n, size=min(settings.sample, n), replace=False))
        self.sample_rows = np.union1d(self.sample_rows, rare_negatives(learning, settings.sample))
        self.sample: Facts | None = None
        self.beam_width = settings.beam
        self.seed_cap = learning.meter.left() * SEED_CAP
        self.widen = settings.widen and not parse_atom(task.target_atoms.names[0])[1]

    def search(self, seed: int, loop: Meter, missing: np.ndarray) -> SearchResult:
        """The consistent and partial clauses of seed ``seed``'s space, the search ranking
        clauses by the training positives in ``missing`` they cover (what the hypothesis lacks)."""
        lr = self.learning
        n_atoms = lr.targets.n_atoms
        ex, atom = divmod(seed, n_atoms)
        if self.sample is None or ex not in set(self.sample_rows.tolist()):
            self.sample_rows = np.union1d(self.sample_rows, [ex])
            with lr.profile.timing("facts"):
                self.sample = facts_for(lr.task, lr.train, self.sample_rows)
        sample_targets = lr.mode.targets(lr.task, lr.train, self.sample.constants, self.sample_rows)
        bottom = Bottom.of(example_atoms(lr.task, lr.train, ex), self.statics)
        with lr.profile.timing("search"):
            share = max(loop.left(), 0.0) * SEARCH_SHARE
            if lr.settings.combine:
                share = min(share, self.seed_cap)  # many small searches: many-rule targets need many seeds
            wanted = to_sample(missing, self.sample_rows, n_atoms)
            search = Search(
                lr.bias, self.sample, sample_targets, bottom, loop.part(share), wanted, self.widen
            )
            seed_args = parse_atom(lr.task.target_atoms.names[atom])[1]
            found = search.run(lr.bias.head_pred, seed_args, self.beam_width)
            if not found.consistent and not found.timed_out:
                deeper = search.exhaustive(lr.bias.head_pred, seed_args)
                found = SearchResult(deeper.consistent, found.partial, search.tested, deeper.timed_out)
            if not found.consistent and not found.timed_out:
                self.beam_width = min(self.beam_width * 2, MAX_BEAM)  # the space was too narrow: widen it
            if not found.consistent and found.timed_out:
                self.seed_cap *= 2  # the rules left need longer searches
        lr.profile.tested += found.tested
        return found


def to_sample(keys: np.ndarray, rows: np.ndarray, n_atoms: int) -> np.ndarray:
    """Full-split keys of examples in the sample, renumbered to the sample's example indices."""
    ex, atom = np.divmod(keys, n_atoms)
    at = np.searchsorted(rows, ex)
    inside = (at < len(rows)) & (rows[np.minimum(at, len(rows) - 1)] == ex)
    return np.sort(at[inside] * n_atoms + atom[inside])


RARE_NEGATIVES = 20
"""Examples per target atom that `rare_negatives` adds to the search sample, at most."""


def rare_negatives(learning: Learning, sample: int) -> np.ndarray:
    """Examples where a target atom is false, for each atom false in so few examples that a random
    sample of ``sample`` would hold fewer than three of them (at most ``RARE_NEGATIVES`` per atom,
    spread over them; no random draw).

    Why: a ground head's search tests ``goal(robot, 0).`` on the sample; with lightboard's one
    winning state of 496 outside it, that bare fact is consistent there, so the search stops before
    the literals that exclude the winning state (``not true_on(3, 4)``) and verification refutes
    what it found. The examples that make the atom false are the ones the search must see.
    """
    targets = learning.targets
    n, n_atoms = learning.facts.n, max(targets.n_atoms, 1)
    if n <= sample:
        return np.zeros(0, dtype=np.int64)  # the sample is every example
    ex, atom = np.divmod(targets.positives, n_atoms)
    counts = np.bincount(atom, minlength=n_atoms)
    false_in = n - counts
    rare = np.flatnonzero((counts > 0) & (false_in > 0) & (false_in * sample < 3 * n))
    out = []
    for a in rare.tolist():
        rows = np.setdiff1d(np.arange(n, dtype=np.int64), ex[atom == a])
        out.append(
            rows[np.linspace(0, len(rows) - 1, min(RARE_NEGATIVES, len(rows))).round().astype(np.int64)]
        )
    return np.unique(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)
