"""GPU jobs start in spawned children, and the processes that start them never initialise CUDA (issue 26).

On a CPU machine the same path runs (GPU learners always spawn), so CI checks the plumbing: GNN jobs
of ``orch run`` (per-predicate jobs on a ``graphlog:`` dataset) and of ``orch graphlog sweep`` run in
spawned children, end ``ok``, and leave CUDA uninitialised in the runner and in the driver. Tiny on
purpose (20 training graphs, dim 8, one epoch). The ``gpu`` tests run the same on a real GPU.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torch_geometric")

from orchestrator.graphlog.jobs import SweepSpec, plan_jobs  # noqa: E402
from orchestrator.graphlog.runner import GraphLogRunner  # noqa: E402
from orchestrator.scheduling.sweep import build_jobs  # noqa: E402
from orchestrator.scheduling.worker import JobLimits, JobRunner, start_method_for  # noqa: E402
from tasks.graphlog.generator import GeneratorConfig, generate_suite  # noqa: E402
from tasks.graphlog.rules import generate_rules  # noqa: E402
from tasks.graphlog.suite_files import write_suite  # noqa: E402
from tasks.sources import open_source  # noqa: E402

TINY = GeneratorConfig(n_train=20, n_valid=8, n_test=8, world_nodes=100)
GNN = "gnn-param-rgcn-d8-e1"


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("spawn") / "suite"
    write_suite(root, generate_suite(TINY, worlds=[0, 1]), generate_rules(), TINY)
    return root


def _run_jobs(suite, learners: list[str], predicates: int = 2) -> list:
    dataset = f"graphlog:{suite}"
    jobs = build_jobs(open_source(dataset), dataset, ["rule_0"], learners, budget_s=120.0)
    keep = sorted({j.predicate for j in jobs})[:predicates]
    return [j for j in jobs if j.predicate in keep]


def test_gpu_learners_spawn_and_the_others_fork():
    assert start_method_for(GNN) == start_method_for("gnn-iggp") == "spawn"
    assert start_method_for("knn5") == start_method_for("ilasp") == start_method_for("nope") == "fork"


def test_orch_run_gnn_jobs_run_in_spawned_children_and_the_runner_keeps_cuda_untouched(suite):
    jobs = _run_jobs(suite, [GNN, "knn5"])
    runner = JobRunner(JobLimits())
    rows = runner.run(jobs)
    assert [r["job_id"] for r in rows] == [j.job_id for j in jobs]  # in order, though grouped by method
    by_learner = {}
    for job, row in zip(jobs, rows, strict=True):
        assert row["status"] == "ok", row["error"]
        assert row["test_tp"] is not None and row.get("peak_gpu") is None  # scored; no GPU here
        by_learner.setdefault(job.learner, []).append(row["extra"].get("start_method", "fork"))
        # where the job ran, as its child saw it: a GPU learner's row says so, a CPU learner's does not
        device = row["extra"].get("device")
        if job.learner != GNN:
            assert device is None
        elif torch.cuda.is_available():
            assert device.startswith("cuda ("), device
        else:
            assert device == "cpu"
    assert by_learner == {GNN: ["spawn", "spawn"], "knn5": ["fork", "fork"]}
    assert runner.info()["cuda_initialised"] is False
    assert not torch.cuda.is_initialized()


def test_graphlog_sweep_jobs_run_in_spawned_children(suite):
    spec = SweepSpec(
        str(suite), ("supervised",), ("param-rgcn",), worlds=("rule_0", "rule_1"), epochs=1, dim=8
    )
    runner = GraphLogRunner(JobLimits())
    rows = runner.run(plan_jobs(spec))
    assert [r["status"] for r in rows] == ["ok", "ok"], [r["error"] for r in rows]
    for row in rows:
        assert row["extra"]["start_method"] == "spawn"
        assert row["extra"]["device"] == "cpu" or row["extra"]["device"].startswith("cuda")
    assert runner.info()["cuda_initialised"] is False
    assert not torch.cuda.is_initialized()


def test_orch_learn_fits_and_scores_every_predicate_of_a_gpu_learner_in_children(tmp_path):
    """``orch learn`` on a two-predicate target: both fitted and scored in spawned children."""
    import json

    from sweep_helpers import write_tiny_dataset
    from typer.testing import CliRunner

    from orchestrator.cli import app

    dataset = write_tiny_dataset(tmp_path / "ds", games=("alpha",))
    args = [
        "learn",
        "-d",
        str(dataset),
        "-g",
        "alpha",
        "-t",
        "next",
        "-l",
        "gnn-iggp-d8-e1",
        "-b",
        "60s",
        "--json",
    ]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["status"] == "ok" and sorted(doc["learned"]) == ["next_p", "next_q"]
    assert set(doc["splits"]["test"]["predicates"]) == {"next_p", "next_q"}
    assert not torch.cuda.is_initialized()


@pytest.mark.ray
def test_a_ray_worker_running_gnn_jobs_never_initialises_cuda(suite):
    from orchestrator.scheduling.raysession import local_ray

    jobs = _run_jobs(suite, [GNN], predicates=1)
    with local_ray(1) as ray:
        actor = ray.remote(JobRunner).options(max_concurrency=2).remote(JobLimits())
        rows = ray.get(actor.run.remote(jobs))
        info = ray.get(actor.info.remote())
    assert [r["status"] for r in rows] == ["ok"], rows[0]["error"]
    assert rows[0]["extra"]["start_method"] == "spawn"
    assert info["cuda_initialised"] is False
    assert not torch.cuda.is_initialized()


# --- on a GPU -------------------------------------------------------------------------------------------


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_a_gpu_four_sweep_jobs_in_one_worker_all_end_ok(suite):
    """Issue 26: 3 of 4 jobs crashed with ``CUDA error: initialization error`` in forked children."""
    spec = SweepSpec(str(suite), ("supervised",), ("param-rgcn", "gat-egat"), worlds=("rule_0", "rule_1"),
                     epochs=2, dim=8)  # fmt: skip
    runner = GraphLogRunner(JobLimits())
    rows = runner.run(plan_jobs(spec))
    assert len(rows) == 4
    assert [r["status"] for r in rows] == ["ok"] * 4, [r["error"] for r in rows]
    assert all(r["extra"]["device"].startswith("cuda") for r in rows)
    assert all((r.get("peak_gpu") or 0) > 0 for r in rows)
    assert runner.info()["cuda_initialised"] is False
    assert not torch.cuda.is_initialized()
