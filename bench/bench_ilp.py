"""Bench: the ``ilasp`` learner over the published IGGP tasks, against the goal and ILASP*.

Each target predicate is learned in its own process (a pool of ``--workers`` slots, default 2)
with ``--budget`` seconds (default 60); the process streams every reported model to the driver and
is killed ``--grace`` seconds after its budget, so one stuck solve cannot hold the bench (a killed
job is scored with the last model it reported). Models are scored on test by the shared
:class:`learners.ilp.evaluate.RuleModel` path, pooling sub-predicates per task (strict scoring).

Prints: the table by target (mean balanced accuracy and perfect count), the overall figures against
a published system read per task from ``--anchor`` (default ../shared/iggp/ilasp_star_shared.csv,
ILASP* re-scored strictly) on the same tasks, the unsolved tasks with why, time-to-perfect on two
easy tasks, where the time went, and the peak resident memory of each job (VmHWM of its process,
polled by the driver; the title names the largest). A predicate that errored (or was killed before any model) is
scored as predicting false for every atom, never left out; the overall table counts them.

The reproducible per-task figures come from ``orch bench iggp`` (docs/results); this script is for
profiling the learner.

    python bench/bench_ilp.py --budget 20                 # all 159 tasks
    python bench/bench_ilp.py --games tictactoe,coins --budget 10 --json
    python bench/bench_ilp.py --games tictactoe --targets next --learner ilasp_noframe   # ablation
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import SHARED, iggp_dir, print_table  # noqa: E402
from procs.child import Child, start_child  # noqa: E402

SCORING_S = 300.0
"""Seconds allowed to score a model on test (clingo evaluation of big tasks) before giving up."""
EASY = [("scissors_paper_stone", "next"), ("tictactoe", "legal")]


@dataclass
class Job:
    game: str
    target: str
    predicate: str
    status: str = "pending"  # ok | timeout | error | killed
    why: str = ""
    rules: str = ""
    counts: tuple[int, int, int, int] | None = None  # test tp, fp, tn, fn
    nothing: tuple[int, int, int, int] | None = None  # the counts of predicting false everywhere
    learn_s: float = 0.0
    first_perfect_s: float | None = None
    profile: dict = field(default_factory=dict)
    peak_rss: int = 0  # bytes: the learning process's high-water mark (VmHWM), polled by the driver


def _worker(conn, root: str, job: Job, budget: float, learner_name: str = "ilasp") -> None:
    """Child process: load, learn (streaming each reported model), score on test."""
    from learners.base import Budget, make_learner
    from learners.ilp.evaluate import RuleModel
    from learners.metrics import count
    from tasks.iggp import Dataset

    try:
        task = Dataset(root).load_task(job.game, job.target).for_predicate(job.predicate)
        conn.send(("nothing", _nothing(task)))
        conn.send(("started", time.monotonic()))
        learner = make_learner(learner_name)
        t0 = time.monotonic()
        train_perfect: list[float] = []

        def report(model) -> None:
            conn.send(("model", model.rules()))
            if getattr(model, "train_ba", 0) == 1.0 and not train_perfect:
                train_perfect.append(time.monotonic() - t0)

        model = learner.fit(task.learning_view(), Budget(budget), report)
        learn_s = time.monotonic() - t0
        prof = asdict(learner.profile)
        prof["train_perfect_s"] = train_perfect[0] if train_perfect else None
        conn.send(("learned", (model.rules(), learn_s, prof)))
        split = task.split("test")
        c = count(task, split, RuleModel(model.rules()).predict(task, split))[job.predicate]
        conn.send(("scored", (c.tp, c.fp, c.tn, c.fn)))
    except Exception as e:  # reported to the driver, which records the job as an error
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _nothing(task) -> tuple[int, int, int, int] | None:
    """Test counts of predicting false for every atom: how an errored predicate is scored."""
    import scipy.sparse as sp

    from learners.metrics import count

    if "test" not in task.splits:
        return None
    split = task.split("test")
    c = count(task, split, sp.csr_matrix((split.n_examples, len(task.target_atoms)), dtype=bool))
    c = c[task.predicates[0]]
    return (c.tp, c.fp, c.tn, c.fn)


def _score_worker(conn, root: str, job: Job) -> None:
    from learners.ilp.evaluate import RuleModel
    from learners.metrics import count
    from tasks.iggp import Dataset

    try:
        task = Dataset(root).load_task(job.game, job.target).for_predicate(job.predicate)
        split = task.split("test")
        c = count(task, split, RuleModel(job.rules).predict(task, split))[job.predicate]
        conn.send(("scored", (c.tp, c.fp, c.tn, c.fn)))
    except Exception as e:
        conn.send(("error", f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def _hwm(pid: int | None) -> int:
    """The process's peak resident memory so far (VmHWM, bytes); 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_jobs(
    root: str, jobs: list[Job], budget: float, workers: int, grace: float, log, learner: str = "ilasp"
) -> None:
    """Run every job with at most ``workers`` processes (`procs.child`); kill each at budget + grace."""
    pending = list(jobs)
    running: list[tuple[Job, Child, float, bool]] = []  # job, process, deadline, scoring
    while pending or running:
        while pending and len(running) < workers:
            job = pending.pop(0)
            scoring = job.status == "timeout"
            target = _score_worker if scoring else _worker
            args = (root, job) if scoring else (root, job, budget, learner)
            proc = start_child(target, args)
            # loading time is not budget: the deadline is re-set when the child says it started
            running.append((job, proc, time.monotonic() + budget + grace + 300, scoring))
        time.sleep(0.05)
        still = []
        for job, proc, deadline, scoring in running:
            conn = proc.channel
            done = False
            if not scoring:
                job.peak_rss = max(job.peak_rss, _hwm(proc.pid))
            try:
                while conn.poll():
                    kind, value = conn.recv()
                    if kind == "started":
                        deadline = (
                            time.monotonic()
                            + (budget if not scoring else 0)
                            + grace
                            + (120 if scoring else 0)
                        )
                    elif kind == "nothing":
                        job.nothing = value
                    elif kind == "model":
                        job.rules = value
                    elif kind == "learned":
                        job.rules, job.learn_s, job.profile = value
                        job.status = "ok"
                        deadline = time.monotonic() + SCORING_S  # scoring is not learning time
                    elif kind == "scored":
                        job.counts = value
                        done = True
                    elif kind == "error":
                        job.status, job.why, done = "error", value, True
            except (EOFError, OSError):
                done = True
            if not done and time.monotonic() > deadline:
                proc.kill()
                done = True
                if not scoring and job.status == "pending":
                    job.status, job.why, job.learn_s = "timeout", "killed at budget + grace", budget + grace
                    pending.insert(0, job)  # score its last reported model in a fresh process
                elif scoring or job.status == "ok":
                    job.status, job.why = "error", job.why or "scoring timed out"
            if done:
                proc.close()
                if job.counts is not None or job.status == "error":
                    log(job)
            else:
                still.append((job, proc, deadline, scoring))
        running = still


