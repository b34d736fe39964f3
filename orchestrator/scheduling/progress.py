"""What a running sweep shows: a live rich panel on a terminal, one plain line per job elsewhere.

The live panel gives jobs by status, throughput, an ETA and the slowest running jobs. Off a TTY
(CI logs, ``nohup``) a redraw would be noise, so each finished job prints one line instead, plus a
one-line summary with the ETA every ``every`` seconds. With ``--json`` nothing is printed while
running; the command prints one summary object at the end.

*Running* means learning on a worker slot now, as the worker itself reports (the scheduler polls
it): a job sent to a worker in a batch waits there behind the jobs before it and is *queued* until
it starts, so "running" never exceeds the slots and "running for" is the job's own time.
While Ray and the workers come up, the display says so instead of showing a silent 0/N.
"""

from __future__ import annotations

import sys
import time
from collections import Counter, deque
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from orchestrator.scheduling.scheduler import SilentProgress, SweepResult
from orchestrator.scheduling.sweep import Job
from orchestrator.storage.schema import INFRA_STATUSES
from orchestrator.storage.store import DEFAULT_STORE

STATUS_STYLE = {
    "ok": "green",
    "timeout": "yellow",
    "oom": "magenta",
    "error": "red",
    "lost": "red",
    "killed": "red",  # what stores before `lost` recorded for it
    "not_applicable": "dim",
}


MOVING_JOBS = 20
"""Finished jobs whose mean duration the ETA uses (a moving average: it follows the sweep's phases)."""


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class _Tally:
    """Counts, throughput and ETA, shared by both displays."""

    def __init__(self) -> None:
        self.total = self.skipped = 0
        self.done: Counter[str] = Counter()
        self.running: dict[str, tuple[Job, float]] = {}  # job id -> (job, wall-clock start)
        self.t0 = time.monotonic()
        self.phase: str | None = None  # what the sweep waits for before its first job (Ray, workers)
        self.phase_t0 = time.monotonic()
        self.begun = False
        self.recent: deque[float] = deque(maxlen=MOVING_JOBS)  # seconds of the last finished jobs
        self.slots = 0  # the most jobs seen learning at once: the sweep's parallelism

    def begin(self, total: int, skipped: int) -> None:
        self.total, self.skipped, self.t0 = total, skipped, time.monotonic()

    def _first(self) -> None:
        if not self.begun:
            self.begun, self.phase = True, None
            self.t0 = time.monotonic()  # throughput counts from the first job, not from Ray's start-up

    def start(self, job: Job, since: float) -> None:
        self._first()
        self.running[job.job_id] = (job, since)
        self.slots = max(self.slots, len(self.running))

    def end(self, job: Job) -> None:
        self.running.pop(job.job_id, None)

    def finish(self, job: Job, status: str, seconds: float | None = None) -> None:
        self._first()
        self.running.pop(job.job_id, None)
        self.done[status] += 1
        if seconds is not None:
            self.recent.append(max(0.0, seconds))

    @property
    def finished(self) -> int:
        return sum(self.done.values())

    @property
    def queued(self) -> int:
        """Jobs not finished and not learning now: waiting in a worker's batch or not yet sent."""
        return max(0, self.total - self.finished - len(self.running))

    def waiting(self) -> str:
        """The start-up phase with how long the sweep has waited so far: ``starting the workers (7s)``."""
        return f"{self.phase} ({_duration(time.monotonic() - self.phase_t0)})"

    def line(self) -> str:
        """``12/68 done, running 2, queued 54, 0.5 jobs/s, ETA 1m50s`` (or what it waits for)."""
        if self.phase and not self.begun:
            return f"0/{self.total} done: {self.waiting()}"
        return (
            f"{self.finished}/{self.total} done, running {len(self.running)}, queued {self.queued}, "
            f"{self.rate():.1f} jobs/s, ETA {self.eta()}"
        )

    def rate(self) -> float:
        # at least 1 s: a first job that ends within milliseconds is not "300 jobs/s"
        return self.finished / max(1.0, time.monotonic() - self.t0)

    def eta_seconds(self) -> float | None:
        """Seconds left: remaining jobs x the moving average per job / the parallel slots, and no less
        than the remaining jobs at the throughput so far (which counts the overhead between jobs).

        Why both: throughput alone is optimistic when the first jobs are the quick ones (trivial
        predicates, not-applicable jobs), and the per-job average alone misses the time a worker
        spends between jobs. None before any job finished."""
        remaining = self.total - self.finished
        if remaining <= 0:
            return 0.0
        rate = self.rate()
        by_rate = remaining / rate if rate > 0 else None
        by_jobs = None
        if self.recent:
            by_jobs = remaining * (sum(self.recent) / len(self.recent)) / max(1, self.slots)
        known = [x for x in (by_rate, by_jobs) if x is not None]
        return max(known) if known else None

    def eta(self) -> str:
        left = self.eta_seconds()
        return "?" if left is None else _duration(left)


