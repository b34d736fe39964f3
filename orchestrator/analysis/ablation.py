"""Ablation tables: a learner with features switched off, beside the learner itself.

An *arm* is a results file whose learner name is another file's learner followed by switches that
turn features off (``ilasp_w50000_noframe`` beside ``ilasp_w50000``), at the same budget. An arm
is run only on the targets its switch touches (``orch run --targets``, then ``orch bench
export``), so it is compared with the full learner task by task on the tasks both files have, and
the tasks whose balanced accuracy moves are named: a switch is measured by what it solves and what
it costs, not only by a mean. Under a work bound (``ilasp_w<N>``) a job the bound stops takes the
same steps on any machine, so there a difference is the switch's and not the clock's; a job the
wall-clock budget stops first (``timeout``, where the bound's own cut is ``timeout-work``) still depends
on the machine.

The arms are rendered here and kept out of the main tables of :mod:`results_docs`, whose rows are
whole benchmarks.
"""

from __future__ import annotations

import re
from pathlib import Path

from orchestrator.analysis.markdown import md_table, pct
from orchestrator.analysis.results import stale_note, summarise, target_key

SWITCHED_OFF = re.compile(r"(?:_no[a-z]+)+")
"""What an arm's name adds to its learner's: one or more ``_no<feature>`` switches."""
MOVED = 0.0005
"""A task moves when its balanced accuracy differs by more than this (the files keep 6 decimals)."""

Files = list[tuple[Path, list[dict]]]


def split_arms(files: Files) -> tuple[Files, list[tuple[Path, list[dict], list[dict]]]]:
    """The files that are whole benchmarks, and each arm with its learner's rows (same budget).

    An arm's learner is the longest other learner at the same budget that its name extends by
    switches only, so ``ilasp_w50000_noframe`` is an arm of ``ilasp_w50000``, never of ``ilasp``."""
    at = {(rows[0]["learner"], rows[0]["budget_s"]): rows for _, rows in files if rows}
    whole: Files = []
    arms = []
    for path, rows in files:
        base = _base_of(rows[0]["learner"], rows[0]["budget_s"], at) if rows else None
        if base is None:
            whole.append((path, rows))
        else:
            arms.append((path, rows, at[base]))
    return whole, arms


def _base_of(learner: str, budget: str, at: dict[tuple[str, str], list[dict]]) -> tuple[str, str] | None:
    bases = [
        (name, b)
        for name, b in at
        if b == budget and learner.startswith(name) and SWITCHED_OFF.fullmatch(learner[len(name) :])
    ]
    return max(bases, key=lambda key: len(key[0]), default=None)


def render(arms: list[tuple[Path, list[dict], list[dict]]]) -> list[str]:
    """The ablation section: per arm and target, both sides on the same tasks, and the moved tasks."""
    if not arms:
        return []
    head = ["learner", "switched off", "budget", "target", "tasks", "with: perfect", "with: mean BA",
            "without: perfect", "without: mean BA", "better with", "better without", "commit"]  # fmt: skip
    table, moved = [], []
    for path, rows, base_rows in sorted(arms, key=lambda arm: arm[1][0]["learner"]):
        base = {(r["game"], r["target"]): r for r in base_rows}
        learner, budget = base_rows[0]["learner"], rows[0]["budget_s"]
        off = rows[0]["learner"][len(learner) :].replace("_no", " ").split()
        pairs = [(base[(r["game"], r["target"])], r) for r in rows if (r["game"], r["target"]) in base]
        for target in sorted({r["target"] for _, r in pairs}, key=lambda t: (target_key(t), t)):
            these = [(w, o) for w, o in pairs if o["target"] == target]
            with_, without = summarise([w for w, _ in these]), summarise([o for _, o in these])
            worse, better = _moves(these)
            commits = ", ".join(sorted({o["commit"] for _, o in these}))
            table.append(
                [learner, ", ".join(off), f"{budget}s", target, str(len(these)), str(with_["perfect"]),
                 pct(with_["balanced_accuracy"]), str(without["perfect"]), pct(without["balanced_accuracy"]),
                 str(len(worse)), str(len(better)), f"{commits} {stale_note(rows)}".strip()]
            )  # fmt: skip
        moved.append(_moved_line(path, rows[0]["learner"], pairs))
    return [
        "",
        "### Ablation: features switched off, on the same tasks",
        "",
        "Each row compares a file whose learner switches features off (`LEARNER_noX`) with the file of "
        "the learner itself at the same budget, on that target's tasks in both files (an arm runs only "
        "the targets its switch touches). *Better with* counts the tasks whose balanced accuracy is "
        f"higher with the feature on (by more than {MOVED}), *better without* those higher with it off. "
        "With a work bound (`ilasp_w<N>`) a job the bound stops takes the same steps on any machine, so "
        "there a difference is the switch's, not the clock's; a job the wall-clock budget stops first "
        "(`timeout` in a file's statuses; the bound's own cut is `timeout-work`) still depends on the machine.",
        "",
        *md_table(head, table),
        "",
        *moved,
    ]


def _moves(pairs: list[tuple[dict, dict]]) -> tuple[list[tuple[dict, dict]], list[tuple[dict, dict]]]:
    """The (with, without) pairs whose task is worse without the feature, and those better without it."""
    worse = [(w, o) for w, o in pairs if _ba(w) - _ba(o) > MOVED]
    better = [(w, o) for w, o in pairs if _ba(o) - _ba(w) > MOVED]
    return worse, better


def _moved_line(path: Path, arm: str, pairs: list[tuple[dict, dict]]) -> str:
    worse, better = _moves(pairs)
    if not worse and not better:
        return f"- `{arm}` (`{path.name}`): no task moves ({len(pairs)} tasks)."
    named = lambda moved: ", ".join(  # noqa: E731
        f"{w['game']}/{w['target']} {_ba(w):.3f} -> {_ba(o):.3f}" for w, o in moved
    )
    parts = [f"worse without ({len(worse)}): {named(worse)}"] if worse else []
    parts += [f"better without ({len(better)}): {named(better)}"] if better else []
    return f"- `{arm}` (`{path.name}`): " + "; ".join(parts) + "."


def _ba(row: dict) -> float:
    return float(row["balanced_accuracy"])
