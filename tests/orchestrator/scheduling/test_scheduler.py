"""A small sweep end to end on a real local Ray (2 CPUs) writing a real Parquet store."""

from __future__ import annotations

import itertools
import json
import time

import pyarrow.parquet as pq
import pytest
from sweep_helpers import write_tiny_dataset

from orchestrator.scheduling.raysession import local_ray
from orchestrator.scheduling.scheduler import SweepOptions, run_sweep
from orchestrator.scheduling.sweep import build_jobs
from orchestrator.storage.store import ResultStore
from tasks.iggp import Dataset

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def ray_2cpu():
    pytest.importorskip("ray")
    with local_ray(2) as ray:
        node = ray.nodes()[0]["NodeManagerAddress"]
        assert node == "127.0.0.1", f"the local Ray must listen on loopback only, not {node}"
        yield ray


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_tiny_dataset(tmp_path_factory.mktemp("sched") / "ds")


def _jobs(dataset, learners, games=None, budget_s=1.0, only=None):
    jobs = build_jobs(Dataset(dataset), str(dataset), games, learners, budget_s=budget_s)
    return [j for j in jobs if only is None or (j.learner not in only or j.predicate in only[j.learner])]


def _raw_rows(store_dir):
    """Every row in every Parquet file, without the store's dedup: exactly-once is checked on this."""
    files = sorted((store_dir / "results").glob("*.parquet"))
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def test_sweep_end_to_end_with_failures_resume_and_retry(ray_2cpu, dataset, tmp_path):
    learners = ["noop", "crash", "stuck", "die"]
    jobs = _jobs(dataset, learners, only={"stuck": {"next_p"}, "die": {"goal"}})
    # filling 300 MiB of resident memory can take over a second on a loaded machine
    jobs += _jobs(dataset, ["oom"], budget_s=20.0, only={"oom": {"goal"}})
    store = ResultStore(tmp_path / "store")
    opts = SweepOptions("t1", max_retries=1, memory_per_job=300 << 20, flush_seconds=0.5)
    result = run_sweep(jobs, store, opts)
    assert not result.interrupted and result.finished == len(jobs)
    rows = {r["job_id"]: r for r in _raw_rows(tmp_path / "store")}
    assert len(_raw_rows(tmp_path / "store")) == len(jobs) == len(rows)
    by = {}
    for job in jobs:
        by.setdefault(job.learner, []).append(rows[job.job_id])
    assert {r["status"] for r in by["noop"]} == {"ok"}
    assert all(r["test_fn"] > 0 and r["node"] and r["attempt"] == 1 for r in by["noop"])
    # jobs run at the normal priority, not Ray's default nice 15 (orchestrator/scheduling/raysession.py)
    assert all("nice" not in json.loads(r["extra"]) for r in by["noop"])
    assert {r["status"] for r in by["crash"]} == {"error"}
    assert all("Traceback" in r["error"] for r in by["crash"])
    for r in by["stuck"]:  # the budget is enforced from outside; the reported model is scored
        assert r["status"] == "timeout" and 1.0 <= r["learn_s"] < 3.0 and r["test_tn"] is not None
    for r in by["die"]:  # a job process SIGKILLed: retried max_retries times, then recorded
        assert r["status"] == "lost" and json.loads(r["extra"])["worker_failures"] == 2
    assert {r["status"] for r in by["oom"]} == {"oom"}
    infra = [j for j in jobs if j.learner in ("die", "oom")]
    assert result.infra_failures == len(infra) and {f.kind for f in result.failures} == {"infra", "learner"}

    # a plain re-run re-runs the infrastructure failures (oom, lost), not the learner's own errors
    again = run_sweep(jobs, store, opts)
    assert again.skipped == len(jobs) - len(infra) and again.finished == len(infra)
    assert len(_raw_rows(tmp_path / "store")) == len(jobs) + len(infra)

    # --retry-failed also reruns errors (not ok, not timeouts), each as a new attempt
    retry = run_sweep(
        jobs, store, SweepOptions("t1", max_retries=0, memory_per_job=300 << 20, retry_failed=True)
    )
    crashed = [j for j in jobs if j.learner == "crash"]
    assert retry.finished == len(crashed) + len(infra)
    latest = store.latest(["job_id", "attempt"]).to_pylist()
    attempts = {r["job_id"]: r["attempt"] for r in latest}
    assert all(attempts[j.job_id] == 2 for j in crashed)
    assert all(attempts[j.job_id] == 3 for j in infra)
    assert all(attempts[j.job_id] == 1 for j in jobs if j.learner in ("noop", "stuck"))


