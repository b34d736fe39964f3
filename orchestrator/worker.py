"""Where a job runs: a Ray actor that caches tasks and runs each job in a forked, killable child.

Why a forked child per job (and not ``ray.cancel(force=True)`` on the actor's task):

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
* A memory cap is ``RLIMIT_AS`` set in the child: allocation fails with ``MemoryError`` (``oom``).

The actor returns plain row dicts; only the driver writes to the store, so a worker orphaned by a
killed driver can never write a duplicate row.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import socket
import struct
import sys
import time
import traceback
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.schema import FINAL_STATUSES
from orchestrator.sweep import Job
from tasks.task import Task

_HEADER = struct.Struct("!Q")

JOB_PROCESS_ENV = "ORCH_JOB_PARENT"
"""Set in every job process to the pid of the actor that forked it."""


@dataclass(frozen=True)
class JobLimits:
    """How a job is confined: extra address space allowed to it, and how long scoring may take."""

    memory_bytes: int | None = None
    eval_timeout_s: float = 600.0


# --- the pipe protocol between a child and the actor -------------------------------------------


def _send(fd: int, message: tuple) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


class _Reader:
    """Reads length-prefixed pickled messages from a pipe without ever blocking past a deadline."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buf, self.eof = fd, bytearray(), False

    def read(self, deadline: float) -> list[tuple] | None:
        """Messages that arrived before ``deadline``; None once the deadline passed with nothing new."""
        wait = deadline - time.monotonic()
        if wait <= 0:
            return None
        # select() takes no infinite timeout: an unlimited deadline waits in one-hour slices.
        ready, _, _ = select.select([self.fd], [], [], min(wait, 3600.0))
        if not ready:
            return None
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            self.eof = True
        self.buf += chunk
        out = []
        while len(self.buf) >= _HEADER.size:
            (n,) = _HEADER.unpack_from(self.buf)
            if len(self.buf) < _HEADER.size + n:
                break
            out.append(pickle.loads(bytes(self.buf[_HEADER.size : _HEADER.size + n])))
            del self.buf[: _HEADER.size + n]
        return out


def _fork(body: Callable[[int], None], memory_bytes: int | None) -> tuple[int, int]:
    """Fork a child that runs ``body(write_fd)`` in its own process group; returns (pid, read_fd)."""
    rfd, wfd = os.pipe()
    limit = None
    if memory_bytes is not None:  # the cap is on top of what the actor already maps
        import psutil

        limit = psutil.Process().memory_info().vms + memory_bytes
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the actor's atexit handlers
        code = 0
        try:
            os.close(rfd)
            os.setpgid(0, 0)
            _die_with_parent(parent)
            os.environ[JOB_PROCESS_ENV] = str(parent)
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_DFL)
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            body(wfd)
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    os.close(wfd)
    return pid, rfd


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this child when the actor dies (a killed actor leaves no orphan solve)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the actor died before prctl took effect
        os._exit(1)


