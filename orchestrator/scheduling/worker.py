"""Where a job runs: a Ray actor that caches tasks and runs each job in a killable child.

The supervised children (deadlines, the resident-memory watchdog, the pipe) are the generic
:mod:`procs.supervise`; this module holds the job functions on top of it. Why a child
per job (and not ``ray.cancel(force=True)`` on the actor's task):

* A hard budget needs a process that can be killed whatever it is doing (a clingo solve, a C
  extension ignoring signals). Killing the Ray worker would also throw away the actor's task cache
  and cost a new worker start; killing a forked child costs nothing but that job.
* The child is forked from the actor *after* the task is loaded, so it sees the cached task for
  free (copy-on-write): tasks are parsed once per actor, not once per job.
* Anytime models leave the child as soon as they are reported: each ``report(model)`` is pickled
  down a pipe to the actor, which keeps the latest one. At the deadline the actor SIGKILLs the
  child's process group and scores the last model it received.
* Scoring runs in a second fresh child, so a poisoned learner process never scores its own output
  and a model whose ``predict`` misbehaves cannot take the actor down. The actor never unpickles
  a model itself: it only holds the bytes.
* A memory cap is on resident memory, watched from the actor (``oom``, with the peak).
* A job whose learner prefers a GPU (its registry ``resources`` ask for ``num_gpus``) learns and is
  scored in *spawned* children instead (:func:`start_method_for`): a fork of a worker that has run
  jobs cannot be trusted with CUDA (issue 26). The work (jobs, tasks, model bytes) is then pickled
  to the child, and the child's GPU memory is capped (``JobLimits.gpu_memory_bytes``). The actor
  itself never initialises CUDA: every fork checks that (:mod:`procs.cuda`).

The actor returns plain row dicts; only the driver writes to the store, so a worker orphaned by a
killed driver can never write a duplicate row.
"""

from __future__ import annotations

import os
import pickle
import socket
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from orchestrator.scheduling.sweep import Job
from orchestrator.storage.schema import FINAL_STATUSES, NOT_APPLICABLE, result_row
from procs.cuda import cuda_initialised, device_label
from procs.supervise import Outcome, Send, Start, run_one, run_supervised
from tasks.task import Task

__all__ = ["JobLimits", "JobRunner", "ModelReport", "generate_one", "run_jobs", "start_method_for"]

INPUT_FAILURE = "input"
"""``extra["failure"]`` of a job that failed on bad input (its task's files): ``orch run`` exits 1."""


@dataclass(frozen=True)
class JobLimits:
    """How a job is confined: its resident-memory cap (bytes), how long scoring may take, and the
    GPU memory cap (bytes) of a job whose learner prefers a GPU."""

    memory_bytes: int | None = None
    eval_timeout_s: float = 600.0
    gpu_memory_bytes: int | None = None


@dataclass(frozen=True)
class ModelReport:
    """A learner's improving model, sent from the job's child as soon as it is reported."""

    item: int
    blob: bytes
    describe: str
    rules: str | None


def job_rng_seed(seed: int, repeat: int) -> int:
    """The value that seeds the global generators for one job (its seed and repeat).

    Learners with their own generators should still draw from those, so a job is reproducible.
    """
    return (seed * 1_000_003 + repeat) % 2**32


def start_method_for(learner: str) -> str:
    """``spawn`` for a learner that prefers a GPU (registry ``resources`` with ``num_gpus`` > 0),
    else ``fork`` (the copy-on-write fast path of ILP learners and baselines).

    Spawn whether or not this machine has CUDA, so the CPU-only CI runs the GPU jobs' path.
    """
    from learners.base import spec_for

    try:
        spec, _ = spec_for(learner)
    except KeyError:  # an unknown learner fails in its job's child, with a traceback
        return "fork"
    return "spawn" if spec.resources.get("num_gpus", 0) > 0 else "fork"


