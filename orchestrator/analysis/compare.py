"""Comparing two runs task by task: two learners, or two versions of one learner across sweeps.

A *side* is a learner in a store, optionally narrowed to one sweep: ``ilasp``, ``ilasp@sweep-a``,
or the same learner in two stores (two versions of the code). Each task's balanced accuracy is
compared; a difference below ``tie`` counts as a tie. Only tasks complete on both sides count.
"""

from __future__ import annotations

from dataclasses import dataclass

from learners.metrics import pool
from orchestrator.analysis.report import task_scores
from orchestrator.storage.store import ResultStore


@dataclass(frozen=True)
class Side:
    store: ResultStore
    learner: str
    sweep: str | None = None

    @classmethod
    def parse(cls, text: str, store: ResultStore) -> Side:
        learner, _, sweep = text.partition("@")
        return cls(store, learner, sweep or None)

    @property
    def label(self) -> str:
        return self.learner + (f"@{self.sweep}" if self.sweep else "")


def task_accuracies(side: Side) -> dict[str, tuple[float, bool]]:
    """task -> (balanced accuracy, perfect) for complete tasks, averaged over runs."""
    scores, predicates = task_scores(side.store, side.sweep)
    out = {}
    for s in scores:
        if s.learner != side.learner or not s.complete(predicates[(s.game, s.target)]):
            continue
        runs = [pool(c for c in run.values() if c is not None) for run in s.runs.values()]
        ba = sum(c.balanced_accuracy for c in runs) / len(runs)
        out[f"{s.game}_{s.target}"] = (ba, all(c.perfect for c in runs))
    return out


@dataclass
class Comparison:
    a: str
    b: str
    rows: list[dict]
    wins: int
    losses: int
    ties: int
    only_a: int
    only_b: int

    def summary(self) -> dict:
        return {
            "a": self.a,
            "b": self.b,
            "tasks": len(self.rows),
            "a_wins": self.wins,
            "b_wins": self.losses,
            "ties": self.ties,
            "only_a": self.only_a,
            "only_b": self.only_b,
        }


def compare(a: Side, b: Side, tie: float = 1e-9) -> Comparison:
    """Task-by-task comparison of side ``a`` against side ``b`` (wins are a's)."""
    ra, rb = task_accuracies(a), task_accuracies(b)
    rows, wins, losses, ties = [], 0, 0, 0
    for task in sorted(ra.keys() & rb.keys()):
        (ba_a, p_a), (ba_b, p_b) = ra[task], rb[task]
        diff = ba_a - ba_b
        outcome = "tie" if abs(diff) <= tie else ("win" if diff > 0 else "loss")
        wins += outcome == "win"
        losses += outcome == "loss"
        ties += outcome == "tie"
        rows.append(
            {
                "task": task,
                f"{a.label} ba": ba_a,
                f"{b.label} ba": ba_b,
                "diff": diff,
                "outcome": outcome,
                f"{a.label} perfect": p_a,
                f"{b.label} perfect": p_b,
            }
        )
    return Comparison(
        a.label, b.label, rows, wins, losses, ties, len(ra.keys() - rb.keys()), len(rb.keys() - ra.keys())
    )
