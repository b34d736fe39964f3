"""Fault injection: concurrent drivers (local and S3), killed drivers and workers, Ray's memory
monitor, a full disk, fuzzed inputs. After each, every job has exactly one final row and nothing
stored earlier is lost. Real Ray (2 CPUs, one session for the module where it can be shared), real
Parquet, moto's real S3 API on 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import psutil
import pyarrow.parquet as pq
import pytest
from s3_helpers import moto_s3
from sweep_helpers import write_tiny_dataset

from orchestrator.scheduling.scheduler import SweepOptions, SweepResult, run_sweep
from orchestrator.scheduling.sweep import build_jobs
from orchestrator.storage.store import ResultStore, StoreError
from tasks.iggp import Dataset

pytestmark = [pytest.mark.faults, pytest.mark.ray]

ORCH = [sys.executable, "-m", "orchestrator.cli"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_tiny_dataset(tmp_path_factory.mktemp("faults") / "ds")


def _jobs(dataset: Path, learners: list[str], budget_s: float = 20.0):
    return build_jobs(Dataset(dataset), str(dataset), None, learners, budget_s=budget_s)


def _rows(store: ResultStore) -> list[dict]:
    """Every row of every result file, without the store's dedup (what DuckDB or Polars would see)."""
    return [r for f in store.files() for r in pq.read_table(f, filesystem=store.fs).to_pylist()]


def _exactly_once(store: ResultStore, jobs) -> list[dict]:
    rows = _rows(store)
    counts = Counter((r["job_id"], r["attempt"]) for r in rows)
    assert counts and max(counts.values()) == 1, "a job attempt was stored twice"
    assert {j.job_id for j in jobs} == {r["job_id"] for r in rows}, "a job has no row"
    return rows


def _drivers(jobs, store_uri: str, n: int, **options) -> list[SweepResult]:
    """``n`` drivers at once on one store (threads sharing the module's Ray; each its own claims)."""
    results: list[SweepResult] = []
    errors: list[BaseException] = []

    def drive(k: int) -> None:
        try:
            results.append(run_sweep(jobs, ResultStore(store_uri), SweepOptions(f"d{k}", **options)))
        except BaseException as e:  # noqa: BLE001 - reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=drive, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    return results


@pytest.mark.parametrize("where", ["local", "s3"])
def test_concurrent_drivers_store_every_job_exactly_once(ray_2cpu, dataset, tmp_path, where):
    jobs = _jobs(dataset, ["noop", "sleep0.3"])  # 36 jobs, long enough for the drivers to overlap
    if where == "local":
        results = _drivers(jobs, str(tmp_path / "store"), 2, flush_seconds=0.3)
        store = ResultStore(tmp_path / "store")
    else:
        with moto_s3() as uri:
            results = _drivers(jobs, uri, 2, flush_seconds=0.3)
            store = ResultStore(uri)
            rows = _exactly_once(store, jobs)
    if where == "local":
        rows = _exactly_once(store, jobs)
    assert len(rows) == len(jobs) and {r["status"] for r in rows} == {"ok"}
    if where == "local":  # what docs/store.md promises a raw reader: rows = jobs
        duckdb, polars = pytest.importorskip("duckdb"), pytest.importorskip("polars")
        glob = str(tmp_path / "store" / "results" / "*.parquet")
        assert duckdb.sql(f"select count(*) from read_parquet('{glob}')").fetchall() == [(len(jobs),)]
        assert polars.read_parquet(glob).height == len(jobs)
    ran = [r.finished for r in results]
    assert sum(ran) == len(jobs)  # each job ran in exactly one of the drivers ...
    for r in results:  # ... and every driver accounts for every job: run, stored before, or by the other
        assert r.finished + r.skipped + r.elsewhere == len(jobs)


def test_a_sigkilled_driver_leaves_its_jobs_to_the_other(ray_2cpu, dataset, tmp_path):
    """Driver A (its own process and Ray) is SIGKILLed mid-sweep while driver B runs: B takes A's
    claims over once A's lease runs out and finishes the sweep; nothing is stored twice."""
    jobs = _jobs(dataset, ["sleep0.5", "noop"])
    store_dir = tmp_path / "store"
    cmd = [*ORCH, "run", "--all-games", "--learners", "sleep0.5,noop", "--budget", "20s", "--dataset",
           str(dataset), "--store", str(store_dir), "--num-cpus", "1", "--sweep", "a"]  # fmt: skip
    env = {**os.environ, "ORCH_LEASE_S": "3"}
    driver_a = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        claims = store_dir / "_claims"
        while driver_a.poll() is None and time.monotonic() < deadline:
            if claims.exists() and any(p.name.count("~") == 2 and "~g" in p.name for p in claims.iterdir()):
                break  # A holds claims (jobs out on its workers)
            time.sleep(0.1)
        assert driver_a.poll() is None, "driver A ended before it claimed anything"
        os.kill(driver_a.pid, signal.SIGKILL)
        driver_a.wait()
        (result,) = _drivers(jobs, str(store_dir), 1, flush_seconds=0.3, lease_s=3.0)
    finally:
        try:
            os.killpg(driver_a.pid, signal.SIGKILL)  # A's own Ray processes
        except ProcessLookupError:
            pass
    rows = _exactly_once(ResultStore(store_dir), jobs)
    assert len(rows) == len(jobs) and {r["status"] for r in rows} == {"ok"}
    assert result.finished + result.skipped + result.elsewhere == len(jobs)