def _ba(tp: int, fp: int, tn: int, fn: int) -> float:
    from learners.metrics import balanced_accuracy

    return balanced_accuracy(tp, fp, tn, fn)


def summarise(jobs: list[Job]) -> dict:
    tasks: dict[tuple[str, str], list[Job]] = defaultdict(list)
    for j in jobs:
        tasks[(j.game, j.target)].append(j)
    rows = []
    for (game, target), js in sorted(tasks.items()):
        # an errored predicate predicts false everywhere (never left out); unknown only if unloadable
        scored = [j.counts if j.counts is not None else j.nothing for j in js]
        errored = sum(j.counts is None for j in js)
        known = [c for c in scored if c is not None]
        tp, fp, tn, fn = (sum(c[i] for c in known) for i in range(4))
        missing = len(js) - len(known)
        ba = _ba(tp, fp, tn, fn) if known else 0.0
        perfect = not missing and fp == 0 and fn == 0
        why = ""
        if not perfect:
            reasons = []
            for j in js:
                if j.counts is None:
                    reasons.append(f"{j.predicate}: error {j.why} (scored as predicting false)")
                elif j.counts[1] or j.counts[3]:
                    status = (
                        j.profile.get("status", j.status) if j.status != "timeout" else "timeout (killed)"
                    )
                    train = (
                        "train-perfect"
                        if j.profile.get("train_perfect_s") is not None
                        else "not train-perfect"
                    )
                    reasons.append(f"{j.predicate}: {status}, {train}")
            why = "; ".join(reasons)
        rows.append(
            {
                "game": game,
                "target": target,
                "ba": ba,
                "perfect": perfect,
                "why": why,
                "errored": errored,
                "unscored": missing,
                "learn_s": sum(j.learn_s for j in js),
                "peak_rss_mib": max(j.peak_rss for j in js) / 2**20,
            }
        )
    return {"tasks": rows}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per target predicate (default 60)")
    ap.add_argument("--games", default="", help="comma-separated games (default: all)")
    ap.add_argument("--targets", default="goal,legal,next,terminal")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--grace", type=float, default=10.0, help="seconds after the budget before a hard kill")
    ap.add_argument("--data", default=None, help="IGGP dataset dir (default: unpacked ../shared/iggp)")
    ap.add_argument(
        "--learner", default="ilasp", help="registry name, e.g. ilasp or ilasp_noframe (ablation)"
    )
    ap.add_argument(
        "--anchor",
        type=Path,
        default=SHARED / "iggp" / "ilasp_star_shared.csv",
        help="published per-task scores to show on the same tasks (default: ILASP* in ../shared/iggp)",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    from tasks.iggp import Dataset

    root = str(args.data or iggp_dir())
    ds = Dataset(root)
    games = [g for g in args.games.split(",") if g] or ds.games()
    jobs: list[Job] = []
    for g in games:
        for t in ds.targets(g):
            if t in args.targets.split(",") and "train" in ds.files(g, t) and "test" in ds.files(g, t):
                jobs += [Job(g, t, p) for p in ds.predicates(g, t)]
    started = time.monotonic()

    def log(job: Job) -> None:
        if not args.quiet and not args.json:
            c = job.counts
            ba = f"{_ba(*c):.3f}" if c else "-"
            print(
                f"  [{time.monotonic() - started:7.1f}s] {job.game}_{job.target}/{job.predicate}: "
                f"{job.status} BA={ba} learn={job.learn_s:.1f}s rss={job.peak_rss / 2**20:.0f}MiB {job.why}",
                flush=True,
            )

    run_jobs(root, jobs, args.budget, args.workers, args.grace, log, args.learner)
    wall = time.monotonic() - started
    summary = summarise(jobs)
    rows = summary["tasks"]
    by_target = []
    for t in ("goal", "legal", "next", "terminal"):
        rs = [r for r in rows if r["target"] == t]
        if rs:
            by_target.append(
                {
                    "target": t,
                    "tasks": len(rs),
                    "mean_ba": sum(r["ba"] for r in rs) / len(rs),
                    "perfect": sum(r["perfect"] for r in rs),
                }
            )
    n = len(rows)
    mean_ba = sum(r["ba"] for r in rows) / n if n else 0.0
    perfect = sum(r["perfect"] for r in rows)
    overall = [
        {
            "system": f"ilasp (this, {args.budget:g}s/predicate)",
            "tasks": n,
            "perfect": perfect,
            "perfect_share": perfect / n if n else 0.0,
            "mean_ba": mean_ba,
            "errored_predicates": sum(r["errored"] for r in rows),
            "source": "this run",
        }
    ]
    if args.anchor.exists():
        from orchestrator.analysis.anchor import read_iggp_anchor

        anchor = read_iggp_anchor(args.anchor)
        figures = anchor.on({(r["game"], r["target"]) for r in rows})
        if figures["tasks"]:
            overall.append(
                {
                    "system": f"{anchor.name} on the same tasks",
                    "tasks": figures["tasks"],
                    "perfect": figures["perfect"],
                    "perfect_share": figures["perfect"] / figures["tasks"],
                    "mean_ba": figures["balanced_accuracy"],
                    "errored_predicates": "",
                    "source": str(args.anchor),
                }
            )
    unsolved = [
        {"task": f"{r['game']}_{r['target']}", "ba": r["ba"], "why": r["why"]}
        for r in rows
        if not r["perfect"]
    ]
    easy = []
    for g, t in EASY:
        js = [j for j in jobs if (j.game, j.target) == (g, t)]
        if js:
            times = [j.profile.get("train_perfect_s") for j in js]
            ok = all(x is not None for x in times)
            easy.append(
                {
                    "task": f"{g}_{t}",
                    "predicates": len(js),
                    "time_to_train_perfect_s": max(times) if ok else None,
                    "test_perfect": next(
                        (r["perfect"] for r in rows if (r["game"], r["target"]) == (g, t)), None
                    ),
                }
            )
    keys = ("facts", "search", "verify", "solve", "select")
    prof_tot = {k: sum(j.profile.get(k, 0.0) for j in jobs) for k in keys}
    tested = sum(j.profile.get("tested", 0) for j in jobs)
    total = sum(prof_tot.values()) or 1.0
    profile = [{"stage": k, "seconds": v, "share": v / total} for k, v in prof_tot.items()]
    profile.append(
        {"stage": "candidates tested", "seconds": tested, "share": tested / max(prof_tot["search"], 1e-9)}
    )
    peak = max((j.peak_rss for j in jobs), default=0)
    heaviest = max(jobs, key=lambda j: j.peak_rss) if jobs else None
    title = (
        f"{args.learner} bench: {len(jobs)} predicates, {n} tasks, budget {args.budget:g}s, "
        f"{args.workers} workers, wall {wall:.0f}s, peak RSS {peak / 2**20:.0f} MiB"
        + (f" ({heaviest.game}_{heaviest.target}/{heaviest.predicate})" if heaviest else "")
    )
    if args.json:
        print_table(by_target, True, title + " / by target")
        print_table(overall, True, "overall")
        print_table(unsolved, True, "unsolved")
        print_table(easy, True, "easy tasks")
        print_table(profile, True, "profile")
        print_table(rows, True, "tasks")
        return
    print(f"\n{title}")
    print_table(by_target, title="by target (test, strict scoring, sub-predicates pooled)")
    print_table(overall, title="overall vs the anchor on the same tasks")
    print_table(unsolved, title="not perfectly solved (why)")
    print_table(easy, title="time to a train-perfect hypothesis on easy tasks")
    print_table(
        profile,
        title="where learning time went (summed over jobs; last row: candidates tested, per search-second)",
    )


if __name__ == "__main__":
    main()
