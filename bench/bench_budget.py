"""Budget enforcement: how long after its deadline a learner stuck in a C call is stopped.

Learners: ``stuck`` (an endless clingo solve with SIGINT/SIGTERM blocked) and ``sleep600``
(``time.sleep``). Each runs under budgets of 1, 2 and 5 s; the overshoot is the job's measured
learning time minus its budget. Side by side: the job runner alone (what each actor runs) and the
full ``orch`` path on a local Ray. The goal is an overshoot under 2 s; also reported: whether the
model reported before the stall was scored (``scored``).

    python bench/bench_budget.py [--budgets 1,2,5] [--json]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from sweep_helpers import write_tiny_dataset  # noqa: E402

from bench.common import print_table  # noqa: E402
from orchestrator.scheduling.raysession import local_ray  # noqa: E402
from orchestrator.scheduling.scheduler import SweepOptions, run_sweep  # noqa: E402
from orchestrator.scheduling.sweep import build_jobs  # noqa: E402
from orchestrator.scheduling.worker import JobLimits, run_jobs  # noqa: E402
from orchestrator.storage.store import ResultStore  # noqa: E402
from tasks.iggp import Dataset  # noqa: E402

LEARNERS = ("stuck", "sleep600")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budgets", default="1,2,5")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    budgets = [float(b) for b in args.budgets.split(",")]

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        root = write_tiny_dataset(Path(tmp) / "ds", games=("alpha",))
        source = Dataset(root)
        task = source.load_task("alpha", "goal").for_predicate("goal")
        for budget in budgets:
            jobs = build_jobs(source, str(root), ["alpha"], list(LEARNERS), targets=["goal"], budget_s=budget)
            for job, row in zip(jobs, run_jobs(jobs, [task] * len(jobs), JobLimits()), strict=True):
                out.append(_line("job runner", job.learner, budget, row))
        with local_ray(2):
            for budget in budgets:
                jobs = build_jobs(
                    source, str(root), ["alpha"], list(LEARNERS), targets=["goal"], budget_s=budget
                )
                store = ResultStore(Path(tmp) / f"store-{budget}")
                run_sweep(jobs, store, SweepOptions(f"bench-budget-{budget}"))
                stored = {r["job_id"]: r for r in store.read().to_pylist()}
                for job in jobs:
                    out.append(_line("orch on Ray", job.learner, budget, stored[job.job_id]))
    print_table(out, args.json, title="budget enforcement (learner stuck in a C call)")
    if not args.json:
        worst = max(r["overshoot_s"] for r in out)
        print(f"worst overshoot {worst:.3f}s (goal < 2s); load average {psutil.getloadavg()[0]:.1f} "
              f"on {psutil.cpu_count()} cores")  # fmt: skip


def _line(path: str, learner: str, budget: float, row: dict) -> dict:
    return {
        "path": path, "learner": learner, "budget_s": budget, "status": row["status"],
        "learn_s": row["learn_s"], "overshoot_s": row["learn_s"] - budget,
        "scored": row.get("test_tn") is not None,
    }  # fmt: skip


if __name__ == "__main__":
    main()
