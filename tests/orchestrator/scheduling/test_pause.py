"""A driver paused (SIGSTOP) past its lease while another takes its job over, then resumed
(SIGCONT): every job attempt is stored once, as a raw reader counts rows, and both drivers exit 0.

Both ways of issue 27: the taker already stored the job and released it when the sleeper wakes,
or the job is still running at the taker. On a local store and on moto's S3 server (127.0.0.1).
The paused driver is its own ``orch run`` process (its own Ray); the taker runs in this process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from s3_helpers import moto_s3
from sweep_helpers import write_tiny_dataset

from orchestrator.scheduling.scheduler import SweepOptions, SweepResult, run_sweep
from orchestrator.scheduling.sweep import build_jobs
from orchestrator.storage.store import ResultStore
from tasks.iggp import Dataset

pytestmark = [pytest.mark.faults, pytest.mark.ray]

LEASE_S = 2.0
LEARNER = "sleep3"  # long enough for the sleeper to wake while the taker still runs it
SENT_S = 1.0
"""Seconds between seeing the sleeper's claim file and pausing it. The file is written before the
sleeper lists the claims, checks the done markers and sends the job (on S3, several requests);
paused in between, it wakes to find the job stored and never runs it (seen under load), which is
right but not the path under test. Less than the job's 3 s, so it is paused while the job runs."""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_tiny_dataset(tmp_path_factory.mktemp("pause") / "ds", games=("alpha",))


def _claims(store: ResultStore) -> list[str]:
    infos = store.fs.get_file_info(pafs.FileSelector(f"{store.root}/_claims", allow_not_found=True))
    return [i.base_name for i in infos if i.type == pafs.FileType.File and not i.base_name.startswith(".")]


def _wait_for(what, timeout: float, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert proc is None or proc.poll() is None, "the driver ended before it claimed anything"
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _raw_count(store: ResultStore, uri: str) -> tuple[int, int]:
    """(rows, distinct (job_id, attempt)) with no dedup: DuckDB locally, pyarrow file by file on S3."""
    if store.local:
        duckdb = pytest.importorskip("duckdb")
        glob = f"{uri}/results/*.parquet"
        (counts,) = duckdb.sql(
            f"select count(*), count(distinct (job_id, attempt)) from read_parquet('{glob}')"
        ).fetchall()
        return counts
    rows = [r for f in store.files() for r in pq.read_table(f, filesystem=store.fs).to_pylist()]
    return len(rows), len(Counter((r["job_id"], r["attempt"]) for r in rows))


def _pause_and_take_over(dataset: Path, uri: str, way: str) -> None:
    jobs = build_jobs(Dataset(dataset), str(dataset), ["alpha"], [LEARNER], targets=["goal"], budget_s=20.0)
    store = ResultStore(uri)
    cmd = [sys.executable, "-m", "orchestrator.cli", "run", "--games", "alpha", "--targets", "goal",
           "--learners", LEARNER, "--budget", "20s", "--dataset", str(dataset), "--store", uri,
           "--num-cpus", "1", "--sweep", "sleeper"]  # fmt: skip
    env = {**os.environ, "ORCH_LEASE_S": str(LEASE_S)}
    sleeper = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)  # fmt: skip
    results: list[SweepResult] = []
    try:
        _wait_for(lambda: any("~g0" in n for n in _claims(store)), 90, sleeper)
        time.sleep(SENT_S)  # the claim file shows before the sleeper has decided and sent the job
        os.kill(sleeper.pid, signal.SIGSTOP)
        time.sleep(LEASE_S * 1.5)  # its lease runs out
        options = SweepOptions("taker", flush_seconds=0.3, lease_s=LEASE_S)
        taker = threading.Thread(target=lambda: results.append(run_sweep(jobs, ResultStore(uri), options)))
        taker.start()
        if way == "running":  # wake the sleeper as soon as the taker holds the job
            _wait_for(lambda: any("~g1" in n for n in _claims(store)), 60)
        else:  # wake it once the taker stored the job and released it
            taker.join(timeout=120)
        os.kill(sleeper.pid, signal.SIGCONT)
        out, _ = sleeper.communicate(timeout=120)
        taker.join(timeout=120)
    finally:
        try:
            os.killpg(sleeper.pid, signal.SIGCONT)
            os.killpg(sleeper.pid, signal.SIGKILL)  # the sleeper's own Ray, if anything is left
        except ProcessLookupError:
            pass
    assert sleeper.returncode == 0, out
    assert results and results[0].finished + results[0].skipped + results[0].elsewhere == len(jobs)
    assert _raw_count(store, uri) == (len(jobs), len(jobs)), out  # rows = jobs, each attempt once
    assert "dropped 1 result(s)" in out, out  # the sleeper says, in one line, that it lost the claim
    assert _claims(store) == []  # both ended: no claim is left behind, not even the sleeper's old one


