"""A real sweep: ``orch run --all-games --learners true,knn5`` on the published IGGP games.

Runs the actual command (a subprocess, its own local Ray) into a fresh store, then reads the store
and compares the command's wall time with the sum of the job times (learning + scoring) to give
the parallel efficiency: sum of job times / (wall time x CPUs). The wall time includes Ray's
start-up and the loading of every task (once per actor and task), which the job times do not.

    python bench/bench_sweep.py [--learners true,knn5] [--games a,b | all] [--num-cpus 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import games_args, iggp_dir, print_table  # noqa: E402
from orchestrator.storage.store import ResultStore  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--learners", default="true,knn5")
    ap.add_argument("--games", default="all")
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--budget", default="30m")
    ap.add_argument("--store", default=None, help="Keep the results here (default: a temporary dir).")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    data = iggp_dir()
    with tempfile.TemporaryDirectory() as tmp:
        store_dir = args.store or str(Path(tmp) / "store")
        which = games_args(args.games)
        cmd = [sys.executable, "-m", "orchestrator.cli", "run", *which, "--learners", args.learners,
               "--dataset", str(data), "--store", store_dir, "--num-cpus", str(args.num_cpus),
               "--budget", args.budget, "--json"]  # fmt: skip
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            sys.exit(f"orch run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        rows = (
            ResultStore(store_dir)
            .latest(["learner", "status", "learn_s", "eval_s", "game", "extra"])
            .to_pylist()
        )
    for r in rows:
        r["load_s"] = json.loads(r["extra"] or "{}").get("load_s", 0.0)
    out = []
    for learner in [*args.learners.split(","), "all"]:
        mine = [r for r in rows if learner == "all" or r["learner"] == learner]
        job_s = sum((r["learn_s"] or 0) + (r["eval_s"] or 0) for r in mine)
        out.append({
            "learner": learner, "jobs": len(mine), "games": len({r["game"] for r in mine}),
            "ok": sum(r["status"] == "ok" for r in mine), "sum_job_s": job_s,
            "sum_task_load_s": sum(r["load_s"] for r in mine),
            "max_job_s": max(((r["learn_s"] or 0) + (r["eval_s"] or 0) for r in mine), default=0.0),
        })  # fmt: skip
    total = out[-1]["sum_job_s"]
    out[-1].update(wall_s=wall, efficiency=total / (wall * args.num_cpus))
    print_table(
        out, args.json, title=f"orch run {' '.join(which)} --learners {args.learners} on {args.num_cpus} CPUs"
    )
    if not args.json:
        print(f"wall {wall:.1f}s (Ray start and task loading included) vs {total:.1f}s of job time: "
              f"parallel efficiency {total / (wall * args.num_cpus):.0%} of {args.num_cpus} CPUs; "
              f"load average {psutil.getloadavg()[0]:.1f} on {psutil.cpu_count()} cores")  # fmt: skip


if __name__ == "__main__":
    main()