@dataclass(frozen=True)
class LearnJobs:
    """The work of a learning child: item i fits ``jobs[i]`` on ``tasks[i]`` within its budget.

    An object, not a closure: a spawned child gets it pickled (the tasks with it).
    """

    jobs: list[Job]
    tasks: list[Task]
    _learners: dict[int, Any] = field(default_factory=dict, repr=False)

    def prepare(self, i: int) -> None:
        """Before job i's budget starts: build its learner and run the learner's own warm-up
        (``prepare()``: imports such as torch, seconds in a fresh process), so that the budget is
        the learner's learning time, as the papers' budgets are."""
        from learners.base import prepared_learner

        self._learners[i] = prepared_learner(self.jobs[i].learner)

    def __call__(self, i: int, send: Send) -> tuple[str, Any]:
        from learners.base import Budget, budget_cut, fit_with_seed, make_learner
        from learners.seeding import seed_everything

        job = self.jobs[i]

        def ship(model: Any) -> None:
            blob = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
            send(ModelReport(i, blob, model.describe(), model.rules()))

        seed = job_rng_seed(job.seed, job.repeat)
        seed_everything(seed)
        learner = self._learners.pop(i) if i in self._learners else make_learner(job.learner)
        # the learner gets train and validate only: the test split is not in the object it sees
        model = fit_with_seed(learner, self.tasks[i].learning_view(), Budget(job.budget_s), ship, seed)
        blob = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
        return "ok", (blob, model.describe(), model.rules(), budget_cut(model))


@dataclass(frozen=True)
class ScoreModels:
    """The work of a scoring child: item k unpickles ``blobs[k]`` and scores it on ``tasks[k]``."""

    tasks: list[Task]
    blobs: list[bytes]

    def __call__(self, k: int, send: Send) -> tuple[str, Any]:
        from learners.metrics import evaluate, pool

        model = pickle.loads(self.blobs[k])
        scores = evaluate(model, self.tasks[k], ("validate", "test"))
        counts: dict[str, int] = {}
        for split, per_predicate in scores.items():
            counts.update(pool(per_predicate.values()).as_dict(f"{split}_"))
        curve = getattr(model, "learning_curve", None)  # GNN learners: [{epoch, loss, valid_acc}, ...]
        extra: dict[str, Any] = {"learning_curve": curve} if curve else {}
        fallback = getattr(model, "fallback", None)  # ilasp: the loop's cover was incomplete
        if fallback is not None:
            extra["fallback"] = bool(fallback)
        return "ok", {"counts": counts, "extra": extra}