@pytest.mark.parametrize("way", ["finished", "running"])
def test_a_paused_driver_never_stores_a_second_row_local(ray_2cpu, dataset, tmp_path, way):
    _pause_and_take_over(dataset, str(tmp_path / "store"), way)


@pytest.mark.parametrize("way", ["finished", "running"])
def test_a_paused_driver_never_stores_a_second_row_s3(ray_2cpu, dataset, way):
    with moto_s3() as uri:
        _pause_and_take_over(dataset, uri, way)


def test_drivers_whose_clocks_differ_by_less_than_the_lease_store_each_job_once(ray_2cpu, dataset, tmp_path):
    """One driver's clock runs half a lease ahead (``ORCH_CLOCK_SKEW_S``): the two split the sweep,
    neither takes a live claim from the other, and rows = jobs."""
    learners = ["sleep0.5", "noop"]
    jobs = build_jobs(Dataset(dataset), str(dataset), ["alpha"], learners, budget_s=20.0)
    uri = str(tmp_path / "store")
    cmd = [sys.executable, "-m", "orchestrator.cli", "run", "--games", "alpha", "--learners", ",".join(learners),
           "--budget", "20s", "--dataset", str(dataset), "--store", uri, "--num-cpus", "1", "--sweep", "ahead"]  # fmt: skip
    env = {**os.environ, "ORCH_LEASE_S": str(LEASE_S), "ORCH_CLOCK_SKEW_S": str(LEASE_S / 2)}
    ahead = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)  # fmt: skip
    try:
        _wait_for(lambda: any("~g" in n for n in _claims(ResultStore(uri))), 90, ahead)
        result = run_sweep(jobs, ResultStore(uri), SweepOptions("behind", flush_seconds=0.3, lease_s=LEASE_S))
        out, _ = ahead.communicate(timeout=120)
    finally:
        try:
            os.killpg(ahead.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert ahead.returncode == 0, out
    assert _raw_count(ResultStore(uri), uri) == (len(jobs), len(jobs)), out
    assert "dropped" not in out  # no live claim was taken over, so nothing had to be dropped
    assert result.finished + result.skipped + result.elsewhere == len(jobs)


def test_a_job_whose_driver_died_mid_commit_runs_again_as_the_next_attempt(ray_2cpu, dataset, tmp_path):
    """A driver marked a job as stored and died before writing its row (an orphan marker): the next
    driver fences that file out and runs the job as attempt 2; every job ends with one row."""
    from orchestrator.storage.claims import Claims

    jobs = build_jobs(Dataset(dataset), str(dataset), ["alpha"], ["noop"], budget_s=20.0)
    store = ResultStore(tmp_path / "store")
    dead = Claims(store, lease_s=0.5)
    orphan = (jobs[0].job_id, 1)
    dead.claim([orphan])
    assert dead.commit([orphan], store.new_part_name()).won == {orphan}  # ... and it dies here
    time.sleep(1.2)
    run_sweep(jobs, store, SweepOptions("next", flush_seconds=0.3, lease_s=0.5))
    rows = [r for f in store.files() for r in pq.read_table(f, filesystem=store.fs).to_pylist()]
    attempts = {r["job_id"]: r["attempt"] for r in rows}
    assert len(rows) == len(attempts) == len(jobs)
    assert attempts[orphan[0]] == 2 and {a for j, a in attempts.items() if j != orphan[0]} == {1}
