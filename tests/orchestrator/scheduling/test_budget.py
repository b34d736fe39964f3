"""Hard budgets, memory caps and failure capture in the job runner (real forked processes, no Ray).

The Ray actor runs exactly this code (:class:`orchestrator.scheduling.worker.JobRunner` wraps ``run_jobs``).
"""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest
from sweep_helpers import write_tiny_dataset

from learners.base import ignore_report, register
from learners.testing import NothingModel
from orchestrator.scheduling.sweep import build_jobs
from orchestrator.scheduling.worker import JobLimits, run_jobs
from tasks.iggp import Dataset


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return Dataset(write_tiny_dataset(tmp_path_factory.mktemp("budget") / "ds"))


def _run(source, learners, budget_s=5.0, limits=JobLimits()):
    jobs = build_jobs(source, source.root, ["alpha"], learners, targets=["next"], budget_s=budget_s)
    jobs = [j for j in jobs if j.predicate == "next_p"]
    task = source.load_task("alpha", "next").for_predicate("next_p")
    t0 = time.monotonic()
    rows = run_jobs(jobs, [task] * len(jobs), limits)
    return {j.learner: r for j, r in zip(jobs, rows, strict=True)}, time.monotonic() - t0


def test_stuck_learner_is_stopped_at_the_deadline_and_its_reported_model_scored(source):
    rows, wall = _run(source, ["stuck"], budget_s=1.0)
    row = rows["stuck"]
    assert row["status"] == "timeout"
    assert 1.0 <= row["learn_s"] < 1.0 + 2.0  # enforced within 2 s of the deadline
    assert wall < 1.0 + 2.0 + 2.0
    # the model reported before the solve got stuck is scored in a fresh process
    assert row["description"] == "predicts nothing (test learner)" and row.get("program") is None
    assert row["test_tp"] == 0 and row["test_fn"] == 3 and row["test_tn"] == 6 and row["test_fp"] == 0
    assert row["extra"]["reports"] == 1
    assert row["extra"]["cut_by"] == "clock"  # killed at the wall-clock deadline


def test_a_timeout_does_not_hold_up_the_next_job_of_the_batch(source):
    rows, _ = _run(source, ["sleep30", "noop"], budget_s=0.5)
    assert rows["sleep30"]["status"] == "timeout" and rows["sleep30"]["learn_s"] < 2.5
    assert rows["noop"]["status"] == "ok" and rows["noop"]["validate_fn"] == 3


def test_crash_is_an_error_with_the_traceback(source):
    rows, _ = _run(source, ["crash", "noop"])
    assert rows["crash"]["status"] == "error"
    assert (
        "Traceback" in rows["crash"]["error"] and "deliberate failure on alpha_next" in rows["crash"]["error"]
    )
    assert "description" not in rows["crash"] and "test_tp" not in rows["crash"]
    assert rows["noop"]["status"] == "ok"
    # what predicting false for every atom scores, kept so reports count the error as exactly that
    nothing = {"test_tp": 0, "test_fp": 0, "test_tn": 6, "test_fn": 3}
    assert nothing.items() <= rows["crash"]["extra"]["all_false"].items()
    assert rows["crash"]["extra"]["all_false"] == {
        k: rows["noop"][k] for k in rows["crash"]["extra"]["all_false"]
    }


def test_memory_cap_gives_oom_and_the_next_job_gets_a_fresh_process(source):
    rows, _ = _run(source, ["oom", "noop"], limits=JobLimits(memory_bytes=300 << 20))
    assert rows["oom"]["status"] == "oom" and "over the cap of 300 MiB" in rows["oom"]["error"]
    assert rows["oom"]["peak_rss"] > 300 << 20
    assert rows["noop"]["status"] == "ok"


