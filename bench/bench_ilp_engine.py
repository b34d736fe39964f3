"""Bench: the ``ilasp`` learner's speed at a fixed amount of search, this checkout against a reference.

A work-bounded learner (``ilasp_w<N>``) takes the same search steps on any machine and in any
process (docs/ilp.md, "Reproducible runs"), so one job learned by two source trees does the same
search in both: the ratio of their learning times is the speed of the code that tests the
candidates (joins, membership tests, covers), and the two programs must be identical. Each
(task, tree) is learned in a fresh process, one process at a time, the trees alternating, ``--rounds``
times (the median is shown). Prints, per task: the reference's seconds, this checkout's, their
ratio, whether the programs are the same and where this checkout's time went (the fit's profile).

    git worktree add /tmp/ilp-ref HEAD~1          # the reference: any other checkout
    python bench/bench_ilp_engine.py --ref /tmp/ilp-ref
    python bench/bench_ilp_engine.py --ref /tmp/ilp-ref --tasks tictactoe/terminal/terminal --rounds 3

A job the wall clock (``--budget``) cut is marked: its search was not the bound's, so neither its
time nor its program compares. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import iggp_dir, print_table  # noqa: E402
from procs.child import die_with_parent, kill_group  # noqa: E402

TASKS = (
    "tictactoe/terminal/terminal",
    "sheep_and_wolf/goal/goal",
    "ttcc4/goal/goal",
    "tron/next/next_at",
    "platformjumpers/legal/legal_jump",
    "checkers/next/next_location",
    "sokoban/legal/legal",
    "fizzbuzz/next/next_success",
)
"""The slowest perfect tasks of the 60 s file (its 90th percentile) and budget-cut ones of several
kinds: the time a faster engine must cut."""

CHILD = """
import json, sys, time
import learners.base
from learners.base import Budget, make_learner
from tasks.iggp import Dataset
dataset, game, target, predicate, learner, budget = sys.argv[1:7]
task = Dataset(dataset).load_task(game, target).for_predicate(predicate).learning_view()
fit = make_learner(learner)
started = time.monotonic()
model = fit.fit(task, Budget(float(budget)), seed=0)
seconds = time.monotonic() - started
p = fit.profile
print(json.dumps({"sources": learners.base.__file__, "seconds": seconds, "program": model.rules(), "cut_by": model.cut_by,
                  "stages": {k: round(getattr(p, k), 2) for k in ("facts", "search", "verify", "solve", "select")},
                  "work": p.work}))
"""


def learn_in(tree: Path, dataset: Path, task: str, learner: str, budget: float) -> dict:
    """One job learned by the sources of ``tree`` in a fresh process, which dies with this one
    (``die_with_parent``, as the MPS daemon is started) and is killed past its budget."""
    game, target, predicate = task.split("/")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-c", CHILD, str(dataset), game, target, predicate, learner, str(budget)]
    parent = os.getpid()
    proc = subprocess.Popen(
        cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=lambda: die_with_parent(parent),
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=budget + 120)
    finally:
        if proc.poll() is None:
            kill_group(proc.pid)
    if proc.returncode != 0:
        raise RuntimeError(f"{task} in {tree}: exit {proc.returncode}")
    result = json.loads(out.strip().splitlines()[-1])
    if not Path(result["sources"]).resolve().is_relative_to(tree):
        raise RuntimeError(f"{task}: learned with {result['sources']}, not the sources of {tree}")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", type=Path, required=True, help="the reference checkout (a source tree)")
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma-separated game/target/predicate")
    ap.add_argument("--learner", default="ilasp_w20000", help="a work-bounded ilasp (default ilasp_w20000)")
    ap.add_argument("--budget", type=float, default=300.0, help="wall-clock seconds, a hard stop only")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument(
        "--dataset", type=Path, default=None, help="the IGGP dataset (default: unpacked from ../shared)"
    )
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args()
    dataset = args.dataset or iggp_dir()
    rows, totals = [], [0.0, 0.0]
    for task in args.tasks.split(","):
        runs: dict[str, list[dict]] = {"ref": [], "this": []}
        for _ in range(args.rounds):
            for name, tree in (("ref", args.ref.resolve()), ("this", ROOT)):
                runs[name].append(learn_in(tree, dataset, task, args.learner, args.budget))
        ref = statistics.median(r["seconds"] for r in runs["ref"])
        this = statistics.median(r["seconds"] for r in runs["this"])
        cut = any(r["cut_by"] == "clock" for rs in runs.values() for r in rs)
        same = len({r["program"] for rs in runs.values() for r in rs}) == 1
        totals[0] += ref
        totals[1] += this
        rows.append({
            "task": task, "ref_s": round(ref, 2), "this_s": round(this, 2), "ratio": round(this / ref, 3),
            "same_program": same, "clock_cut": cut, "work": runs["this"][-1]["work"], **runs["this"][-1]["stages"],
        })  # fmt: skip
    total = {"task": "total", "ref_s": round(totals[0], 2), "this_s": round(totals[1], 2),
             "ratio": round(totals[1] / max(totals[0], 1e-9), 3)}  # fmt: skip
    title = f"ilasp at a fixed amount of search ({args.learner}): this checkout ({ROOT}) against {args.ref}"
    print_table([*rows, total], as_json=args.json, title=title)
    return 0 if all(r["same_program"] and not r["clock_cut"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
