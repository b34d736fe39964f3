"""Does a sweep rerun identically? The same ``orch run`` twice, once on an idle machine and once
beside CPU burners, and the stored programs compared job by job.

With a deterministic work bound (``ilasp_w<N>``, docs/ilp.md "Reproducible runs") every job must
store the same program and status in both runs, as long as the wall-clock budget, which stays a
hard stop, is generous enough for the bound on the loaded machine; with a wall-clock budget only
(``ilasp``) the loaded run stops its searches elsewhere, and the table lists the jobs that moved.

    python bench/bench_repeatable.py --games tictactoe,coins,minimal_decay --learners ilasp_w50000 \
        --budget 120s --burners 2
    python bench/bench_repeatable.py --games all --learners ilasp_w10000 --budget 1200s   # every task
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import games_args, iggp_dir, print_table  # noqa: E402
from orchestrator.storage.store import ResultStore  # noqa: E402

BURN = "while True: pass"


def _sweep(store: Path, args: argparse.Namespace, dataset: Path, burners: int) -> float:
    """One ``orch run`` into ``store`` beside ``burners`` busy processes; its wall time."""
    procs = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(burners)]
    started = time.monotonic()
    try:
        subprocess.run(
            ["orch", "run", "--dataset", str(dataset), *games_args(args.games), "--learners", args.learners,
             "--budget", args.budget, "--num-cpus", str(args.num_cpus), "--store", str(store), "--json",
             *(["--targets", args.targets] if args.targets else [])],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return time.monotonic() - started


def _programs(store: Path) -> dict[str, tuple[str, str, str | None, str, float]]:
    """job id -> (learner, status, program, game/predicate, learn seconds) of the latest row per job."""
    columns = ["job_id", "learner", "status", "program", "game", "predicate", "learn_s"]
    rows = ResultStore(str(store)).latest(columns).to_pylist()
    return {r["job_id"]: (r["learner"], r["status"], r["program"], f"{r['game']}/{r['predicate']}",
                          r["learn_s"] or 0.0) for r in rows}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset", type=Path, default=None, help="IGGP dataset (default: ../shared unpacked)"
    )
    parser.add_argument("--games", default="tictactoe,coins,minimal_decay", help="comma-separated, or all")
    parser.add_argument("--targets", default=None, help="only these targets (e.g. goal,next,terminal)")
    parser.add_argument("--learners", default="ilasp_w50000,ilasp")
    parser.add_argument("--budget", default="120s")
    parser.add_argument("--burners", type=int, default=2, help="busy processes beside the second run")
    parser.add_argument("--num-cpus", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=None, help="keep the two stores here (idle/, busy/)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dataset = args.dataset or iggp_dir()
    from orchestrator.durations import parse_duration

    seconds = parse_duration(args.budget) or float("inf")
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        idle_s = _sweep(where / "idle", args, dataset, 0)
        busy_s = _sweep(where / "busy", args, dataset, args.burners)
        idle, busy = _programs(where / "idle"), _programs(where / "busy")
    rows = []
    for learner in args.learners.split(","):
        ids = sorted(j for j, v in idle.items() if v[0] == learner and j in busy)
        differ = [j for j in ids if idle[j][1:3] != busy[j][1:3]]
        cut = sum(idle[j][1] == "timeout" for j in ids)
        # killed by the worker at the wall-clock budget (the hard stop), in either run
        walled = [j for j in ids if max(idle[j][4], busy[j][4]) >= seconds - 1]
        rows.append({"learner": learner, "jobs": len(ids), "identical": len(ids) - len(differ),
                     "differ": len(differ), "timeouts (idle)": cut, "killed at the wall clock": len(walled),
                     "differ, not killed": len([j for j in differ if j not in walled]),
                     "differing (idle -> busy status)": ", ".join(
                         f"{idle[j][3]} ({idle[j][1]}->{busy[j][1]})" for j in differ)})  # fmt: skip
    title = f"idle run {idle_s:.0f} s, beside {args.burners} burners {busy_s:.0f} s ({args.budget}, {args.num_cpus} CPUs)"
    print_table(rows, as_json=args.json, title=title)
    if args.json:
        print(json.dumps({"idle_s": idle_s, "busy_s": busy_s}))


if __name__ == "__main__":
    main()
