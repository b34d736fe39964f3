"""Orchestration overhead: N trivial jobs (the ``noop`` learner) end to end through Ray and the store.

Side by side in one process:

* ``in-process``: the same jobs through the job runner alone (fork, learn, score), no Ray, no store:
  the floor the orchestrator adds to.
* ``orch``: the full path: plan against the store, a local Ray with ``--num-cpus`` actors, batches,
  rows written to Parquet in batches. Ray's start-up is timed apart (paid once per sweep).

Reports jobs/s, milliseconds of wall time per job (amortised over the sweep) and the driver's
resident memory sampled through the sweep (it should stay flat: rows are flushed, not kept).

    python bench/bench_overhead.py --jobs 10000 [--num-cpus 2] [--json]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
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


class _MemorySampler:
    """Progress sink that samples the driver's RSS every ~10% of the jobs."""

    def __init__(self) -> None:
        self.proc, self.done, self.total, self.samples = psutil.Process(), 0, 1, []

    def begin(self, total, skipped):
        self.total = max(1, total)
        self.samples.append(self.proc.memory_info().rss)

    def running(self, jobs):
        pass

    def finished(self, job, row):
        self.done += 1
        if self.done % max(1, self.total // 10) == 0:
            self.samples.append(self.proc.memory_info().rss)

    def tick(self):
        pass

    def end(self, result):
        self.samples.append(self.proc.memory_info().rss)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=10_000)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = write_tiny_dataset(Path(tmp) / "ds")
        source = Dataset(root)
        per_repeat = 3 * 3  # games x predicates of the tiny dataset
        repeats = -(-args.jobs // per_repeat)
        jobs = build_jobs(source, str(root), None, ["noop"], repeats=repeats, budget_s=60)[: args.jobs]

        task_of = {}
        for j in jobs[:2000]:
            key = (j.game, j.target, j.predicate)
            if key not in task_of:
                task_of[key] = source.load_task(j.game, j.target).for_predicate(j.predicate)
        sample = jobs[:2000]
        t0 = time.perf_counter()
        run_jobs(sample, [task_of[(j.game, j.target, j.predicate)] for j in sample], JobLimits())
        floor = (time.perf_counter() - t0) / len(sample)

        t0 = time.perf_counter()
        with local_ray(args.num_cpus):
            ray_start = time.perf_counter() - t0
            sampler = _MemorySampler()
            store = ResultStore(Path(tmp) / "store")
            t0 = time.perf_counter()
            result = run_sweep(jobs, store, SweepOptions("bench-overhead"), sampler)
            wall = time.perf_counter() - t0
        stored = store.read(["job_id"]).num_rows
        files = len(store.files())

    mib = [s / 2**20 for s in sampler.samples]
    rows = [
        {"path": "in-process (1 core, no Ray)", "jobs": len(sample), "wall_s": floor * len(sample),
         "jobs_per_s": 1 / floor, "ms_per_job": floor * 1000, "driver_rss_mib": "-"},
        {"path": f"orch ({args.num_cpus} actors, Ray + store)", "jobs": len(jobs), "wall_s": wall,
         "jobs_per_s": len(jobs) / wall, "ms_per_job": wall / len(jobs) * 1000,
         "driver_rss_mib": f"{mib[0]:.0f}->{max(mib):.0f}->{mib[-1]:.0f}"},
    ]  # fmt: skip
    print_table(rows, args.json, title="orchestration overhead, noop learner")
    if not args.json:
        print(f"Ray start {ray_start:.1f}s (once per sweep, not in wall_s); rows stored {stored} in {files} "
              f"file(s); statuses {result.statuses}; load average {psutil.getloadavg()[0]:.1f} on "
              f"{psutil.cpu_count()} cores")  # fmt: skip


if __name__ == "__main__":
    main()