def test_a_sigkilled_ray_worker_is_retried_and_nothing_else_is_affected(ray_2cpu, dataset, tmp_path):
    jobs = _jobs(dataset, ["noop", "dieworker"], games=["alpha", "beta"], only={"dieworker": {"goal"}})
    store = ResultStore(tmp_path / "store")
    result = run_sweep(jobs, store, SweepOptions("t2", max_retries=1, flush_seconds=0.5))
    rows = {r["job_id"]: r for r in _raw_rows(tmp_path / "store")}
    assert len(rows) == len(jobs) == len(_raw_rows(tmp_path / "store"))
    for job in jobs:
        row = rows[job.job_id]
        if job.learner == "noop":
            assert row["status"] == "ok"
        else:  # each attempt took its Ray worker down; 1 retry, then recorded
            assert row["status"] == "lost" and "worker died" in row["error"]
    assert result.lost_actors >= 2 * 2


def test_generation_fans_out_and_a_broken_gdl_file_fails_only_itself(ray_2cpu, tmp_path):
    from orchestrator.scheduling.generation import generate_games
    from tasks import bundled

    broken = tmp_path / "broken.txt"
    broken.write_text("(role red)\n(<= (legal red (move ?x)) (true (cell ?x))\n")  # unbalanced parens
    (tmp_path / "broken.typ").write_text("red: role\n")
    good = bundled.games()[:2]
    specs = [(bundled.game_file(g), bundled.types_file(g)) for g in good] + [
        (broken, tmp_path / "broken.typ")
    ]
    out = tmp_path / "gen"
    results = generate_games(specs, str(out), episodes=5, steps=10, seed=1, timeout_s=120)
    assert [r["game"] for r in results] == [*good, "broken"]
    assert [r["status"] for r in results[:2]] == ["ok", "ok"]
    assert results[2]["status"] == "error" and "broken" in results[2]["error"]
    for g in good:
        assert (out / "data" / "train" / f"{g}_next_train.dat").exists()


def test_actors_beyond_the_cluster_stay_pending_and_get_no_jobs(ray_2cpu, dataset, tmp_path):
    # max_actors=4 on 2 CPUs: two actors can never start (on an autoscaler they are the demand
    # that adds nodes); the sweep must finish on the two that did, without waiting for the others.
    jobs = _jobs(dataset, ["noop"])
    store = ResultStore(tmp_path / "store")
    result = run_sweep(jobs, store, SweepOptions("t4", max_actors=4))
    assert result.finished == len(jobs) and result.statuses == {"ok": len(jobs)}
    deadline = time.monotonic() + 30  # every actor, pending or not, is released (asynchronously)
    while ray_2cpu.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray_2cpu.available_resources().get("CPU", 0) == 2


def test_a_broken_data_file_fails_only_the_jobs_that_need_it(ray_2cpu, tmp_path):
    dataset = write_tiny_dataset(tmp_path / "ds")
    jobs = _jobs(dataset, ["noop"])
    broken = dataset / "data" / "train" / "gamma_goal_train.dat"
    broken.write_text(broken.read_text().rsplit("---", 2)[0])  # truncated mid-file
    store = ResultStore(tmp_path / "store")
    result = run_sweep(jobs, store, SweepOptions("t5"))
    rows = {r["job_id"]: r for r in store.read().to_pylist()}
    for job in jobs:
        row = rows[job.job_id]
        if (job.game, job.target) == ("gamma", "goal"):
            assert row["status"] == "error" and row["error"].startswith("bad input: ")
            assert "gamma_goal_train.dat" in row["error"].splitlines()[0] and "truncated" in row["error"]
            assert json.loads(row["extra"])["failure"] == "input"
        else:
            assert row["status"] == "ok"
    assert result.input_failures == 1 and "gamma_goal_train.dat: truncated" in result.failures[0].reason


