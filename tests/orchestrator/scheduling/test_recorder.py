"""The recorder without Ray: rows buffered, counted and committed, fenced, to a real local store."""

from __future__ import annotations

import json
import time

import pytest

from orchestrator.scheduling.recorder import Recorder, failure_kind
from orchestrator.scheduling.sweep import Job
from orchestrator.scheduling.sweeptypes import SilentProgress, SweepOptions
from orchestrator.storage.claims import Claims
from orchestrator.storage.live import read_live_jobs
from orchestrator.storage.schema import result_row
from orchestrator.storage.store import ResultStore


def _job(n: int, learner: str = "noop") -> Job:
    return Job(f"job{n:03d}", "ds", "fp", "g1", "next", f"p{n}", learner, "{}", 0, 0, 1.0)


class Finished(SilentProgress):
    """A display that remembers which jobs it was told finished."""

    def __init__(self) -> None:
        self.jobs: list[str] = []

    def finished(self, job: Job, row: dict) -> None:
        self.jobs.append(job.job_id)


@pytest.fixture
def store(tmp_path) -> ResultStore:
    return ResultStore(tmp_path / "store")


def _recorder(store: ResultStore, lease_s: float = 30, **opts) -> tuple[Recorder, Finished]:
    progress = Finished()
    options = SweepOptions("s1", lease_s=lease_s, **opts)
    return Recorder(store, Claims(store, lease_s), options, progress), progress


def _claimed(recorder: Recorder, jobs: list[Job], attempt: int = 1) -> None:
    assert recorder.claims.claim([(j.job_id, attempt) for j in jobs]).won == {
        (j.job_id, attempt) for j in jobs
    }


def _ok(job: Job, **kw) -> dict:
    return dict(result_row(job.job_id, status="ok", learn_s=1.5, eval_s=0.5), **kw)


def test_rows_are_buffered_until_due_then_stored_complete_and_once(store):
    jobs = [_job(i) for i in range(3)]
    recorder, progress = _recorder(store, flush_rows=3, flush_seconds=3600)
    _claimed(recorder, jobs)
    assert recorder.record(jobs[0], _ok(jobs[0]), attempt=1) == 2.0  # its seconds of work
    assert recorder.record(jobs[0], _ok(jobs[0]), attempt=1) is None  # once per run
    recorder.record(jobs[1], _ok(jobs[1], extra={"note": "x"}), attempt=1, worker_failures=2)
    assert recorder.flush(lambda: []) == [] and store.files() == []  # 2 rows < flush_rows, not due
    recorder.record(jobs[2], result_row(jobs[2].job_id, status="error", error="boom"), attempt=1)
    assert recorder.flush(lambda: []) == [] and not recorder.buffer
    rows = {r["job_id"]: r for r in store.read().to_pylist()}
    assert set(rows) == {j.job_id for j in jobs} and {r["sweep"] for r in rows.values()} == {"s1"}
    assert json.loads(rows[jobs[1].job_id]["extra"]) == {"note": "x", "worker_failures": 2}
    assert rows[jobs[0].job_id]["game"] == "g1" and rows[jobs[0].job_id]["attempt"] == 1
    assert dict(recorder.statuses) == {"ok": 2, "error": 1} and recorder.total_job_seconds == 4.0
    assert [f.reason for f in recorder.failures] == ["boom"] and progress.jobs == [j.job_id for j in jobs]
    assert not recorder.claims.held  # the claims of stored rows are released
    recorder.claims.close()


def test_a_forced_flush_stores_everything_and_writes_the_live_jobs(store):
    job = _job(0)
    recorder, _ = _recorder(store, flush_rows=100, flush_seconds=3600)
    _claimed(recorder, [job])
    recorder.record(job, _ok(job), attempt=1)
    recorder.flush(lambda: ["job999"], force=True)
    assert len(store.read()) == 1 and read_live_jobs(store) == {"job999"}
    recorder.claims.close()


def test_a_forgotten_job_may_be_recorded_again_as_its_new_attempt(store):
    job = _job(0)
    recorder, _ = _recorder(store)
    recorder.record(job, _ok(job), attempt=1)
    recorder.forget(job.job_id)
    assert recorder.record(job, _ok(job), attempt=2) == 2.0
    assert [r["attempt"] for r in recorder.buffer] == [1, 2]


def test_rows_of_a_driver_paused_past_its_lease_are_dropped_not_stored(store, capsys):
    """docs/store.md, fencing: the driver that took the claim over alone may store the attempt."""
    jobs = [_job(0), _job(1, learner="crash")]
    recorder, _ = _recorder(store, lease_s=1.0, flush_seconds=3600)
    _claimed(recorder, jobs)
    recorder.record(jobs[0], _ok(jobs[0]), attempt=1)
    recorder.record(jobs[1], result_row(jobs[1].job_id, status="error", error="boom"), attempt=1)
    time.sleep(1.3)  # paused past the lease: another driver takes both claims over
    taker = Claims(store, lease_s=1.0)
    assert taker.claim([(j.job_id, 1) for j in jobs]).taken_over == {(j.job_id, 1) for j in jobs}
    dropped = recorder.flush(lambda: [], force=True)
    assert dropped == jobs and store.files() == [] and not recorder.buffer
    assert not recorder.statuses and not recorder.failures  # its counts are undone
    assert "dropped 2 result(s)" in capsys.readouterr().err
    taker.close()
    recorder.claims.close()


@pytest.mark.parametrize(
    ("status", "extra", "kind"),
    [
        ("oom", {}, "infra"),
        ("lost", {}, "infra"),
        ("error", {"failure": "input"}, "input"),
        ("error", {}, "learner"),
    ],
)
def test_failure_kinds(status, extra, kind):
    assert failure_kind(status, extra) == kind
