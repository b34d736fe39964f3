"""The exit-code contract (README "Errors and exit codes", issue 28), one case per command and code.

0: everything asked for ran and every job is ok, timeout or not_applicable; 1: some job ended error,
oom or lost, and the last line says which; 2: bad usage or input, found before Ray starts where it
can be (names, applicability, missing data files, a learner's missing requirements).

The sweeps are real (Ray, the store, the test learners ``noop`` and ``crash``); the learner with a
missing requirement is a real registration whose module is not installed, not a mock.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sweep_helpers import copy_bundled_game
from typer.testing import CliRunner

from learners.base import register
from learners.testing import NoopLearner
from orchestrator.cli import app

runner = CliRunner()


@register(
    "needs-missing-pkg",
    description="Test learner: requires a package that is not installed (the requirement check).",
    testing=True,
    requires=("surely_not_installed_pkg",),
    extra="surely",
)
class NeedsMissingPackage(NoopLearner):
    """Registered here only: what a learner whose extra is not installed looks like to orch."""


@pytest.fixture(scope="module")
def pennies(tmp_path_factory) -> Path:
    """The bundled pennies game as a dataset directory of its own (small: 5 predicates)."""
    return copy_bundled_game("pennies", tmp_path_factory.mktemp("ds") / "pennies")


def orch(*args: str):
    return runner.invoke(app, [str(a) for a in args])


def _ray_started(output: str) -> bool:
    return "starting" in output.lower() and "ray" in output.lower()


# --- exit 2: found before Ray starts ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("learners", "expected"),
    [
        ("knn5,nosuchlearner", "unknown learner 'nosuchlearner'"),
        ("gnn-gat-egat", "learner gnn-gat-egat does not apply to"),
        ("needs-missing-pkg", "pip install 'orch[surely]'"),
    ],
)
def test_run_refuses_bad_input_before_ray_with_exit_2(
    pennies: Path, tmp_path: Path, learners, expected
) -> None:
    out = orch("run", "--dataset", pennies, "--all-games", "--learners", learners, "--budget", "5s",
               "--store", tmp_path / "st")  # fmt: skip
    assert out.exit_code == 2, out.output
    assert expected in out.output and not _ray_started(out.output)
    assert out.output.strip().count("\n") == 0  # one line
    assert not (tmp_path / "st" / "results").exists()  # nothing ran


def test_run_refuses_a_named_game_with_a_missing_data_file(pennies: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(pennies, broken)
    (broken / "data" / "train" / "pennies_legal_train.dat").unlink()
    out = orch("run", "--dataset", broken, "--games", "pennies", "--learners", "noop", "--budget", "5s",
               "--store", tmp_path / "st")  # fmt: skip
    assert out.exit_code == 2 and "pennies_legal_train.dat" in out.output and "missing" in out.output
    assert not _ray_started(out.output)


def test_learn_exit_codes(pennies: Path, tmp_path: Path) -> None:
    base = ("learn", "--dataset", pennies, "--game", "pennies", "--target", "legal", "--budget", "20s")
    ok = orch(*base, "--learner", "true")
    assert ok.exit_code == 0, ok.output
    crash = orch(*base, "--learner", "crash")
    assert crash.exit_code == 1 and "crash" in crash.output
    for learner, expected in (("gnn-gat-egat", "does not apply"), ("needs-missing-pkg", "pip install 'orch[surely]'"),
                              ("nosuch", "unknown learner")):  # fmt: skip
        bad = orch(*base, "--learner", learner)
        assert bad.exit_code == 2 and expected in bad.output, (learner, bad.output)
    broken = tmp_path / "broken"
    shutil.copytree(pennies, broken)
    (broken / "data" / "train" / "pennies_legal_train.dat").unlink()
    missing = orch(
        "learn", "--dataset", broken, "--game", "pennies", "--target", "legal", "--learner", "true"
    )
    assert missing.exit_code == 2 and "pennies_legal_train.dat" in missing.output


def test_games_exit_codes(pennies: Path, tmp_path: Path) -> None:
    assert orch("games", "list", "--dataset", pennies).exit_code == 0
    unknown = orch("games", "check", "--dataset", pennies, "--games", "penies")
    assert unknown.exit_code == 2 and "pennies" in unknown.output  # a close match
    wrong = tmp_path / "wrong"
    shutil.copytree(pennies, wrong)
    test_file = wrong / "data" / "test" / "pennies_terminal_test.dat"
    text = test_file.read_text()
    assert "positives:\n\n---" in text  # a state that is not terminal...
    test_file.write_text(text.replace("positives:\n\n---", "positives:\n\tterminal()\n\n---", 1))  # ...now is
    checked = orch("games", "check", "--dataset", wrong)
    assert checked.exit_code == 1, checked.output
    assert orch("games", "check", "--dataset", pennies).exit_code == 0


# --- run, status, report: 0, 1 and 2 on real sweeps ------------------------------------------------


@pytest.fixture(scope="module")
def swept(pennies: Path, tmp_path_factory) -> dict:
    """Two real sweeps on one store: ``noop`` (all ok), then ``crash`` (all error)."""
    store = tmp_path_factory.mktemp("store") / "st"
    common = ("--dataset", pennies, "--all-games", "--targets", "legal,terminal", "--budget", "20s",
              "--store", store, "--num-cpus", "2")  # fmt: skip
    ok = orch("run", *common, "--learners", "noop", "--sweep", "clean")
    failed = orch("run", *common, "--learners", "crash", "--sweep", "crashing")
    return {"store": store, "ok": ok, "failed": failed}


def test_run_exit_0_and_1(swept: dict) -> None:
    assert swept["ok"].exit_code == 0, swept["ok"].output
    out = swept["failed"]
    assert out.exit_code == 1, out.output
    last = out.output.strip().splitlines()[-1]
    assert last.startswith("failed:") and "error (crash" in last


def test_status_exit_codes(swept: dict) -> None:
    store = swept["store"]
    assert orch("status", "--store", store, "--sweep", "clean").exit_code == 0
    failed = orch("status", "--store", store, "--sweep", "crashing")
    assert failed.exit_code == 1 and failed.output.strip().splitlines()[-1].startswith("failed:")
    unknown = orch("status", "--store", store, "--sweep", "cleen")
    assert unknown.exit_code == 2 and "did you mean clean" in unknown.output
    assert orch("status", "--store", store.parent / "nothing-here").exit_code == 2


def test_report_exit_codes(swept: dict) -> None:
    store = swept["store"]
    clean = orch("report", "--store", store, "--sweep", "clean", "--by", "learner")
    assert clean.exit_code == 0, clean.output
    failed = orch("report", "--store", store, "--sweep", "crashing", "--by", "learner")
    assert failed.exit_code == 1 and "error (crash)" in failed.output.strip().splitlines()[-1]
    unknown = orch("report", "--store", store, "--sweep", "nosuchsweep")
    assert unknown.exit_code == 2 and "no sweep 'nosuchsweep'" in unknown.output
    assert "clean" in unknown.output and "crashing" in unknown.output  # what there is instead


def test_sweeps_lists_both_sweeps(swept: dict) -> None:
    import json

    out = orch("sweeps", "--store", swept["store"], "--json")
    assert out.exit_code == 0, out.output
    rows = {r["sweep"]: r for r in json.loads(out.output)["sweeps"]}
    assert set(rows) == {"clean", "crashing"}
    assert (rows["clean"]["done"], rows["clean"]["failed"]) == (rows["clean"]["jobs"], 0)
    assert (rows["crashing"]["done"], rows["crashing"]["failed"]) == (0, rows["crashing"]["jobs"])
    assert rows["clean"]["learners"] == "noop" and rows["clean"]["last_activity"] != "-"