def run_jobs(
    jobs: list[Job], tasks: list[Task], limits: JobLimits, on_start: Callable[[int], None] | None = None,
    start_method: str = "fork",
) -> list[dict]:  # fmt: skip
    """Learn each job within its budget in a child, then score its best model in another: rows.

    Status: ``ok`` (the learner returned), ``timeout`` (the deadline passed; the last reported
    model is scored), ``oom`` (a memory cap was hit), ``error`` (an exception, with its
    traceback), ``lost`` (the job's process died of a SIGKILL we did not send: the driver retries).
    ``start_method`` is how the children start (``spawn`` for GPU learners, :func:`start_method_for`).
    """
    latest: dict[int, dict[str, Any]] = {}

    def keep(message: Any) -> None:
        if isinstance(message, Start) and on_start is not None:
            on_start(message.item)  # job i now runs on this slot (the ones after it still wait)
        if isinstance(message, ModelReport):
            entry = latest.setdefault(message.item, {"reports": 0})
            entry.update(bytes=message.blob, describe=message.describe, rules=message.rules)
            entry["reports"] += 1

    gpu = limits.gpu_memory_bytes if start_method == "spawn" else None
    learned = run_supervised(
        len(jobs), LearnJobs(jobs, tasks), lambda i: jobs[i].budget_s, limits.memory_bytes, keep,
        start_method=start_method, gpu_memory_bytes=gpu,
    )  # fmt: skip
    rows = []
    for i, (job, out) in enumerate(zip(jobs, learned, strict=True)):
        entry = latest.setdefault(i, {"reports": 0})
        rows.append(_learned_row(job, tasks[i], out, entry, start_method))

    to_score = [i for i, r in enumerate(rows) if r["status"] in FINAL_STATUSES and "bytes" in latest[i]]
    work = ScoreModels([tasks[i] for i in to_score], [latest[i]["bytes"] for i in to_score])
    scored = run_supervised(
        len(to_score), work, lambda k: limits.eval_timeout_s, limits.memory_bytes, start_method=start_method,
        gpu_memory_bytes=gpu,
    )  # fmt: skip
    for i, out in zip(to_score, scored, strict=True):
        row = rows[i]
        row["eval_s"], row["finished"] = out.seconds, out.ended
        if out.peak_gpu:
            row["peak_gpu"] = max(row.get("peak_gpu") or 0, out.peak_gpu)
        _note_device(row["extra"], out, start_method)  # a learner killed at its budget said nothing
        if out.kind == "ok":
            row.update(out.payload["counts"])
            row["extra"].update(out.payload["extra"])
        else:
            reason = out.payload if out.kind in ("error", "oom") else f"{out.kind} (signal {out.signal})"
            row["status"], row["error"] = "error", f"scoring the model failed: {reason}"
    return rows


def _note_device(extra: dict[str, Any], out: Outcome, start_method: str) -> None:
    """Where a GPU learner's job ran, as its child saw it (``extra.device``): ``cuda (NAME)`` once a
    child computed on a GPU, else ``cpu`` from a spawned child that ended its item itself."""
    if out.gpu:
        extra["device"] = device_label(out.gpu)
    elif start_method == "spawn" and out.kind in ("ok", "error") and "device" not in extra:
        extra["device"] = device_label(None)


def _learned_row(job: Job, task: Task, out: Outcome, entry: dict[str, Any], start_method: str) -> dict:
    """The row of a job after learning (``entry``: its latest reported model, updated with the final one)."""
    extra: dict[str, Any] = {"reports": entry["reports"]}
    if start_method != "fork":
        extra["start_method"] = start_method
    _note_device(extra, out, start_method)
    if (nice := os.getpriority(os.PRIO_PROCESS, 0)) != 0:  # a niced job slows down beside other work
        extra["nice"] = nice
    row: dict[str, Any] = result_row(
        job.job_id, learn_s=out.seconds, peak_rss=out.peak_rss, peak_gpu=out.peak_gpu or None, extra=extra,
        started=out.began, finished=out.ended,
    )  # fmt: skip
    if out.kind == "ok":
        entry.update(bytes=out.payload[0], describe=out.payload[1], rules=out.payload[2])
        # a learner that stopped itself at its budget was cut by it all the same (learners.base.budget_cut)
        row["status"] = "timeout" if out.payload[3] else "ok"
        if out.payload[3]:
            extra["cut_by"] = out.payload[3]
    elif out.kind == "timeout":  # killed at the wall-clock budget
        from learners.base import CUT_BY_CLOCK

        row["status"], extra["cut_by"] = "timeout", CUT_BY_CLOCK
        if "bytes" not in entry:
            row["error"] = "the budget ran out before the learner reported any model"
    elif out.kind in ("error", "oom"):
        row["status"], row["error"] = out.kind, out.payload
    else:
        row["status"], why = out.died()
        row["error"] = f"{job.label()}: {why}"
    if row["status"] in FINAL_STATUSES and "bytes" in entry:
        row["program"], row["description"] = entry["rules"], entry["describe"]
    try:
        row["extra"]["all_false"] = all_false_counts(task)
    except Exception:  # noqa: BLE001 (a task the scorer cannot count must not fail the batch)
        pass
    return row


