"""A sweep is games x learners x predicates (x repeats): a flat list of jobs, each with a stable id.

Why a deterministic id: resume, dedup and analysis all key on it. The id is a hash of exactly what
determines a result, namely the game, the target and flattened predicate, the learner's name and
parameters, a fingerprint of the dataset *content* (not its path, so moving the data keeps ids and
changing one .dat file changes them), the seed, the repeat index and the budget. Run the same
command twice and the second run finds every id already stored.

Names are validated here, before Ray starts: an unknown learner lists the known ones, an unknown
game suggests close matches.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass

from learners.base import UnknownLearner, learner_params, spec_for
from orchestrator import durations
from orchestrator.suggest import UnknownName, did_you_mean, resolve_game, resolve_learner, source_label
from tasks.sources import TaskSource


class SweepError(ValueError):
    """A sweep cannot be built: an unknown name, a malformed option."""


@dataclass(frozen=True)
class Job:
    """One learner on one flattened predicate of one game, with one seed, repeat and budget."""

    job_id: str
    dataset: str
    dataset_fingerprint: str
    game: str
    target: str
    predicate: str
    learner: str
    params: str
    seed: int
    repeat: int
    budget_s: float

    @property
    def task_key(self) -> tuple[str, str, str]:
        """Jobs with the same key share one loaded task (the actor's cache key)."""
        return (self.dataset, self.game, self.target)

    def as_row(self) -> dict:
        return asdict(self)

    def label(self) -> str:
        return f"{self.game}/{self.predicate} {self.learner}" + (f" r{self.repeat}" if self.repeat else "")


def job_id(
    *,
    game: str,
    target: str,
    predicate: str,
    learner: str,
    params: str,
    dataset_fingerprint: str,
    seed: int,
    repeat: int,
    budget_s: float,
) -> str:
    """A 16-hex-digit content hash of everything that determines a job's result."""
    key = json.dumps(
        [
            game,
            target,
            predicate,
            learner,
            params,
            dataset_fingerprint,
            int(seed),
            int(repeat),
            float(budget_s),
        ],
        separators=(",", ":"),
    )
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def parse_duration(text: str) -> float:
    """A job budget: ``"30m"`` -> 1800.0, in the syntax of :func:`orchestrator.durations.parse_duration`.

    Never unlimited: every job of a sweep is stopped at its deadline.
    """
    try:
        seconds = durations.parse_duration(text)
    except durations.DurationError as e:
        raise SweepError(str(e)) from e
    return require_limit(seconds)


def require_limit(seconds: float | None) -> float:
    """A sweep's budget in seconds: ``none`` (None) is refused, since every job stops at its deadline."""
    if seconds is None:
        raise SweepError("a sweep's budget must be finite: every job is stopped at its deadline (e.g. 30m)")
    return seconds


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """``"4GiB"`` -> 4294967296; ``"500MB"`` -> 500000000; a bare number is bytes."""
    m = _SIZE.match(str(text))
    if not m:
        raise SweepError(f"not a memory size: {text!r} (examples: 4GiB, 512MiB, 2G)")
    unit = (m.group(2) or "B").upper()
    power = " KMGT".index(unit[0]) if unit[0] in "KMGT" else 0
    base = 1000 if unit.endswith("B") and "I" not in unit and power else 1024
    return int(float(m.group(1)) * base**power)


def split_names(text: str | None) -> list[str]:
    """A comma-separated CLI list, order kept, blanks and duplicates dropped."""
    if not text:
        return []
    return list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))


def validate_learners(names: Sequence[str]) -> dict[str, str]:
    """Every learner name must resolve in the registry; returns {canonical name: params as JSON}."""
    if not names:
        raise SweepError("no learners given (--learners a,b)")
    out = {}
    for given in names:
        try:
            name = resolve_learner(given)  # case-insensitive: KNN5 is knn5, with the same job ids
            spec_for(name)
        except (UnknownLearner, UnknownName) as e:
            raise SweepError(str(e)) from None
        out[name] = json.dumps(learner_params(name), sort_keys=True)
    return out


def validate_games(source: TaskSource, games: Sequence[str] | None, where: str | None = None) -> list[str]:
    """The requested games (None: all of them) in the source's spelling (case-insensitive), each
    checked against the source with suggestions; ``where`` names the source in messages."""
    known = source.games()
    if games is None:
        return list(known)
    if not games:
        raise SweepError("no games given (--games a,b or --all-games)")
    try:
        return list(dict.fromkeys(resolve_game(g, known, where or source.root) for g in games))
    except UnknownName as e:
        raise SweepError(str(e)) from None


def build_jobs(
    source: TaskSource,
    dataset: str,
    games: Sequence[str] | None,
    learners: Sequence[str],
    *,
    targets: Sequence[str] | None = None,
    seed: int = 0,
    repeats: int = 1,
    budget_s: float = 1800.0,
    only_tasks: Collection[tuple[str, str]] | None = None,
) -> list[Job]:
    """Every job of the sweep, in a stable order (game, target, predicate, learner, repeat).

    ``only_tasks`` keeps the (game, target) pairs it names (a caller that leaves some tasks out).
    """
    params = validate_learners(learners)
    learners = list(params)
    chosen = validate_games(source, games, source_label(dataset))
    if repeats < 1:
        raise SweepError(f"--repeats must be at least 1, not {repeats}")
    if budget_s <= 0:
        raise SweepError(f"--budget must be positive, not {budget_s}s")
    if targets:
        targets = _check_targets(source, chosen, targets)
    jobs = []
    for game in chosen:
        fingerprint = source.fingerprint(game)
        game_targets = source.targets(game)
        for target in targets or game_targets:
            if target not in game_targets:
                continue  # --targets narrows; a game without that target simply has no such jobs
            if only_tasks is not None and (game, target) not in only_tasks:
                continue
            for predicate in source.predicates(game, target):
                for learner in learners:
                    for repeat in range(repeats):
                        ident = job_id(
                            game=game, target=target, predicate=predicate, learner=learner,
                            params=params[learner], dataset_fingerprint=fingerprint, seed=seed,
                            repeat=repeat, budget_s=budget_s,
                        )  # fmt: skip
                        jobs.append(
                            Job(ident, dataset, fingerprint, game, target, predicate, learner,
                                params[learner], seed, repeat, float(budget_s))
                        )  # fmt: skip
    if not jobs:
        raise SweepError(f"the sweep is empty (games={list(chosen)}, targets={list(targets or [])})")
    return jobs


def _check_targets(source: TaskSource, games: Sequence[str], targets: Sequence[str]) -> list[str]:
    """``--targets`` in the sources' spelling (case-insensitive); one no chosen game has is an error."""
    known = sorted({t for g in games for t in source.targets(g)})
    out = []
    for t in targets:
        match = t if t in known else next((k for k in known if k.lower() == t.lower()), None)
        if match is None:
            close = did_you_mean(t, known)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise SweepError(f"no target {t!r} in the chosen games; {hint}their targets: {', '.join(known)}")
        out.append(match)
    return out


def sweep_name(jobs: Sequence[Job]) -> str:
    """A default sweep name that is the same every time the same command is run."""
    digest = hashlib.sha256("\n".join(sorted(j.job_id for j in jobs)).encode()).hexdigest()[:10]
    return f"sweep-{digest}"