class _Slots:
    """What both displays do when a job is sent to a worker, starts on its slot and leaves it."""

    tally: _Tally

    def running(self, jobs: Sequence[Job]) -> None:
        self.tally._first()  # sent to a worker (queued there until it starts): the workers are up

    def started(self, job: Job, since: float) -> None:
        self.tally.start(job, since)

    def ended(self, job: Job) -> None:
        self.tally.end(job)


class PlainProgress(_Slots):
    """One line per finished job and a progress line with the ETA every ``every`` s (logs, pipes)."""

    def __init__(self, stream: TextIO | None = None, every: float = 30.0) -> None:
        self.stream = stream or sys.stdout
        self.tally = _Tally()
        self.every = every
        self.said = time.monotonic()

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def begin(self, total: int, skipped: int) -> None:
        self.tally.begin(total, skipped)
        self.said = time.monotonic()
        self._print(f"{total} job(s) to run, {skipped} already stored")

    def starting(self, text: str) -> None:
        self.tally.phase, self.tally.phase_t0 = text, time.monotonic()
        self._print(f"{text}...")

    def finished(self, job: Job, row: dict) -> None:
        took = (row.get("learn_s") or 0.0) + (row.get("eval_s") or 0.0)
        self.tally.finish(job, row["status"], took)
        t = self.tally
        print(
            f"[{t.finished}/{t.total}] {row['status']:<7} {job.label()} {took:.2f}s job={job.job_id}",
            file=self.stream,
            flush=True,
        )

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.said >= self.every:
            self.said = now
            self._print(f"progress: {self.tally.line()}")

    def end(self, result: SweepResult) -> None:
        self._print(summary_line(result))


class LiveProgress(_Slots):
    """A rich live panel, redrawn a few times a second."""

    def __init__(self, console: Console | None = None, slowest: int = 5) -> None:
        self.console = console or Console()
        self.tally = _Tally()
        self.slowest = slowest
        self.live = Live(console=self.console, refresh_per_second=4, transient=False)
        self.drawn = 0.0

    def begin(self, total: int, skipped: int) -> None:
        self.tally.begin(total, skipped)
        self.live.start()
        self.live.update(self.render())

    def starting(self, text: str) -> None:
        self.tally.phase, self.tally.phase_t0 = text, time.monotonic()
        self.live.update(self.render())

    def finished(self, job: Job, row: dict) -> None:
        self.tally.finish(job, row["status"], (row.get("learn_s") or 0.0) + (row.get("eval_s") or 0.0))

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.drawn >= 0.25:
            self.drawn = now
            self.live.update(self.render())

    def render(self, final: bool = False) -> Group:
        t = self.tally
        if t.phase and not t.begun:
            return Group(Text(f"0/{t.total} done  ") + Text(t.waiting(), style="dim"))
        head = Text(f"{t.finished}/{t.total} done")
        head.append(f"  ({t.skipped} already stored)  {t.rate():.1f} jobs/s  ETA {t.eta()}  ", style="dim")
        head.append(f"running {len(t.running)}  queued {t.queued}")
        counts = Text()
        for status, n in sorted(t.done.items()):
            counts.append(f"{status} {n}  ", style=STATUS_STYLE.get(status, ""))
        if final or not t.running:
            return Group(head, counts)  # no empty "slowest running jobs" table, ever
        table = Table(title="slowest running jobs", title_justify="left", box=None, pad_edge=False)
        table.add_column("job")
        table.add_column("running for", justify="right")
        table.add_column("budget", justify="right")
        now = time.time()
        for job, since in sorted(t.running.values(), key=lambda x: x[1])[: self.slowest]:
            table.add_row(job.label(), _duration(now - since), _duration(job.budget_s))
        return Group(head, counts, table)

    def end(self, result: SweepResult) -> None:
        self.live.update(self.render(final=True))
        self.live.stop()
        self.console.print(summary_line(result))