def all_false_counts(task: Task) -> dict[str, int]:
    """The counts of predicting false for every atom (validate and test), kept with every row.

    Why: a job that errored, or timed out before any model, is scored as this (never left out);
    storing it with the row lets reports do so from the store alone (``extra.all_false``).
    """
    import scipy.sparse as sp

    from learners.metrics import count, pool

    out: dict[str, int] = {}
    for name in ("validate", "test"):
        if name in task.splits:
            split = task.splits[name]
            nothing = sp.csr_matrix((split.n_examples, len(task.target_atoms)), dtype=bool)
            out.update(pool(count(task, split, nothing).values()).as_dict(f"{name}_"))
    return out


# --- the Ray actor -------------------------------------------------------------------------------


def _now() -> datetime:
    return datetime.now(UTC)


class TaskCache:
    """The few most recently used tasks of this actor, keyed by (dataset, game, target)."""

    def __init__(self, size: int = 4) -> None:
        self.size = size
        self.tasks: OrderedDict[tuple[str, str, str], Task] = OrderedDict()
        self.sources: dict[str, Any] = {}
        self.loads = 0

    def get(self, job: Job) -> Task:
        key = job.task_key
        if key in self.tasks:
            self.tasks.move_to_end(key)
            return self.tasks[key]
        from tasks.sources import open_source

        source = self.sources.get(job.dataset) or self.sources.setdefault(
            job.dataset, open_source(job.dataset)
        )
        task = source.load_task(job.game, job.target)
        self.loads += 1
        self.tasks[key] = task
        while len(self.tasks) > self.size:
            self.tasks.popitem(last=False)
        return task


def node_name() -> str:
    """Where this actor runs, for the rows' ``node`` column: host and Ray node id."""
    try:
        import ray

        # outside Ray (tests, a runner used in-process) asking would start a Ray: do not
        node = ray.get_runtime_context().get_node_id()[:12] if ray.is_initialized() else "local"
    except Exception:
        node = "local"
    return f"{socket.gethostname()}/{node}"


class JobRunner:
    """The body of a learner actor: runs batches of jobs, one forked child per job.

    Wrapped with ``ray.remote`` by the scheduler (so this module imports without Ray).
    """

    def __init__(self, limits: JobLimits) -> None:
        self.limits = limits
        self.cache = TaskCache()
        self.node = node_name()
        self.current: tuple[str, float] | None = None

    def info(self) -> dict:
        """Who this actor is; ``cuda_initialised`` must stay False (GPU work happens in spawned children)."""
        return {
            "pid": os.getpid(), "node": self.node, "task_loads": self.cache.loads,
            "cuda_initialised": cuda_initialised(),
        }  # fmt: skip

    def current_job(self) -> tuple[str, float] | None:
        """(job id, wall-clock start) of the job learning on this slot now, None between jobs.

        The scheduler polls it to tell running jobs from those waiting behind them in a batch; it
        answers while ``run`` is busy because the actor is started with two threads.
        """
        return self.current

    def run(self, jobs: list[Job]) -> list[dict]:
        """Rows for ``jobs`` (one per job, in order); a task that fails to load fails only its jobs."""
        rows, ready, load_s = [], [], {}
        for job in jobs:
            try:
                t0, loads = time.monotonic(), self.cache.loads
                # Repeat r > 0 learns from a seeded 80% subsample of train (variance for orch select).
                task = self.cache.get(job).for_predicate(job.predicate).resample_train(job.repeat)
                if self.cache.loads > loads:  # this job paid for loading the task: say so
                    load_s[job.job_id] = time.monotonic() - t0
            except Exception as e:
                now = _now()
                first = (
                    (str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)).strip().splitlines()
                )
                rows.append(
                    result_row(job.job_id, status="error", started=now, finished=now, node=self.node,
                               error=f"bad input: {first[0] if first else type(e).__name__}\n" + traceback.format_exc(),
                               extra={"failure": INPUT_FAILURE})
                )  # fmt: skip
                continue
            skip = _not_applicable(job, task)
            if skip is not None:
                now = _now()
                rows.append(result_row(job.job_id, status=NOT_APPLICABLE, started=now, finished=now,
                                       node=self.node, error=skip, extra={}))  # fmt: skip
                continue
            ready.append((job, task))
        if ready:
            done = []
            try:
                for method, group in _by_start_method(ready).items():
                    group_jobs = [j for j, _ in group]

                    def started(i: int, group_jobs: list[Job] = group_jobs) -> None:
                        self.current = (group_jobs[i].job_id, time.time())

                    done += run_jobs(group_jobs, [t for _, t in group], self.limits, started, method)
            finally:
                self.current = None
            for row in done:
                if row["job_id"] in load_s:
                    row["extra"]["load_s"] = round(load_s[row["job_id"]], 4)
                rows.append(dict(row, node=self.node))
        order = {j.job_id: i for i, j in enumerate(jobs)}
        return sorted(rows, key=lambda r: order[r["job_id"]])


