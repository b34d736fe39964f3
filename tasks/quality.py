"""Quality rules for generated tasks: which (game, target) pairs count in headline figures.

Why: random playouts of an arbitrary rulesheet can give a task that measures nothing (a target
that never holds scores 100% for a learner that predicts "false" everywhere; a 16-state puzzle
leaves one or two test examples). Such a target is still written, so that anyone can look at
it, but the manifest records why it is left out of headline figures. The rules (docs/ggp-benchmark.md):

* ``no-positive`` / ``no-negative``: some split has no positive (or no negative) target atom
  (a split with no examples has neither);
* ``few-states``: the game gave fewer than :data:`MIN_DISTINCT_STATES` distinct states;
* ``test-seen-in-train``: every test background also occurs in train (the test split measures
  memory, not generalisation);
* ``never-ends``: no episode reached a terminal state within the step limit (the examples only
  cover openings, and terminal/goal are degenerate there);
* ``too-many-atoms``: the signature gives the target more than :data:`MAX_CANDIDATE_ATOMS`
  candidate atoms (its ``atoms:`` section, the closed world's negatives). The one rule whose
  target is *not* written: the section alone would take gigabytes (an inferred checkers
  signature asked for more than 7 GB before a single example), and no learner could read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tasks.iggp import DatFile
from tasks.task import SPLITS

MIN_DISTINCT_STATES = 30
"""Fewest distinct states a game must give: at the 4:1:1 split, 30 leave 5 test states."""

MAX_CANDIDATE_ATOMS = 1_000_000
"""Most candidate atoms a target may have: 22 times the published IGGP dataset's largest
(asylum_legal, 45,061)."""

RULES = ("no-positive", "no-negative", "few-states", "test-seen-in-train", "never-ends", "too-many-atoms")


def too_many_atoms(size: int) -> str | None:
    """The ``too-many-atoms`` reason for a target with ``size`` candidate atoms, or None."""
    if size <= MAX_CANDIDATE_ATOMS:
        return None
    return f"too-many-atoms: {size:,} candidate atoms (> {MAX_CANDIDATE_ATOMS:,}); not written"


@dataclass(frozen=True)
class SplitStats:
    """One split of one target: examples, and positive/negative atom counts (closed world)."""

    examples: int
    positives: int
    negatives: int

    @property
    def positive_share(self) -> float | None:
        total = self.positives + self.negatives
        return None if total == 0 else self.positives / total

    def as_dict(self) -> dict:
        share = self.positive_share
        return {
            "examples": self.examples,
            "positives": self.positives,
            "negatives": self.negatives,
            "positive_share": None if share is None else round(share, 6),
        }


def split_stats(dat: DatFile) -> SplitStats:
    """Counts of one split file: E- of an example is its candidate atoms minus its positives."""
    candidates = len(set(dat.atoms))
    positives = sum(len(set(p)) for _, p in dat.examples)
    return SplitStats(len(dat.examples), positives, candidates * len(dat.examples) - positives)


def target_verdict(
    by_split: Mapping[str, DatFile], distinct_states: int, terminal_episodes: int
) -> tuple[dict[str, SplitStats], list[str]]:
    """Per-split counts of one target and the rules it breaks (empty: the target is kept).

    Each broken rule comes as ``rule: detail``, its name first (one of :data:`RULES`).
    """
    stats = {s: split_stats(by_split[s]) if s in by_split else SplitStats(0, 0, 0) for s in SPLITS}
    reasons = []
    no_pos = [s for s in SPLITS if stats[s].positives == 0]
    no_neg = [s for s in SPLITS if stats[s].negatives == 0]
    if no_pos:
        reasons.append(f"no-positive: no positive example in {', '.join(no_pos)}")
    if no_neg:
        reasons.append(f"no-negative: no negative example in {', '.join(no_neg)}")
    if distinct_states < MIN_DISTINCT_STATES:
        reasons.append(f"few-states: {distinct_states} distinct states (< {MIN_DISTINCT_STATES})")
    if "test" in by_split and "train" in by_split:
        train = {frozenset(b) for b, _ in by_split["train"].examples}
        test = [frozenset(b) for b, _ in by_split["test"].examples]
        if test and all(b in train for b in test):
            reasons.append("test-seen-in-train: every test background occurs in train")
    if terminal_episodes == 0:
        reasons.append("never-ends: no episode reached a terminal state within the step limit")
    return stats, reasons


def kept(reasons: list[str]) -> bool:
    """Whether a target with these broken rules counts in headline figures."""
    return not reasons
