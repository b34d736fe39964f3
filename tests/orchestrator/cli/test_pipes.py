"""Output that survives a pipe (issue 28): tables at full width, never cut with ``…``; warnings on one line.

Each command runs as its own process with stdout to a pipe, as ``orch ... | cat`` would, so rich
sees no terminal on stdout (whatever stdin and stderr are).
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.storage.store import ResultStore

LONG = "a_learner_name_long_enough_that_no_eighty_column_table_can_hold_it_whole"
GAME = "a_game_whose_name_alone_takes_most_of_a_terminal_line_of_eighty_columns"
NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def piped(*args: str) -> subprocess.CompletedProcess:
    """``orch ARGS | cat``: the command's stdout is a pipe, COLUMNS unset."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[3]), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", *args],
        capture_output=True,  # stdout (and stderr) to a pipe, as `orch ... | cat`
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A store whose names make every table wider than 80 columns."""
    root = tmp_path_factory.mktemp("pipes") / "st"
    rows = []
    for learner in (LONG, "knn5"):
        for target, counts in (("legal", (3, 1, 5, 0)), ("next", (2, 0, 6, 1))):
            rows.append(dict(job_id=f"{learner}-{target}", sweep="sweep-with-a-rather-long-name-for-pipes",
                             dataset="/data/" + "d" * 40, learner=learner, game=GAME, target=target,
                             predicate=target, status="ok", attempt=1, seed=0, budget_s=60.0,
                             test_tp=counts[0], test_fp=counts[1], test_tn=counts[2], test_fn=counts[3],
                             finished=NOW))  # fmt: skip
    ResultStore(root).write(rows)
    return root


COMMANDS = {
    "games list": lambda s: ("games", "list"),
    "learners list": lambda s: ("learners", "list"),
    "status": lambda s: ("status", "--store", str(s)),
    "sweeps": lambda s: ("sweeps", "--store", str(s)),
    "report": lambda s: ("report", "--store", str(s)),
    "compare": lambda s: ("compare", LONG, "knn5", "--store", str(s), "--all"),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_piped_table_is_never_cut(store: Path, name: str) -> None:
    out = piped(*COMMANDS[name](store))
    assert out.returncode == 0, out.stderr
    assert "…" not in out.stdout and "..." not in out.stdout.replace("....", "")
    assert "\x1b[" not in out.stdout  # no colour codes in a pipe
    if name in ("status", "report", "compare"):
        assert LONG in out.stdout  # the long name whole, on one line
    if name == "sweeps":
        assert "sweep-with-a-rather-long-name-for-pipes" in out.stdout


def test_tsv_format_is_plain_rows(store: Path) -> None:
    out = piped("status", "--store", str(store), "--format", "tsv")
    lines = out.stdout.strip().splitlines()
    assert lines[0].split("\t")[0] == "learner" and any(line.startswith(LONG + "\t") for line in lines)
    games = piped("games", "list", "--format", "tsv").stdout.strip().splitlines()
    assert games[0].split("\t") == ["game", "GDL", "types", "goal", "legal", "next", "terminal"]
    assert all(len(line.split("\t")) == 7 for line in games[1:]) and len(games) > 1


def test_a_warning_is_one_line_with_its_file_and_line() -> None:
    """The CLI's warning format: ``file:line: warning: message``, and no source line of orch under it."""
    code = (
        "import warnings\n"
        "from orchestrator.cli.output import install_warning_format\n"
        "from tasks.gdl.errors import GDLWarning\n"
        "install_warning_format()\n"
        "warnings.warn('game.kif:12:3: skipped 1 non-GDL line', GDLWarning)\n"
        "warnings.warn('a plain warning\\nover two lines')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    lines = out.stderr.splitlines()
    assert lines[0] == "game.kif:12:3: warning: skipped 1 non-GDL line"
    assert lines[1].endswith(": warning: a plain warning over two lines") and lines[1].startswith("<string>:")
    assert len(lines) == 2