def test_a_worker_sigkilled_from_outside_is_retried_and_nothing_else_changes(ray_2cpu, dataset, tmp_path):
    jobs = _jobs(dataset, ["sleep1", "noop"], budget_s=30.0)
    store = ResultStore(tmp_path / "store")
    killed: list[int] = []

    def kill_a_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            for p in psutil.Process().children(recursive=True):  # only this test's own Ray's workers
                try:
                    busy = any("JobRunner" in part for part in p.cmdline()) and p.children()
                except psutil.Error:
                    continue
                if busy:
                    os.kill(p.pid, signal.SIGKILL)  # a worker in the middle of a job
                    killed.append(p.pid)
                    return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_a_worker)
    killer.start()
    result = run_sweep(jobs, store, SweepOptions("w", max_retries=2, flush_seconds=0.3))
    killer.join()
    assert killed, "no busy worker was found to kill"
    rows = _exactly_once(store, jobs)
    assert len(rows) == len(jobs) and {r["status"] for r in rows} == {"ok"}
    assert result.lost_actors >= 1 and not result.failures


def test_the_memory_monitor_kills_a_worker_the_others_finish_and_a_rerun_completes(dataset, tmp_path):
    """Ray's memory monitor (a threshold just above the node's use now) kills the worker of a job
    holding 2 GiB: that job is retried, then stored as oom; the other jobs end ok; the run exits 1
    saying so; a plain re-run (no pressure) completes the sweep with one final row per job."""
    hog = 2048
    for _ in range(2):  # other users' memory moves on a shared machine: a second try if it fell
        vm = psutil.virtual_memory()
        if vm.available < 3 * (hog << 20):
            pytest.skip(f"needs {3 * hog} MiB of free memory, {vm.available >> 20} MiB available")
        used = (vm.total - vm.available) / vm.total
        threshold = min(0.95, used + (768 << 20) / vm.total)  # the hog passes it by ~1.25 GiB
        store_dir = tmp_path / f"store{_}"
        cmd = [*ORCH, "run", "--games", "alpha", "--learners", f"noop,hog{hog}", "--targets", "goal",
               "--budget", "60s", "--dataset", str(dataset), "--store", str(store_dir), "--num-cpus", "2",
               "--max-retries", "1", "--memory-estimate", "none"]  # fmt: skip
        env = {
            **os.environ,
            "RAY_memory_usage_threshold": f"{threshold:.3f}",
            "RAY_memory_monitor_refresh_ms": "100",
        }
        first = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        store = ResultStore(store_dir)
        by_learner = {r["learner"]: r for r in _rows(store)}
        if by_learner.get(f"hog{hog}", {}).get("status") != "ok":
            break
    assert by_learner["noop"]["status"] == "ok", first.stdout + first.stderr
    hog_row = by_learner[f"hog{hog}"]
    assert hog_row["status"] == "oom", (hog_row["status"], hog_row["error"], first.stdout, first.stderr)
    assert "memory" in hog_row["error"].lower()
    assert first.returncode == 1 and first.stdout.strip().splitlines()[-1].startswith("failed: 1 job(s)")
    assert f"oom: alpha/goal hog{hog}" in first.stdout

    again = subprocess.run(cmd[:-2], capture_output=True, text=True, timeout=300)  # no pressure now
    assert again.returncode == 0, again.stdout + again.stderr
    latest = store.latest(["learner", "status", "attempt"]).to_pylist()
    assert {r["learner"]: (r["status"], r["attempt"]) for r in latest} == {
        "noop": ("ok", 1),
        f"hog{hog}": ("ok", 2),
    }
    assert len(_rows(store)) == 3  # noop once; hog: the oom attempt, then the ok one