QuietProgress = SilentProgress
"""No output while running (``--json``)."""


def summary_line(result: SweepResult) -> str:
    statuses = ", ".join(f"{s} {n}" for s, n in sorted(result.statuses.items())) or "nothing run"
    stop = " (interrupted: rerun the same command to finish)" if result.interrupted else ""
    return (
        f"{result.finished} job(s) finished in {_duration(result.wall_s)} ({statuses}); "
        f"{result.skipped} already stored{stop}"
    )


def next_steps(
    store: str, result: SweepResult, stored_before: int | None = None, sweep: str | None = None
) -> str:
    """Where the results are and what to run next: the lines printed after a sweep.

    ``stored_before``: the sweep's jobs that had a row before this run, re-run or not (``--retry-failed``
    re-runs stored errors, so the jobs skipped undercount them); ``sweep``: its name, for ``--sweep``.
    """
    from orchestrator.storage.store import runnable_uri

    where, had_secret = runnable_uri(store)
    arg = f" --store {where}" if where != DEFAULT_STORE else ""
    counts = ", ".join(f"{s} {n}" for s, n in sorted(result.statuses.items())) or "nothing new"
    before = result.skipped if stored_before is None else max(stored_before, result.skipped)
    again = before - result.skipped
    rerun = f", {again} of them run again" if again > 0 else ""
    named = f"sweep {sweep}: " if sweep else ""
    lines = [f"results: {named}{where} ({counts}; {before} stored before{rerun})"]
    if had_secret:
        lines.append(
            "(credentials removed from the store URI: the commands below take yours from the environment)"
        )
    if result.elsewhere:  # another `orch run` on the same store took part: its counts are not in ours
        lines.append(
            f"another driver on this store ran {result.elsewhere} job(s) of this sweep meanwhile "
            f"(they are stored, not counted above: orch status{arg} counts every job)"
        )
    commands = [
        (f"orch status{arg}", "done, failed and remaining jobs per learner"),
        (f"orch report{arg}", "the result tables (--format md, csv or json)"),
        (f"orch report{arg} --html report.html", "one page with the tables and figures"),
    ]
    failed = result.statuses.get("error", 0)
    infra = sum(n for s, n in result.statuses.items() if s in INFRA_STATUSES)
    if infra:  # resume always re-runs these: not the learner's doing
        commands.append(
            ("the same orch run ...", f"re-run the {infra} job(s) lost to memory or a dead worker")
        )
    if failed:
        commands.append(("the same orch run ... --retry-failed", f"also re-run the {failed} failed job(s)"))
    width = max(len(c) for c, _ in commands)
    lines.append("next:")
    lines += [f"  {c.ljust(width)}  # {why}" for c, why in commands]
    return "\n".join(lines)


def make_progress(json_output: bool = False, stream: TextIO | None = None):
    """The right display for where output goes: live on a TTY, plain lines otherwise."""
    if json_output:
        return QuietProgress()
    stream = stream or sys.stdout
    return LiveProgress() if stream.isatty() else PlainProgress(stream)