def test_a_learner_that_does_not_apply_is_recorded_not_applicable_not_as_an_error(
    ray_2cpu, dataset, tmp_path
):
    """gnn-gat-egat on an IGGP game: its applies() hook says why; nothing is trained, nothing fails."""
    pytest.importorskip("torch")
    jobs = _jobs(dataset, ["noop", "gnn-gat-egat"])
    store = ResultStore(tmp_path / "store")
    result = run_sweep(jobs, store, SweepOptions("na", flush_seconds=0.5))
    gnn = [j for j in jobs if j.learner == "gnn-gat-egat"]
    assert result.statuses == {"ok": len(jobs) - len(gnn), "not_applicable": len(gnn)}
    assert result.not_applicable["gnn-gat-egat"]["jobs"] == len(gnn)
    assert "GraphLog tasks only" in result.not_applicable["gnn-gat-egat"]["reason"]
    rows = [r for r in _raw_rows(tmp_path / "store") if r["learner"] == "gnn-gat-egat"]
    assert {r["status"] for r in rows} == {"not_applicable"} and all(r["learn_s"] is None for r in rows)
    assert run_sweep(jobs, store, SweepOptions("na", retry_failed=True)).finished == 0  # settled
    from orchestrator.analysis.report import task_scores
    from orchestrator.cli.run import status_table

    counts = status_table(store)["gnn-gat-egat"]  # orch status: its own column, not "done"
    assert counts["not_applicable"] == len(gnn) and counts["done"] == counts["failed"] == 0

    scores, _ = task_scores(store)
    assert {s.learner for s in scores} == {"noop"}  # not counted as incomplete tasks of gnn-gat-egat


class _Watch:
    """A progress sink that records what the display would show: started jobs and running counts."""

    def __init__(self) -> None:
        self.sent, self.starts, self.phases, self.most_running = [], {}, [], 0
        self.batches: list[list[str]] = []
        self.running_now: set[str] = set()

    def begin(self, total, skipped):
        pass

    def starting(self, text):
        self.phases.append(text)

    def running(self, jobs):
        self.sent += [j.job_id for j in jobs]
        self.batches.append([j.job_id for j in jobs])

    def started(self, job, since):
        self.starts[job.job_id] = since
        self.running_now.add(job.job_id)
        self.most_running = max(self.most_running, len(self.running_now))

    def ended(self, job):
        self.running_now.discard(job.job_id)

    def finished(self, job, row):
        self.running_now.discard(job.job_id)

    def tick(self):
        pass

    def end(self, result):
        pass


def test_jobs_waiting_in_a_batch_are_queued_not_running(ray_2cpu, dataset, tmp_path):
    """Batches of whole tasks (a next task has two 2 s jobs) on 2 slots: at most 2 run at once,
    each job is seen starting on its worker, and a job's start is when the one before it in its
    batch was done, not when the batch was sent."""
    jobs = _jobs(dataset, ["sleep2"], games=["alpha", "beta"], budget_s=10.0)  # 2 games x 3 predicates
    watch = _Watch()
    opts = SweepOptions("queued", batch_seconds=100.0, flush_seconds=0.2)  # whole tasks per batch
    result = run_sweep(jobs, ResultStore(tmp_path / "store"), opts, watch)
    assert result.statuses == {"ok": 6}
    assert any("Ray" in p for p in watch.phases) and any("workers" in p for p in watch.phases)
    assert len(watch.sent) == 6 and watch.most_running <= 2
    assert len(watch.starts) == 6  # the poll (every 0.5 s) sees every 2 s job start
    rows = {r["job_id"]: r for r in _raw_rows(tmp_path / "store")}
    for job_id, since in watch.starts.items():  # the worker's own start, within the poll's lag
        assert abs(since - rows[job_id]["started"].timestamp()) < 0.5
    # Which task goes to which slot first depends on which actor is up first (load): the claim
    # holds per batch, whatever the order of the batches.
    several = [b for b in watch.batches if len(b) > 1]
    assert several, watch.batches  # a next task's two jobs go out together
    for batch in several:
        starts = [rows[job_id]["started"].timestamp() for job_id in batch]
        assert all(b - a > 1.9 for a, b in itertools.pairwise(starts)), (batch, starts)


