"""`orch graphlog sweep` / `results` end to end: a real local Ray (2 CPUs), a tiny suite, a real store.

Tiny on purpose (20 training graphs per world, dim 8, one epoch): what is checked is the plumbing
(jobs, ids, resume, rerun, failure statuses, rows, summaries), not learning.
"""

from __future__ import annotations

import json
import re
import shutil
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from store_rows import T0
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("ray")

from orchestrator.analysis.anchor import read_anchor  # noqa: E402
from orchestrator.analysis.htmlreport import write_html  # noqa: E402
from orchestrator.analysis.report import task_scores  # noqa: E402
from orchestrator.cli import app  # noqa: E402
from orchestrator.graphlog.jobs import (  # noqa: E402
    DETAIL_COLUMNS,
    LEGACY_DIR,
    SETUPS,
    GraphLogJob,
    SweepSpec,
    legacy_job_id,
    plan_jobs,
    planned_ids,
    stored_rows,
)
from orchestrator.graphlog.runner import run_graphlog_sweep  # noqa: E402
from orchestrator.scheduling.sweep import SweepError  # noqa: E402
from orchestrator.storage.schema import SCHEMA_VERSION, result_row  # noqa: E402
from orchestrator.storage.store import ResultStore  # noqa: E402
from tasks.graphlog.generator import GeneratorConfig, generate_suite  # noqa: E402
from tasks.graphlog.rules import generate_rules  # noqa: E402
from tasks.graphlog.suite_files import write_suite  # noqa: E402

pytestmark = pytest.mark.ray