def _kill_group(pid: int) -> None:
    for kill in (os.killpg, os.kill):
        try:
            kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _oom_like(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or "bad_alloc" in str(exc) or "Cannot allocate memory" in str(exc)


# --- learning and scoring in children ----------------------------------------------------------


def _reset_peak_rss() -> None:
    """Restart the kernel's resident-set high-water mark, so each job of a child gets its own peak."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _peak_rss() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


Work = Callable[[int, Callable[[tuple], None]], tuple[str, Any]]
"""``work(i, send)`` does item i in the child and returns (kind, payload); ``send`` streams extras."""


def _child_loop(work: Work, start: int, n: int) -> Callable[[int], None]:
    def body(fd: int) -> None:
        def send(message: tuple) -> None:
            _send(fd, message)

        for i in range(start, n):
            _send(fd, ("start", i, time.monotonic()))  # CLOCK_MONOTONIC is system-wide on Linux
            _reset_peak_rss()
            try:
                kind, payload = work(i, send)
            except BaseException as exc:
                kind, payload = ("oom" if _oom_like(exc) else "error"), traceback.format_exc()
            _send(fd, ("end", i, kind, payload, _peak_rss(), time.monotonic()))
            if kind == "oom":
                return  # the heap may be in a bad state: the next item gets a fresh child

    return body


@dataclass
class Outcome:
    """How one item ended: ``kind`` is what the child said (ok, error, oom) or timeout / died."""

    kind: str
    payload: Any
    seconds: float
    peak_rss: int
    signal: int | None = None
    began: datetime | None = None
    ended: datetime = field(default_factory=lambda: datetime.now(UTC))


def run_supervised(
    n: int, work: Work, seconds_for: Callable[[int], float], memory_bytes: int | None,
    on_message: Callable[[tuple], None] = lambda m: None,
) -> list[Outcome]:  # fmt: skip
    """Run items 0..n-1 one after another in forked children, each item under its own deadline.

    One child serves many items (a fork costs milliseconds, which would dominate tiny jobs). When an
    item overruns its deadline the child's process group is SIGKILLed and a fresh child carries on
    with the next item; the same happens when a child dies under an item.
    """
    outcomes: dict[int, Outcome] = {}
    start = 0
    while start < n:
        pid, fd = _fork(_child_loop(work, start, n), memory_bytes)
        reader, current, began, began_at = _Reader(fd), None, time.monotonic(), _now()
        deadline, timed_out = began + _IDLE_GUARD_S, False
        try:
            while not reader.eof:
                messages = reader.read(deadline)
                if messages is None:
                    timed_out = True
                    _kill_group(pid)
                    break
                for m in messages:
                    if m[0] == "start":
                        # the child's own clock: the deadline does not slip when this process lags
                        current, began = m[1], m[2]
                        began_at = _now() - timedelta(seconds=time.monotonic() - began)
                        deadline = began + seconds_for(current)
                    elif m[0] == "end":
                        outcomes[m[1]] = Outcome(m[2], m[3], m[5] - began, m[4], None, began_at)
                        current, deadline = None, time.monotonic() + _IDLE_GUARD_S
                    else:
                        on_message(m)
        finally:
            os.close(fd)
        # Grandchildren the work may have left behind go too. Before reaping: until then the
        # child's pid (and so its group id) cannot be reused by anybody else's process.
        _kill_group(pid)
        _, status, usage = os.wait4(pid, 0)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        if current is not None:
            kind = "timeout" if timed_out else "died"
            outcomes[current] = Outcome(
                kind, None, time.monotonic() - began, usage.ru_maxrss * 1024, sig, began_at
            )
            start = current + 1
        else:
            done_upto = max((i for i in outcomes if i >= start), default=None)
            if done_upto is None:  # the child died before its first item: record it, move on
                outcomes[start] = Outcome("died", None, 0.0, usage.ru_maxrss * 1024, sig, _now())
                start += 1
            else:
                start = done_upto + 1
    return [outcomes[i] for i in range(n)]


_IDLE_GUARD_S = 60.0
"""A child between two items runs only our own code; if it hangs that long, something is broken."""


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return str(sig)


def _now() -> datetime:
    return datetime.now(UTC)


def seed_everything(seed: int, repeat: int) -> None:
    """Seed Python's, numpy's and (if loaded) torch's global RNGs for one job: its seed and repeat.

    Learners with their own generators should still draw from these, so a job is reproducible.
    """
    import random

    import numpy as np

    value = (seed * 1_000_003 + repeat) % 2**32
    random.seed(value)
    np.random.seed(value)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(value)


def run_jobs(jobs: list[Job], tasks: list[Task], limits: JobLimits) -> list[dict]:
    """Learn each job within its budget in a child, then score its best model in another: rows.

    Status: ``ok`` (the learner returned), ``timeout`` (the deadline passed; the last reported
    model is scored), ``oom`` (the memory cap was hit), ``error`` (an exception, with its
    traceback), ``killed`` (the job's process died of a SIGKILL we did not send: retryable).
    """
    latest: dict[int, dict[str, Any]] = {}

    def learn(i: int, send: Callable[[tuple], None]) -> tuple[str, Any]:
        from learners.base import Budget, make_learner

        job = jobs[i]

        def ship(model: Any) -> None:
            blob = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
            send(("model", i, blob, model.describe(), model.rules()))

        seed_everything(job.seed, job.repeat)
        # the learner gets train and validate only: the test split is not in the object it sees
        model = make_learner(job.learner).fit(tasks[i].learning_view(), Budget(job.budget_s), report=ship)
        return "ok", (pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL), model.describe(), model.rules())

    def keep(message: tuple) -> None:
        if message[0] == "model":
            entry = latest.setdefault(message[1], {"reports": 0})
            entry.update(bytes=message[2], describe=message[3], rules=message[4])
            entry["reports"] += 1

    learned = run_supervised(len(jobs), learn, lambda i: jobs[i].budget_s, limits.memory_bytes, keep)
    rows = []
    for i, (job, out) in enumerate(zip(jobs, learned, strict=True)):
        entry = latest.get(i, {"reports": 0})
        row: dict[str, Any] = {
            "job_id": job.job_id, "learn_s": out.seconds, "peak_rss": out.peak_rss, "model": None,
            "error": None, "extra": {"reports": entry["reports"]}, "started": out.began, "finished": out.ended,
        }  # fmt: skip
        if out.kind == "ok":
            entry.update(bytes=out.payload[0], describe=out.payload[1], rules=out.payload[2])
            row["status"] = "ok"
        elif out.kind == "timeout":
            row["status"] = "timeout"
            if "bytes" not in entry:
                row["error"] = "the budget ran out before the learner reported any model"
        elif out.kind in ("error", "oom"):
            row["status"], row["error"] = out.kind, out.payload
        elif out.signal == signal.SIGKILL:
            row["status"] = "killed"
            row["error"] = f"the job's process was killed (SIGKILL) on {socket.gethostname()}"
        else:
            why = f"signal {_signal_name(out.signal)}" if out.signal else "no result"
            row["status"], row["error"] = "error", f"the job's process died without a result ({why})"
        if row["status"] in FINAL_STATUSES and "bytes" in entry:
            row["model"] = entry["rules"] or entry["describe"]
        try:
            row["extra"]["all_false"] = all_false_counts(tasks[i])
        except Exception:  # noqa: BLE001 (a task the scorer cannot count must not fail the batch)
            pass
        latest[i] = entry
        rows.append(row)

    to_score = [i for i, r in enumerate(rows) if r["status"] in FINAL_STATUSES and "bytes" in latest[i]]

    def score(k: int, send: Callable[[tuple], None]) -> tuple[str, Any]:
        from learners.metrics import evaluate, pool

        i = to_score[k]
        model = pickle.loads(latest[i]["bytes"])
        scores = evaluate(model, tasks[i], ("validate", "test"))
        counts: dict[str, int] = {}
        for split, per_predicate in scores.items():
            counts.update(pool(per_predicate.values()).as_dict(f"{split}_"))
        curve = getattr(model, "learning_curve", None)  # GNN learners: [{epoch, loss, valid_acc}, ...]
        extra: dict[str, Any] = {"learning_curve": curve} if curve else {}
        fallback = getattr(model, "fallback", None)  # ilasp: the loop's cover was incomplete
        if fallback is not None:
            extra["fallback"] = bool(fallback)
        return "ok", {"counts": counts, "extra": extra}

    scored = run_supervised(len(to_score), score, lambda k: limits.eval_timeout_s, limits.memory_bytes)
    for i, out in zip(to_score, scored, strict=True):
        row = rows[i]
        row["eval_s"], row["finished"] = out.seconds, out.ended
        if out.kind == "ok":
            row.update(out.payload["counts"])
            row["extra"].update(out.payload["extra"])
        else:
            reason = out.payload if out.kind in ("error", "oom") else f"{out.kind} (signal {out.signal})"
            row["status"], row["error"] = "error", f"scoring the model failed: {reason}"
    return rows


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


class TaskCache:
    """The few most recently used tasks of this actor, keyed by (dataset, game, target)."""

    def __init__(self, size: int = 4) -> None:
        self.size, self.tasks = size, OrderedDict()
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


class JobRunner:
    """The body of a learner actor: runs batches of jobs, one forked child per job.

    Wrapped with ``ray.remote`` by the scheduler (so this module imports without Ray).
    """

    def __init__(self, limits: JobLimits) -> None:
        self.limits = limits
        self.cache = TaskCache()
        try:
            import ray

            node = ray.get_runtime_context().get_node_id()[:12]
        except Exception:
            node = "local"
        self.node = f"{socket.gethostname()}/{node}"

    def info(self) -> dict:
        return {"pid": os.getpid(), "node": self.node, "task_loads": self.cache.loads}

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
            except Exception:
                now = _now()
                rows.append(
                    {"job_id": job.job_id, "status": "error", "started": now, "finished": now, "node": self.node,
                     "error": f"loading task {job.game}/{job.target} from {job.dataset} failed:\n"
                     + traceback.format_exc(), "extra": {}}
                )  # fmt: skip
                continue
            ready.append((job, task))
        if ready:
            done = run_jobs([j for j, _ in ready], [t for _, t in ready], self.limits)
            for row in done:
                if row["job_id"] in load_s:
                    row["extra"]["load_s"] = round(load_s[row["job_id"]], 4)
                rows.append(dict(row, node=self.node))
        order = {j.job_id: i for i, j in enumerate(jobs)}
        return sorted(rows, key=lambda r: order[r["job_id"]])


# --- generation jobs (GDL playouts), for `orch games generate --all` -------------------------------


def generate_one(game_file: str, types_file: str, out: str, episodes: int, steps: int, seed: int,
                 timeout_s: float | None = None, memory_bytes: int | None = None) -> dict:  # fmt: skip
    """Generate one game's tasks in a supervised child: a hostile or broken GDL file fails only itself.

    Returns ``{"game", "status" (ok|error|oom|timeout|killed), "error", **GeneratedGame.as_dict()}``.
    """

    def work(i: int, send: Callable[[tuple], None]) -> tuple[str, Any]:
        from tasks.generate import generate_game

        return "ok", generate_game(game_file, types_file, out, episodes, steps, seed).as_dict()

    limit = float("inf") if timeout_s is None else timeout_s
    (outcome,) = run_supervised(1, work, lambda i: limit, memory_bytes)
    game = os.path.splitext(os.path.basename(game_file))[0]
    if outcome.kind == "ok":
        return {"game": game, "status": "ok", "error": None, **outcome.payload}
    if outcome.kind in ("error", "oom"):
        return {"game": game, "status": outcome.kind, "error": outcome.payload}
    if outcome.kind == "timeout":
        return {"game": game, "status": "timeout", "error": f"generation ran past {timeout_s}s"}
    why = _signal_name(outcome.signal) if outcome.signal else "no result"
    status = "killed" if outcome.signal == signal.SIGKILL else "error"
    return {"game": game, "status": status, "error": f"the generation process died ({why})"}
