"""Checks that refuse a sweep (or ``orch learn``) before Ray starts: requirements, applicability, data files.

Why here, and before Ray: a Ray start costs seconds (a cluster start minutes), and a problem that
the command line and the data already show should cost none of them. Each check reads declarations
and file listings only, never a learner's code or a task's examples:

* a learner's requirements (:class:`learners.base.Requirements`, declared in its registration):
  missing modules stop the command with one line saying what to install (``pip install 'orch[gnn]'``);
* its applicability by task source kind (``iggp`` or ``graphlog``): ``gnn-gat-egat`` on an IGGP
  game is refused, not recorded as 68 ``not_applicable`` jobs after Ray started;
* the data files of the tasks asked for: a missing split file (the published
  ``ttcc4_legal_train.dat``) is refused when the game was named, and the task is left out, with one
  line saying so, when every game was asked for (``--all-games``).

Every refusal is an :class:`~orchestrator.cli.errors.OrchError` (exit 2, bad input).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cli.errors import OrchError

if TYPE_CHECKING:
    from tasks.sources import TaskSource

GRAPHLOG_SCHEME = "graphlog"
KIND_LABEL = {
    "iggp": "IGGP games (a dataset directory or the bundled games)",
    "graphlog": "graphlog:DIR worlds",
}


def source_kind(spec: str | Path | None) -> str:
    """The task source kind of a ``--dataset`` value: ``graphlog`` for ``graphlog:DIR``, else ``iggp``."""
    text = "" if spec is None else str(spec)
    return GRAPHLOG_SCHEME if text.startswith(f"{GRAPHLOG_SCHEME}:") else "iggp"


def missing_requirements(learner: str) -> str | None:
    """One line saying what ``learner`` needs that is not installed, or None when nothing is missing."""
    from learners.base import spec_for

    needs = spec_for(learner)[0].requires
    missing = needs.missing()
    if not missing:
        return None
    return f"learner {learner} needs {', '.join(missing)}, which is not installed: {needs.install_hint()}"


def check_requirements(learners: Iterable[str]) -> None:
    """Refuse (exit 2) when any learner lacks a required module; the line names the install command."""
    problems = [line for name in learners if (line := missing_requirements(name))]
    if problems:
        raise OrchError("; ".join(problems))


def check_applicability(learners: Iterable[str], spec: str | Path | None, where: str) -> None:
    """Refuse (exit 2) a learner that does not learn tasks of the dataset's source kind."""
    from learners.base import spec_for

    kind = source_kind(spec)
    for name in learners:
        needs = spec_for(name)[0].requires
        if not needs.applies_to(kind):
            kinds = " or ".join(KIND_LABEL.get(k, k) for k in needs.sources)
            raise OrchError(f"learner {name} does not apply to {where}: it learns {kinds} only")


def runnable_tasks(
    source: TaskSource,
    games: Sequence[str],
    targets: Sequence[str] | None,
    named: bool,
    only: Collection[tuple[str, str]] | None = None,
) -> tuple[set[tuple[str, str]], list[str]]:
    """The (game, target) pairs whose split files are all there, and one line per task left out.

    A missing file of a game the user named (``named``) is refused (exit 2); with every game asked
    for, its task is left out and reported, so one defective game does not stop a whole dataset.
    ``only``: the caller's own choice of tasks (``orch bench``); others are not checked.
    """
    missing_of = getattr(source, "missing_files", None)
    keep: set[tuple[str, str]] = set()
    left_out: list[str] = []
    wanted = {t.lower() for t in targets or ()}
    for game in games:
        for target in source.targets(game):
            if wanted and target.lower() not in wanted or only is not None and (game, target) not in only:
                continue
            missing = missing_of(game, target) if missing_of else {}
            if not missing:
                keep.add((game, target))
                continue
            files = ", ".join(str(p) for p in missing.values())
            if named:
                raise OrchError(
                    f"{game}/{target}: missing data file {files} (fix the dataset, or leave the task out "
                    f"with --targets)"
                )
            left_out.append(f"left out {game}/{target}: missing data file {files}")
    return keep, left_out