def _by_start_method(ready: list[tuple[Job, Task]]) -> dict[str, list[tuple[Job, Task]]]:
    """The ready jobs grouped by how their children start (fork, or spawn for GPU learners), in order."""
    groups: dict[str, list[tuple[Job, Task]]] = {}
    for job, task in ready:
        groups.setdefault(start_method_for(job.learner), []).append((job, task))
    return groups


def _not_applicable(job: Job, task: Task) -> str | None:
    """Why ``job``'s learner does not apply to its task (its ``applies`` hook), or None."""
    from learners.base import learner_applies, make_learner

    try:
        ok, reason = learner_applies(make_learner(job.learner), task)
    except Exception:  # noqa: BLE001 (a broken hook: run the job, whose row will show the failure)
        return None
    return None if ok else reason


# --- generation jobs (GDL playouts), for `orch games generate --all` -------------------------------


def generate_one(game_file: str, types_file: str, out: str, episodes: int, steps: int, seed: int,
                 timeout_s: float | None = None, memory_bytes: int | None = None,
                 record_key: dict | None = None) -> dict:  # fmt: skip
    """Generate one game's tasks in a supervised child: a hostile or broken GDL file fails only itself.

    Returns ``{"game", "status" (ok|error|oom|timeout|lost), "error", **GeneratedGame.as_dict()}``.
    With ``record_key`` (`tasks.corpus.record_key`) the result is also recorded in ``out`` as soon
    as the game ends, so that a rerun after a crash does not generate it again.
    """
    result = _generate_supervised(game_file, types_file, out, episodes, steps, seed, timeout_s, memory_bytes)
    if record_key is not None:
        from tasks.corpus import write_record

        write_record(out, record_key, result, time_limit=timeout_s, memory_cap=memory_bytes)
    return result


def _generate_supervised(game_file: str, types_file: str, out: str, episodes: int, steps: int, seed: int,
                         timeout_s: float | None, memory_bytes: int | None) -> dict:  # fmt: skip
    def work(i: int, send: Send) -> tuple[str, Any]:
        from tasks.generate import generate_game

        return "ok", generate_game(game_file, types_file, out, episodes, steps, seed).as_dict()

    outcome = run_one(work, float("inf") if timeout_s is None else timeout_s, memory_bytes)
    game = os.path.splitext(os.path.basename(game_file))[0]
    if outcome.kind == "ok":
        return {"game": game, "status": "ok", "error": None, **outcome.payload}
    if outcome.kind in ("error", "oom"):
        return {"game": game, "status": outcome.kind, "error": outcome.payload}
    if outcome.kind == "timeout":
        return {"game": game, "status": "timeout", "error": f"generation ran past {timeout_s}s"}
    status, why = outcome.died()
    return {"game": game, "status": status, "error": f"generating {game}: {why}"}
