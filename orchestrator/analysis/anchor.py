"""Published systems as *anchors*: per-task scores read from a data file, compared task by task.

An anchor file is a CSV with ``game``, ``target``, one balanced-accuracy column (``balanced_accuracy``
or a name ending in ``_ba``, e.g. ``ilasp_star_test_ba``) and optionally ``perfect`` (1 where the
task is solved exactly; otherwise derived as BA == 1). ``../shared/iggp/ilasp_star_shared.csv``
(ILASP*, re-scored strictly) is one. Why a file and not constants: a published figure is only
comparable on the same tasks under the same scoring, and a file lets every report restrict it to
the tasks a learner was actually run on, and name where it came from. Anchor files are read from
their path; nothing is copied into the project.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

TIE = 1e-9
"""Balanced accuracies closer than this are a tie (exactly equal up to float rounding)."""


@dataclass(frozen=True)
class Anchor:
    """Per-task scores of a published system: ``scores[(game, target)] = (ba, perfect)``."""

    name: str
    path: str
    scores: dict[tuple[str, str], tuple[float, bool]]

    @property
    def source(self) -> str:
        return f"{self.name} (per-task scores from {self.path})"

    def on(self, tasks: set[tuple[str, str]]) -> dict:
        """The anchor's figures over ``tasks`` it has (the same tasks as the learner beside it)."""
        common = sorted(tasks & self.scores.keys())
        n = len(common)
        return {
            "tasks": n,
            "balanced_accuracy": sum(self.scores[t][0] for t in common) / n if n else None,
            "perfect": sum(self.scores[t][1] for t in common),
        }


@dataclass(frozen=True)
class GraphLogAnchor:
    """Per-world test accuracies of a published GraphLog model: ``scores[(model, world)] = acc``.

    Written from a paper's per-world table (the GraphLog paper's Table 6 gives one per world) as a
    CSV with ``world``, ``model`` and ``test_accuracy``. A figure is only shown beside a row of
    this store when the anchor has every world that row was scored on (:meth:`on`): the paper's
    mean over its own 57 worlds says nothing about worlds this suite generated.
    """

    name: str
    path: str
    scores: dict[tuple[str, str], float]

    @property
    def source(self) -> str:
        return f"{self.name} (per-world accuracies from {self.path})"

    def on(self, model: str, worlds: list[str]) -> float | None:
        """The anchor's mean accuracy of ``model`` over ``worlds``; None unless it has all of them."""
        if not worlds or any((model, w) not in self.scores for w in worlds):
            return None
        return sum(self.scores[(model, w)] for w in worlds) / len(worlds)


def read_anchor(path: str | Path, name: str | None = None) -> Anchor | GraphLogAnchor:
    """Read an anchor CSV: per-task IGGP scores, or per-world GraphLog accuracies (by its columns).

    A bad file is a ValueError naming the file and line.
    """
    path = Path(path)
    try:
        f = open(path, newline="")
    except OSError as e:
        raise ValueError(f"{path}: cannot read the anchor file ({e.strerror})") from None
    with f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames or []
        if "world" in fields:
            return _read_graphlog(reader, path, name)
        score = [c for c in fields if c == "balanced_accuracy" or c.endswith("_ba")]
        if "game" not in fields or "target" not in fields or len(score) != 1:
            raise ValueError(
                f"{path}:1: an anchor file needs columns game, target and one balanced-accuracy column "
                f"(balanced_accuracy or *_ba); it has {fields}"
            )
        scores: dict[tuple[str, str], tuple[float, bool]] = {}
        for line, row in enumerate(reader, start=2):
            ba = _fraction(row, score[0], "balanced accuracy", f"{path}:{line}")
            try:
                perfect = bool(int(row["perfect"])) if row.get("perfect") not in (None, "") else ba == 1.0
            except (TypeError, ValueError):
                raise ValueError(f"{path}:{line}: not a number in 'perfect': {row}") from None
            _add(
                scores,
                (row["game"], row["target"]),
                (ba, perfect),
                f"{path}:{line}: task {row['game']}/{row['target']}",
            )
    return Anchor(name or path.stem, str(path), scores)