TINY = GeneratorConfig(n_train=20, n_valid=8, n_test=8, world_nodes=100)
FAST = ["--models", "param-rgcn", "--epochs", "1", "--dim", "8", "--json"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("gls") / "suite"
    write_suite(root, generate_suite(TINY, worlds=[0, 1]), generate_rules(), TINY)
    return root


def _sweep(*args: str) -> dict:
    res = CliRunner().invoke(app, ["graphlog", "sweep", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def _raw_rows(store) -> list[dict]:
    """Every result row of every file, without the latest-per-job view: exactly-once is checked on this."""
    return [r for f in sorted((store / "results").glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_sweep_rows_resume_rerun_and_results(ray_2cpu, suite, tmp_path):
    store = tmp_path / "store"
    args = [str(suite), "--setups", "supervised,continual", "--seeds", "0,1", "--worlds", "rule_0,rule_1",
            "--store", str(store), *FAST]  # fmt: skip
    first = _sweep(*args)
    # supervised: 2 seeds x 2 worlds = 4 jobs of 1 row; continual: 2 jobs of 1 + 2 rows (after each world)
    assert first["sweep"]["planned"] == 6 and first["sweep"]["skipped"] == 0
    assert first["sweep"]["statuses"] == {"ok": 6}
    rows = first["rows"]
    assert len(rows) == 10 and len(_raw_rows(store)) == 6  # one result row per job, its worlds' rows inside
    raw = _raw_rows(store)
    assert {r["target"] for r in raw} == {"graphlog-supervised", "graphlog-continual"}
    assert {r["learner"] for r in raw} == {"gnn-param-rgcn"} and all(
        r["schema_version"] == SCHEMA_VERSION for r in raw
    )
    assert all(r["program"] is None and "param-rgcn" in r["description"] for r in raw)
    # one scheduler: the sweep is a manifest like orch run's, and orch status / orch report read the store
    status = json.loads(CliRunner().invoke(app, ["status", "--store", str(store), "--json"]).stdout)
    assert status["learners"]["gnn-param-rgcn"]["done"] == 6
    assert task_scores(ResultStore(store))[0] == []  # worlds, not IGGP-style tasks: not in orch report
    sup = [r for r in rows if r["setup"] == "supervised"]
    assert sorted((r["seed"], r["world"]) for r in sup) == [
        (0, "rule_0"),
        (0, "rule_1"),
        (1, "rule_0"),
        (1, "rule_1"),
    ]
    assert all(
        r["device"] == "cpu" and r["test_acc"] is not None and json.loads(r["loss_curve"]) for r in sup
    )
    cont = [r for r in rows if r["setup"] == "continual"]
    assert sorted((r["seed"], r["step"], r["world"]) for r in cont) == [
        (s, step, w) for s in (0, 1) for step, w in ((0, "rule_0"), (1, "rule_0"), (1, "rule_1"))
    ]
    assert all(r["worlds"] == "rule_0,rule_1" and len(json.loads(r["forgetting_curve"])) == 2 for r in cont)
    table = {(t["setup"], t["k"]): t for t in first["summary"]["table"]}
    assert table[("supervised", None)]["seeds"] == table[("continual", None)]["seeds"] == 2
    assert table[("supervised", None)]["jobs"] == {"ok": 4}
    (curve,) = first["summary"]["forgetting"]
    assert [s["world"] for s in curve["steps"]] == ["rule_0", "rule_1"] and curve["steps"][0][
        "past_mean_acc"
    ] is None

    again = _sweep(*args)  # resume: everything is stored, nothing runs, nothing is added
    assert again["sweep"]["skipped"] == 6 and again["sweep"]["statuses"] == {}
    assert len(_raw_rows(store)) == 6 and again["summary"] == first["summary"]

    rerun = _sweep(*args, "--rerun")  # a new attempt per job; every read keeps each job's latest
    assert rerun["sweep"]["statuses"] == {"ok": 6} and len(_raw_rows(store)) == 12
    assert sorted(r["attempt"] for r in _raw_rows(store)) == [1] * 6 + [2] * 6
    assert len(rerun["rows"]) == 10
    assert min(r["finished"] for r in rerun["rows"]) > max(r["finished"] for r in rows)

    res = CliRunner().invoke(app, ["graphlog", "results", "--store", str(store), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["summary"] == rerun["summary"]
    shown = CliRunner().invoke(app, ["graphlog", "results", "--store", str(store)])
    assert "GraphLog sweep" in shown.stdout and "forgetting curve" in shown.stdout

    page = write_html(ResultStore(store), tmp_path / "report.html").read_text()
    assert "GraphLog sweeps" in page and "graphlog curves" in page
    assert "No published figures" in page and "published:" not in page  # never the paper's own worlds' mean
    # a per-world anchor shows beside the supervised row only when it has every world the row covers
    full, partial = tmp_path / "paper.csv", tmp_path / "partial.csv"
    full.write_text("world,model,test_accuracy\nrule_0,param-rgcn,0.125\nrule_1,param-rgcn,0.625\n")
    partial.write_text("world,model,test_accuracy\nrule_0,param-rgcn,0.25\n")
    anchors = [read_anchor(full), read_anchor(partial)]
    page = write_html(ResultStore(store), tmp_path / "report.html", anchors=anchors).read_text()
    assert str(full) in page
    table = page[page.index("GraphLog sweeps") :]
    header = re.findall(r"<th>(.*?)</th>", table[: table.index("</tr>")])
    cells = {r[0]: r for r in (re.findall(r"<td>(.*?)</td>", row) for row in table.split("<tr>")[2:4])}
    sup = dict(zip(header, cells["supervised"], strict=True))
    assert sup["published: paper"] == "0.375" and sup["published: partial"] == ""  # rule_1 missing: no figure
    assert dict(zip(header, cells["continual"], strict=True))["published: paper"] == ""
    assert (tmp_path / "report_figures" / "graphlog_curves.png").stat().st_size > 0


def test_failures_are_stored_per_job(ray_2cpu, suite, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(suite, broken)
    graphs = broken / "graphs" / "rule_1.parquet"
    graphs.write_bytes(graphs.read_bytes()[:100])  # unreadable in the worker: a real error
    store = tmp_path / "store"
    out = _sweep(str(broken), "--setups", "supervised", "--worlds", "rule_0,rule_1", "--budget", "0.000001",
                 "--store", str(store), *FAST)  # fmt: skip
    assert out["sweep"]["statuses"] == {"timeout": 1, "error": 1}
    by_world = {r["world"]: r for r in out["rows"]}
    timeout, error = by_world["rule_0"], by_world["rule_1"]
    assert timeout["status"] == "timeout" and "budget" in timeout["error"]
    assert timeout["test_acc"] is not None and timeout["epochs_run"] == 0 and timeout["valid_acc"] is None
    assert error["status"] == "error" and error["job_id"] in error["error"] and "rule_1" in error["error"]
    assert error["test_acc"] is None
    assert {f["status"] for f in out["summary"]["failures"]} == {"error"}
    assert len(_raw_rows(store)) == 2


def test_budgets_are_hard(ray_2cpu, suite, tmp_path):
    """A job still running at budget + scoring allowance is killed: timeout, with what it reported."""
    store = ResultStore(tmp_path / "store")
    spec = SweepSpec(str(suite), ("continual",), ("param-rgcn",), worlds=("rule_0", "rule_1"), epochs=10_000,
                     dim=8, budget_s=0.5)  # fmt: skip
    t0 = time.monotonic()
    jobs, result = run_graphlog_sweep(spec, store, eval_timeout_s=0.5, num_cpus=1)
    took = time.monotonic() - t0
    assert result.statuses == {"timeout": 1}
    [row] = store.latest().to_pylist()
    assert "killed at the hard deadline" in row["error"] and row["learn_s"] < 5, row
    assert took < 60  # 10,000 epochs per world would take hours; the kill came at ~1 s (plus Ray start)
    (only,) = stored_rows(store)  # nothing was scored before the kill: one row with the status
    assert only["status"] == "timeout" and only["test_acc"] is None


def test_rows_of_stores_before_version_2_still_read_and_count_as_done(suite, tmp_path):
    """No Ray needed: the only planned job is stored in the old layout, so nothing runs."""
    spec = SweepSpec(str(suite), ("supervised",), ("param-rgcn",), worlds=("rule_0",), epochs=1, dim=8)
    [job] = plan_jobs(spec)
    old = GraphLogJob.of(job)
    assert old.legacy_id == legacy_job_id(
        {
            "v": 2,
            "epochs": 1,
            "dim": 8,
            "dropout": 0.4,
            "batch_size": 32,
            "budget_s": 0.0,
            "setup": "supervised",
            "model": "param-rgcn",
            "seed": 0,
            "worlds": [["rule_0", suite_fingerprint(suite, "rule_0")]],
        }
    )  # fmt: skip  (the id scheme of the old graphlog/ files, unchanged)
    row = {**dict.fromkeys(DETAIL_COLUMNS), "job_id": old.legacy_id, "setup": "supervised", "model": "param-rgcn",
           "seed": 0, "worlds": "rule_0", "world": "rule_0", "test_acc": 0.25, "status": "ok", "epochs": 1,
           "dim": 8, "dropout": 0.4, "batch_size": 32, "budget_s": 0.0, "suite": str(suite)}  # fmt: skip
    (tmp_path / "store" / LEGACY_DIR).mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([row]), tmp_path / "store" / LEGACY_DIR / "graphlog-old.parquet")
    store = ResultStore(tmp_path / "store")
    _, result = run_graphlog_sweep(spec, store)
    assert (result.planned, result.skipped, result.statuses) == (1, 1, {})
    [got] = stored_rows(store, planned_ids([job]))
    assert got["test_acc"] == 0.25 and got["job_id"] == old.legacy_id
    # a newer run of the same job (new id, new table) supersedes the old row
    new = {**row, "job_id": job.job_id, "test_acc": 0.75}
    store.write(
        [result_row(**{**job.as_row(), "status": "ok", "finished": T0, "extra": {"graphlog": [new]}})]
    )
    [got] = stored_rows(store)
    assert got["test_acc"] == 0.75 and got["job_id"] == job.job_id


def suite_fingerprint(suite, world: str) -> str:
    from tasks.graphlog import GraphLogSource

    return GraphLogSource(str(suite)).suite.fingerprint(world)


def test_bad_names_fail_before_ray(suite):
    def fails(*args: str) -> str:
        res = CliRunner().invoke(app, ["graphlog", "sweep", str(suite), *args])
        assert res.exit_code == 2
        return res.output

    assert "rule_9" in fails("--setups", "supervised", "--models", "param-rgcn", "--worlds", "rule_0,rule_9")
    assert "unknown model 'foo'" in fails("--setups", "supervised", "--models", "foo")
    assert "unknown setup 'sup'" in fails("--setups", "sup", "--models", "param-rgcn")
    assert "held out" in fails("--setups", "kshot", "--models", "param-rgcn", "--worlds", "rule_0",
                               "--heldout", "rule_0")  # fmt: skip
    with pytest.raises(SweepError, match="no setup"):
        plan_jobs(SweepSpec(str(suite), (), ("param-rgcn",)))


def test_job_ids_and_setups(suite):
    from learners.gnn.setups import SETUPS as LEARNER_SETUPS

    assert SETUPS == LEARNER_SETUPS
    spec = SweepSpec(
        str(suite), ("supervised", "kshot"), ("param-rgcn",), (0,), ("rule_0",), ("rule_1",), (0, 5)
    )
    jobs = plan_jobs(spec)
    assert [(j.target, j.predicate, j.learner) for j in jobs] == [
        ("graphlog-supervised", "supervised", "gnn-param-rgcn"),
        ("graphlog-kshot", "kshot", "gnn-param-rgcn"),
    ]
    assert [(g.setup, g.worlds, g.heldout) for g in map(GraphLogJob.of, jobs)] == [
        ("supervised", ("rule_0",), ()),
        ("kshot", ("rule_0",), ("rule_1",)),
    ]
    assert [j.job_id for j in plan_jobs(spec)] == [j.job_id for j in jobs]  # stable
    other = plan_jobs(SweepSpec(str(suite), ("supervised", "kshot"), ("param-rgcn",), (0,), ("rule_0",),
                                ("rule_1",), (0, 10)))  # fmt: skip
    assert other[0].job_id == jobs[0].job_id  # --shots matters to kshot jobs only
    assert other[1].job_id != jobs[1].job_id