@pytest.fixture
def tiny_disk(tmp_path):
    """A 4 MiB tmpfs (needs root and mount(8)); skipped with the reason where it cannot be mounted."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount(8) here to make a small disk")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs ({done.stderr.strip() or 'not root'})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """Fill ``disk`` up, then give back ``leave`` bytes: room for a few small files, not a sweep."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    os.truncate(filler, max(0, filler.stat().st_size - leave))
    return filler


def test_a_full_disk_fails_cleanly_keeps_what_was_stored_and_a_rerun_completes(ray_2cpu, dataset, tiny_disk):
    store = ResultStore(tiny_disk / "store")
    first = _jobs(dataset, ["noop"])
    run_sweep(first, store, SweepOptions("before", flush_seconds=0.3))
    before = {(r["job_id"], r["attempt"]) for r in _exactly_once(store, first)}
    filler = _fill(tiny_disk, leave=48 << 10)
    later = _jobs(dataset, ["sleep0.2"])
    with pytest.raises(StoreError, match="No space left on device"):
        run_sweep(later, store, SweepOptions("full", flush_rows=2, flush_seconds=0.2))
    assert before <= {(r["job_id"], r["attempt"]) for r in _rows(store)}  # nothing stored earlier is lost
    assert not list((tiny_disk / "store" / "_tmp").glob("*"))  # no half-written file left behind
    filler.unlink()
    result = run_sweep(later, store, SweepOptions("after", flush_seconds=0.3))
    assert result.finished + result.skipped == len(later)
    rows = _exactly_once(store, first + later)
    assert {r["status"] for r in rows} == {"ok"}


def test_orch_run_on_bad_data_prints_each_failure_exits_1_and_never_writes_the_sweep_name(ray_2cpu, tmp_path):
    from typer.testing import CliRunner

    from orchestrator.cli import app

    dataset = write_tiny_dataset(tmp_path / "ds", games=("alpha", "beta"))
    bad = dataset / "data" / "test" / "beta_goal_test.dat"
    bad.write_text(bad.read_text().replace("goal(x, 100)", "goal(x, 100", 1))
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    store = tmp_path / "store"
    res = CliRunner().invoke(app, [
        "run", "--all-games", "--learners", "noop", "--budget", "20s", "--dataset", str(dataset),
        "--store", str(store), "--sweep", f"nightly aws_secret_access_key={secret}",
    ])  # fmt: skip
    assert res.exit_code == 1, res.output
    lines = res.output.strip().splitlines()
    assert lines[-1].startswith(
        "failed: 1 job(s) of the sweep ended 1 error (noop 1): fix the data, then rerun"
    )
    assert (
        f"error: beta/goal noop: bad input: {bad}:" in res.output
        and "malformed atom 'goal(x, 100'" in res.output
    )
    rows = _exactly_once(ResultStore(store), _jobs(dataset, ["noop"]))
    assert sorted(r["status"] for r in rows).count("error") == 1
    for path in store.rglob("*"):  # the secret is in no file name and no file the store wrote
        assert secret not in str(path)
        if path.suffix == ".parquet":  # compressed: look at the values
            assert secret not in str(pq.read_table(path).to_pylist()), path
        elif path.is_file():
            assert secret.encode() not in path.read_bytes(), path


def test_workers_reserve_memory_from_stored_peaks_else_the_estimate(ray_2cpu, tmp_path):
    from orchestrator.scheduling.scheduler import memory_reservation

    store = ResultStore(tmp_path / "store")
    store.write([{"job_id": "j1", "status": "ok", "learner": "noop", "peak_rss": 800 << 20},
                 {"job_id": "j2", "status": "ok", "learner": "noop", "peak_rss": 400 << 20}])  # fmt: skip
    default = SweepOptions("m", memory_estimate=256 << 20)
    assert memory_reservation(ray_2cpu, store, {"noop"}, default) == 1000 << 20  # 1.25 x the highest peak
    assert (
        memory_reservation(ray_2cpu, store, {"crash"}, default) == 256 << 20
    )  # no peak stored: the estimate
    assert memory_reservation(ray_2cpu, store, {"noop", "crash"}, default) == 1000 << 20  # the largest
    capped = SweepOptions("m", memory_estimate=256 << 20, memory_per_job=600 << 20)
    assert memory_reservation(ray_2cpu, store, {"noop"}, capped) == 600 << 20  # a job cannot use more
    assert memory_reservation(ray_2cpu, store, {"crash"}, SweepOptions("m", memory_estimate=None)) is None
    node = max(n["Resources"].get("memory", 0) for n in ray_2cpu.nodes() if n["Alive"])
    huge = SweepOptions("m", memory_estimate=int(node) * 4)
    assert memory_reservation(ray_2cpu, store, {"crash"}, huge) == int(node)  # some worker can always start
