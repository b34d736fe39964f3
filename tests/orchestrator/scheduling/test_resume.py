"""Resume after the driver is SIGKILLed mid-sweep: the rerun finishes with every job stored once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from sweep_helpers import write_tiny_dataset

from orchestrator.storage.leases import LEASE_ENV

pytestmark = pytest.mark.ray

ORCH = [sys.executable, "-m", "orchestrator.cli"]


def _orch_run(dataset: Path, store: Path, sleep: float = 0.5, repeats: int = 3) -> list[str]:
    return [*ORCH, "run", "--all-games", "--learners", f"sleep{sleep},noop", "--repeats", str(repeats), "--budget", "10s",
            "--dataset", str(dataset), "--store", str(store), "--num-cpus", "2"]  # fmt: skip


def _raw_job_ids(store: Path) -> list[str]:
    files = sorted((store / "results").glob("*.parquet"))
    return [j for f in files for j in pq.read_table(f, columns=["job_id"])["job_id"].to_pylist()]


def test_sigkill_the_driver_then_rerun_stores_every_job_exactly_once(tmp_path):
    dataset = write_tiny_dataset(tmp_path / "ds")
    store = tmp_path / "store"
    # a short lease: the rerun takes the killed driver's claims over after it, not after 60 s
    env = {**os.environ, LEASE_ENV: "5"}
    driver = subprocess.Popen(_orch_run(dataset, store), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True, env=env)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not _raw_job_ids(store) and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert driver.poll() is None, "the sweep ended before any rows were written: nothing was interrupted"
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        partial = _raw_job_ids(store)
        planned = 3 * 3 * 2 * 3  # games x predicates x learners x repeats
        assert 0 < len(partial) < planned

        rerun = subprocess.run(
            _orch_run(dataset, store), capture_output=True, text=True, timeout=300, env=env
        )
        assert rerun.returncode == 0, rerun.stderr
        assert f"{len(set(partial))} already stored" in rerun.stdout
        ids = _raw_job_ids(store)
        assert len(set(ids)) == planned
        assert Counter(ids).most_common(1)[0][1] == 1, "a job was stored twice"
    finally:
        # the killed driver's own Ray processes share its session: stop exactly those
        try:
            os.killpg(driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_ctrl_c_stops_cleanly_and_keeps_what_finished(tmp_path):
    dataset = write_tiny_dataset(tmp_path / "ds")
    store = tmp_path / "store"
    # More and longer jobs than the SIGKILL test, so that rows arrive over time and Ctrl-C lands while
    # jobs remain, even on a loaded machine (54 sleeping jobs of 1 s on 2 CPUs take about 30 s).
    planned = 3 * 3 * 2 * 6  # games x predicates x learners x repeats
    driver = subprocess.Popen(_orch_run(dataset, store, sleep=1, repeats=6), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not _raw_job_ids(store) and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert driver.poll() is None, "the sweep ended before any rows were written"
        assert len(set(_raw_job_ids(store))) < planned, "every job had finished: nothing left to interrupt"
        os.kill(driver.pid, signal.SIGINT)
        out, err = driver.communicate(timeout=60)
        assert driver.returncode == 130, err
        assert "interrupted: rerun the same command to finish" in out
        ids = _raw_job_ids(store)
        finished = int(out.split(" job(s) finished")[0].rsplit("\n", 1)[-1])
        assert len(ids) == len(set(ids)) == finished > 0  # every finished job was written, once
        assert not list((store / "_live").glob("*.json"))  # the live file is cleared
    finally:
        try:
            os.killpg(driver.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
