"""`orch run` validates names before Ray starts; `orch status` counts jobs from manifest, rows and
the live file (no Ray needed for either)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

from sweep_helpers import write_tiny_dataset
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.scheduling.scheduler import SweepOptions, plan
from orchestrator.scheduling.sweep import build_jobs
from orchestrator.storage.live import clear_live_jobs, write_live_jobs
from orchestrator.storage.store import ResultStore
from tasks.iggp import Dataset

runner = CliRunner()


def test_run_rejects_unknown_names_before_starting_ray(tmp_path):
    ds = write_tiny_dataset(tmp_path / "ds")
    t0 = time.monotonic()
    bad_learner = runner.invoke(app, ["run", "--all-games", "--learners", "noop,nope", "--dataset", str(ds),
                                      "--store", str(tmp_path / "s")])  # fmt: skip
    assert bad_learner.exit_code == 2 and "unknown learner 'nope'" in bad_learner.output
    assert "knn5" in bad_learner.output.split("known learners:")[1]
    bad_game = runner.invoke(app, ["run", "--games", "betta", "--learners", "noop", "--dataset", str(ds),
                                   "--store", str(tmp_path / "s")])  # fmt: skip
    assert bad_game.exit_code == 2 and "did you mean beta" in bad_game.output
    neither = runner.invoke(app, ["run", "--learners", "noop", "--dataset", str(ds)])
    assert neither.exit_code == 2 and "--all-games" in neither.output
    assert time.monotonic() - t0 < 10  # no Ray start happened
    assert not (tmp_path / "s").exists()


def _row(job, status, attempt=1):
    now = datetime.now(UTC)
    return {
        **job.as_row(),
        "sweep": "s1",
        "status": status,
        "attempt": attempt,
        "started": now,
        "finished": now,
    }


def test_status_counts_done_running_failed_remaining_per_learner(tmp_path):
    ds = write_tiny_dataset(tmp_path / "ds", games=("alpha",))
    jobs = build_jobs(Dataset(ds), str(ds), None, ["noop", "crash"], budget_s=5)  # 3 predicates x 2
    store = ResultStore(tmp_path / "store")
    store.write_manifest({"sweep": "s1", "jobs": [j.as_row() for j in jobs]})
    noop = [j for j in jobs if j.learner == "noop"]
    crash = [j for j in jobs if j.learner == "crash"]
    store.write([_row(noop[0], "ok"), _row(noop[1], "timeout"), _row(crash[0], "error")])
    write_live_jobs(store, "s1", [crash[1].job_id])

    result = runner.invoke(app, ["status", "--store", str(tmp_path / "store"), "--json"])
    assert result.exit_code == 1, result.output  # a job ended error: exit 1 (README "Exit codes")
    counts = json.loads(result.stdout)["learners"]
    assert counts["noop"] == {"done": 2, "not_applicable": 0, "running": 0, "failed": 0, "remaining": 1}
    assert counts["crash"] == {"done": 0, "not_applicable": 0, "running": 1, "failed": 1, "remaining": 1}

    clear_live_jobs(store, "s1")
    counts = json.loads(runner.invoke(app, ["status", "--store", str(tmp_path / "store"), "--json"]).stdout)
    assert counts["learners"]["crash"]["running"] == 0 and counts["total"]["remaining"] == 3

    # resume planning on the same store: stored jobs are skipped; --retry-failed takes the error back
    todo, attempts = plan(jobs, store, SweepOptions("s1"))
    assert {j.job_id for j in todo} == {noop[2].job_id, crash[1].job_id, crash[2].job_id}
    todo, _ = plan(jobs, store, SweepOptions("s1", retry_failed=True))
    assert crash[0].job_id in {j.job_id for j in todo} and attempts[crash[0].job_id] == 1
    todo, _ = plan(jobs, store, SweepOptions("s1", retry_timeouts=True))
    assert noop[1].job_id in {j.job_id for j in todo} and crash[0].job_id not in {j.job_id for j in todo}
