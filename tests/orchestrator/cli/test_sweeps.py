"""Sweeps as names (issue 28): a rerun after a data fix says what is current, the report reads the
newest data per task, ``orch gc`` deletes superseded rows only when asked (with a dry run)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from sweep_helpers import copy_bundled_game
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.storage.store import ResultStore

runner = CliRunner()
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def orch(*args) -> object:
    return runner.invoke(app, [str(a) for a in args])


def _row(job: str, fingerprint: str, sweep: str, minutes: int, attempt: int = 1, status: str = "ok") -> dict:
    return dict(job_id=job, sweep=sweep, dataset="/d", dataset_fingerprint=fingerprint, learner="knn5",
                game="g", target="legal", predicate="legal", status=status, attempt=attempt, seed=0,
                budget_s=60.0, test_tp=1, test_fp=0, test_tn=1, test_fn=0,
                finished=T0 + dt.timedelta(minutes=minutes))  # fmt: skip


def test_gc_deletes_superseded_rows_only_when_asked(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "st")
    store.write([_row("old", "fp-old", "before-fix", 0, status="error")])
    store.write([_row("old", "fp-old", "before-fix", 1, attempt=2)])  # a retry: attempt 1 is superseded
    store.write([_row("new", "fp-new", "after-fix", 5)])  # newer data: the whole "old" job is superseded
    assert store.read().num_rows == 3
    dry = orch("gc", "--store", store.uri, "--dry-run")
    assert dry.exit_code == 0 and "would delete 2 superseded row(s) of 3" in dry.output
    assert store.read().num_rows == 3  # a dry run deletes nothing
    done = orch("gc", "--store", store.uri)
    assert done.exit_code == 0 and "deleted 2 superseded row(s)" in done.output
    left = store.read(["job_id", "attempt"]).to_pylist()
    assert left == [{"job_id": "new", "attempt": 1}]
    again = orch("gc", "--store", store.uri, "--dry-run")
    assert "would delete 0" in again.output


def test_sweeps_json_and_unknown_sweep_everywhere(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "st")
    store.write([_row("old", "fp-old", "before-fix", 0), _row("new", "fp-new", "after-fix", 5)])
    listed = json.loads(orch("sweeps", "--store", store.uri, "--json").output)["sweeps"]
    assert [s["sweep"] for s in listed] == ["before-fix", "after-fix"]  # oldest first
    for command in (["status"], ["report"], ["compare", "knn5", "knn5"], ["analyse", "compose"],
                    ["analyse", "predictive"], ["select"]):  # fmt: skip
        out = orch(*command, "--store", store.uri, "--sweep", "after-fx")
        assert out.exit_code == 2, (command, out.output)
        assert "no sweep 'after-fx'" in out.output and "did you mean after-fix" in out.output, command


def test_analyse_compose_on_a_store_without_rule_programs_says_why(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "st")
    rows = [dict(_row(f"w{i}", "fp", "gl", 0), dataset="graphlog:/worlds", game=f"rule_{i}", target="relation",
                 predicate="rel_r1", learner="gnn-gat-egat") for i in range(3)]  # fmt: skip
    store.write(rows)
    out = orch("analyse", "compose", "--store", store.uri)
    assert out.exit_code == 2
    assert (
        "3 GraphLog row(s)" in out.output
        and "gnn-gat-egat" in out.output
        and "none with a learned program" in out.output
    )


@pytest.fixture
def pennies(tmp_path: Path) -> Path:
    return copy_bundled_game("pennies", tmp_path / "pennies")


def test_a_rerun_after_a_data_fix_says_which_sweep_is_current(pennies: Path, tmp_path: Path) -> None:
    store = tmp_path / "st"
    command = ("run", "--dataset", pennies, "--all-games", "--targets", "legal", "--learners", "noop",
               "--budget", "20s", "--store", store, "--num-cpus", "2")  # fmt: skip
    first = orch(*command, "--sweep", "before-fix")
    assert first.exit_code == 0, first.output
    with open(pennies / "games" / "pennies.txt", "a") as f:  # the data changes (a comment: still valid GDL)
        f.write("\n; fixed\n")
    second = orch(*command, "--sweep", "after-fix")
    assert second.exit_code == 0, second.output
    assert "the data of pennies changed since sweep before-fix" in second.output
    assert "this sweep (after-fix)" in second.output and "now current" in second.output
    report = orch("report", "--store", store, "--by", "learner")
    assert report.exit_code == 0, report.output
    assert "sweeps read: after-fix" in report.output and "superseded" in report.output
    assert "mixed datasets" not in report.output
    (row,) = json.loads(orch("report", "--store", store, "--by", "learner", "--format", "json").stdout)[
        "learner"
    ]
    assert (row["tasks"], row["incomplete"]) == (1, 0)  # readable after the fix: the new data's task