def _fraction(row: dict, column: str, what: str, where: str) -> float:
    """``row[column]`` as a number in [0, 1]; else a ValueError at ``where`` (file:line)."""
    try:
        x = float(row[column])
    except (TypeError, ValueError):
        raise ValueError(f"{where}: not a number in {column!r}: {row}") from None
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{where}: {what} {x} is outside [0, 1]")
    return x


def _add(scores: dict, key: tuple, value: object, what: str) -> None:
    """One score per key: a second row for the same task or world is an error naming it."""
    if key in scores:
        raise ValueError(f"{what} appears twice")
    scores[key] = value


def read_iggp_anchor(path: str | Path, name: str | None = None) -> Anchor:
    """:func:`read_anchor` where only a per-task IGGP anchor makes sense (``orch compare``)."""
    anchor = read_anchor(path, name)
    if not isinstance(anchor, Anchor):
        raise ValueError(f"{path}:1: a GraphLog anchor (per world); this needs per-task IGGP scores")
    return anchor


def _read_graphlog(reader: csv.DictReader, path: Path, name: str | None) -> GraphLogAnchor:
    fields = reader.fieldnames or []
    if not {"world", "model", "test_accuracy"} <= set(fields):
        raise ValueError(
            f"{path}:1: a GraphLog anchor file needs columns world, model, test_accuracy; it has {fields}"
        )
    scores: dict[tuple[str, str], float] = {}
    for line, row in enumerate(reader, start=2):
        acc = _fraction(row, "test_accuracy", "test accuracy", f"{path}:{line}")
        _add(
            scores,
            (row["model"], row["world"]),
            acc,
            f"{path}:{line}: model {row['model']} on world {row['world']}",
        )
    return GraphLogAnchor(name or path.stem, str(path), scores)


@dataclass
class AnchorComparison:
    """A learner against an anchor on the tasks both have: per-task rows and the totals."""

    learner: str
    anchor: Anchor
    rows: list[dict]
    only_learner: int
    only_anchor: int

    def count(self, outcome: str) -> int:
        return sum(r["outcome"] == outcome for r in self.rows)

    def summary(self) -> dict:
        n = len(self.rows)
        return {
            "learner": self.learner,
            "anchor": self.anchor.name,
            "tasks": n,
            "wins": self.count("win"),
            "losses": self.count("loss"),
            "ties": self.count("tie"),
            "learner_ba": sum(r["learner_ba"] for r in self.rows) / n if n else None,
            "anchor_ba": sum(r["anchor_ba"] for r in self.rows) / n if n else None,
            "learner_perfect": sum(r["learner_perfect"] for r in self.rows),
            "anchor_perfect": sum(r["anchor_perfect"] for r in self.rows),
            "only_learner": self.only_learner,
            "only_anchor": self.only_anchor,
        }


def compare_to_anchor(
    learner: str, scores: dict[tuple[str, str], tuple[float, bool]], anchor: Anchor, tie: float = TIE
) -> AnchorComparison:
    """Task by task: a win when the learner's balanced accuracy is higher by more than ``tie``."""
    rows = []
    for key in sorted(scores.keys() & anchor.scores.keys()):
        (ba, perfect), (aba, aperfect) = scores[key], anchor.scores[key]
        diff = ba - aba
        outcome = "tie" if abs(diff) <= tie else ("win" if diff > 0 else "loss")
        rows.append(
            {"game": key[0], "target": key[1], "learner_ba": ba, "anchor_ba": aba, "diff": diff,
             "outcome": outcome, "learner_perfect": int(perfect), "anchor_perfect": int(aperfect)}
        )  # fmt: skip
    return AnchorComparison(
        learner,
        anchor,
        rows,
        len(scores.keys() - anchor.scores.keys()),
        len(anchor.scores.keys() - scores.keys()),
    )
