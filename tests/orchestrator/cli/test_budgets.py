"""One budget type for every command: the same parser, the same errors, the same meaning.

A budget is a hard wall-clock limit or ``none``; ``0s`` is a duration that cannot be a budget,
which is a different error from text that is no duration at all.
"""

from __future__ import annotations

import json
import time

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.scheduling.sweep import job_id

runner = CliRunner()

# Every command with a --budget, with the other arguments it needs to get as far as parsing it.
COMMANDS = {
    "run": ["run", "--games", "tag", "--learners", "noop"],
    "learn": ["learn", "-g", "tag", "-t", "next", "-l", "noop"],
    "graphlog train": ["graphlog", "train", "no-such-dir"],
    "graphlog sweep": ["graphlog", "sweep", "no-such-dir", "--setups", "supervised"],
}


def _text(result) -> str:
    """The output as one line of words (rich draws usage errors in a wrapped box)."""
    return " ".join(result.output.replace("│", " ").split())


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_zero_is_a_duration_but_not_a_budget(command: str) -> None:
    result = runner.invoke(app, [*COMMANDS[command], "--budget", "0s"])
    text = _text(result)
    assert result.exit_code == 2, text
    assert "'0s' is a duration, but not a positive one" in text and "not a duration" not in text


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_nonsense_is_not_a_duration(command: str) -> None:
    result = runner.invoke(app, [*COMMANDS[command], "--budget", "soon"])
    assert result.exit_code == 2 and "cannot read duration 'soon': not a duration" in _text(result)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_budget_option_reads_the_same(command: str) -> None:
    result = runner.invoke(app, [*command.split(), "--help"])
    assert result.exit_code == 0 and "--budget" in result.output and "DURATION" in result.output


def test_a_sweep_needs_a_limit() -> None:
    result = runner.invoke(app, [*COMMANDS["run"], "--budget", "none"])
    assert result.exit_code == 2 and "budget must be finite" in _text(result)


def test_learn_stops_a_stuck_learner_at_its_budget() -> None:
    """`stuck` reports a model, then blocks in a clingo solve that ignores signals: killed at 1 s."""
    began = time.monotonic()
    result = runner.invoke(app, ["learn", "-g", "tag", "-t", "next", "-l", "stuck", "-b", "1s", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    fits = doc["learned"].values()  # one fit per sub-predicate of tag/next, each stopped at 1 s
    assert doc["status"] == "timeout" and doc["reports"] == len(fits)
    assert all(f["reports"] == 1 and 1.0 <= f["learn_s"] < 5.0 for f in fits)
    assert time.monotonic() - began < 30 * len(fits)


def test_job_ids_hash_budgets_as_before() -> None:
    """Job ids from before the one duration type (computed at 98edc78): stored results stay found."""
    key = dict(game="tag", target="next", predicate="next_cell", learner="knn5", params={"k": "5"},
               dataset_fingerprint="f00", seed=0, repeat=1)  # fmt: skip
    assert job_id(**key, budget_s=1800.0) == "87bd6d8459ded408"
    assert job_id(**key, budget_s=1.5) == "4d808db35616bbe3"