def test_bench_iggp_plans_no_job_for_a_task_it_leaves_out(ray_2cpu, tmp_path):
    """A task without a train split (the published ttcc4 legal) is named and left out, never run as
    errors; the results file has every other task."""
    from typer.testing import CliRunner

    from orchestrator.analysis.results import read_rows
    from orchestrator.cli import app

    ds = write_tiny_dataset(tmp_path / "ds", ("alpha", "beta"))
    (ds / "data" / "train" / "beta_goal_train.dat").unlink()
    store, out = tmp_path / "s", tmp_path / "out"
    args = ["bench", "iggp", "--dataset", str(ds), "--learners", "true", "--budget", "10s"]
    res = CliRunner().invoke(app, [*args, "--store", str(store), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "beta/goal: no train split in the dataset (left out)" in res.output
    rows = _raw_rows(store)
    assert {(r["game"], r["target"]) for r in rows} == {
        ("alpha", "next"),
        ("alpha", "goal"),
        ("beta", "next"),
    }
    assert {r["status"] for r in rows} == {"ok"}
    assert sorted((r["game"], r["target"]) for r in read_rows(out / "true_10s.csv")) == [
        ("alpha", "goal"), ("alpha", "next"), ("beta", "next"),
    ]  # fmt: skip


def test_bench_exports_a_sweep_whose_jobs_failed_and_exits_1(ray_2cpu, tmp_path):
    """A job that ends error is a result: the bench still writes every results file (the predicate
    counted in errored_predicates and scored as predicting false) and exits 1, as `orch run` does."""
    from typer.testing import CliRunner

    from orchestrator.analysis.results import read_rows
    from orchestrator.cli import app

    ds = write_tiny_dataset(tmp_path / "ds", ("alpha",))
    store, out = tmp_path / "s", tmp_path / "out"
    args = ["bench", "iggp", "--dataset", str(ds), "--learners", "true,crash", "--budget", "10s"]
    res = CliRunner().invoke(app, [*args, "--store", str(store), "--out", str(out)])
    assert res.exit_code == 1, res.output
    assert "exported with the failed jobs' predicates counted in errored_predicates" in res.output
    crash = read_rows(out / "crash_10s.csv")
    assert sorted((r["game"], r["target"]) for r in crash) == [("alpha", "goal"), ("alpha", "next")]
    assert all(int(r["errored_predicates"]) == int(r["predicates"]) for r in crash)
    assert all(float(r["balanced_accuracy"]) == 0.5 for r in crash)  # predicting false everywhere
    assert len(read_rows(out / "true_10s.csv")) == 2


def test_a_bench_of_some_games_does_not_drop_the_files_other_games(ray_2cpu, tmp_path):
    """`orch bench iggp --games beta` over a file of alpha and beta: refused before it runs
    anything unless --merge (alpha's rows kept, beta's replaced) or --replace (only beta's)."""
    from typer.testing import CliRunner

    from orchestrator.analysis.results import read_rows
    from orchestrator.cli import app

    ds = write_tiny_dataset(tmp_path / "ds", ("alpha", "beta"))
    store, out = tmp_path / "s", tmp_path / "out"
    common = [
        "--dataset",
        str(ds),
        "--learners",
        "true",
        "--budget",
        "10s",
        "--store",
        str(store),
        "--out",
        str(out),
    ]
    runner = CliRunner()
    assert runner.invoke(app, ["bench", "iggp", *common]).exit_code == 0
    path = out / "true_10s.csv"
    before, jobs = path.read_text(), len(_raw_rows(store))
    res = runner.invoke(app, ["bench", "iggp", *common, "--games", "beta"])
    assert res.exit_code == 2 and "--merge keeps them" in res.output and "nothing was run" in res.output
    assert path.read_text() == before and len(_raw_rows(store)) == jobs
    export = [
        "bench",
        "export",
        "--store",
        str(store),
        "--dataset",
        str(ds),
        "--learners",
        "true",
        "--out",
        str(out),
    ]
    assert runner.invoke(app, [*export, "--games", "beta", "--merge", "--replace"]).exit_code == 2
    res = runner.invoke(app, [*export, "--games", "beta", "--merge"])
    assert res.exit_code == 0, res.output
    assert sorted({r["game"] for r in read_rows(path)}) == ["alpha", "beta"]
    assert runner.invoke(app, [*export, "--games", "beta", "--replace"]).exit_code == 0
    assert {r["game"] for r in read_rows(path)} == {"beta"}