@register(
    r"alloc(?P<mib>\d+)", description="Test learner (this test only): holds MIB MiB resident.", testing=True
)
class AllocLearner:
    """Touches ``mib`` MiB in a grandchild process too, so the cap must count the whole process tree."""

    def __init__(self, mib: str) -> None:
        self.mib = int(mib)

    def fit(self, task, budget, report=ignore_report):  # noqa: ANN001, ANN201
        half = (self.mib << 20) // 2
        touch = f"b = bytearray({half}); b[::4096] = b'x' * len(b[::4096]); print('ready', flush=True)"
        child = subprocess.Popen([sys.executable, "-c", f"{touch}; import time; time.sleep(60)"],
                                 stdout=subprocess.PIPE, text=True)  # fmt: skip
        held = np.ones(half // 8, dtype=np.float64)
        child.stdout.readline()  # the grandchild holds its half now
        time.sleep(0.5)  # the watchdog samples every 50 ms
        child.kill()
        child.wait()
        del held
        return NothingModel()


def test_the_cap_is_on_resident_memory_of_the_job_and_its_children(source):
    """Half of the memory is held by a grandchild: the watchdog sums the job's whole process tree. The
    cap is on resident memory, not address space (numpy alone maps more than 120 MiB of that)."""
    inherited = np.ones(200 << 17)  # 200 MiB in the worker: shared with each job, not counted against it
    rows, _ = _run(source, ["alloc400", "alloc120"], limits=JobLimits(memory_bytes=300 << 20))
    del inherited
    over, under = rows["alloc400"], rows["alloc120"]
    assert over["status"] == "oom" and over["peak_rss"] > 300 << 20, over
    assert "--memory-per-job" in over["error"]
    assert under["status"] == "ok" and 0 < under["peak_rss"] < 300 << 20, under


def test_a_job_process_killed_by_sigkill_is_reported_as_lost(source):
    rows, _ = _run(source, ["die", "noop"])
    assert rows["die"]["status"] == "lost" and "SIGKILL" in rows["die"]["error"]
    assert rows["noop"]["status"] == "ok"


def test_without_a_deadline_hit_the_result_is_ok_with_timings(source):
    rows, _ = _run(source, ["sleep0.2"])
    row = rows["sleep0.2"]
    assert row["status"] == "ok", row
    assert 0.2 <= row["learn_s"] < 10.0
    assert row["eval_s"] >= 0 and 0 <= row["peak_rss"] < 100 << 20  # the job's own memory, not its worker's
    assert row["started"] <= row["finished"]


class _CutModel(NothingModel):
    budget_cut = True  # the learner stopped itself at its budget and returned its best so far


class _WorkCutModel(_CutModel):
    cut_by = "work"  # ...at a deterministic work bound


@register(
    "cutbybudget", description="Test learner: returns a model that says the budget cut it.", testing=True
)
class _CutLearner:
    name = "cutbybudget"
    model: type[_CutModel] = _CutModel

    def fit(self, task, budget, report=ignore_report) -> _CutModel:
        return self.model()


@register(
    "cutbywork", description="Test learner: returns a model that says its work bound cut it.", testing=True
)
class _WorkCutLearner(_CutLearner):
    name = "cutbywork"
    model = _WorkCutModel


def test_a_model_the_budget_cut_is_a_timeout_not_ok(source):
    """A learner that returns at its budget (ilasp's "budget; best partial cover") was stopped by
    the budget all the same: the row says timeout, with the model scored."""
    rows, _ = _run(source, ["cutbybudget", "cutbywork", "noop"])
    assert rows["cutbybudget"]["status"] == "timeout" and rows["noop"]["status"] == "ok"
    # which budget cut it is stored: the clock unless the model says its work bound did
    assert (
        rows["cutbybudget"]["extra"]["cut_by"] == "clock" and rows["cutbywork"]["extra"]["cut_by"] == "work"
    )
    assert rows["cutbywork"]["status"] == "timeout" and "cut_by" not in rows["noop"]["extra"]
    assert rows["cutbybudget"]["description"] == "predicts nothing (test learner)"
    assert rows["cutbybudget"]["test_fn"] == 3
