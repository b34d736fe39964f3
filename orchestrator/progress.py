"""What a running sweep shows: a live rich panel on a terminal, one plain line per job elsewhere.

The live panel gives jobs by status, throughput, an ETA and the slowest running jobs. Off a TTY
(CI logs, ``nohup``) a redraw would be noise, so each finished job prints one line instead. With
``--json`` nothing is printed while running; the command prints one summary object at the end.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from orchestrator.scheduler import SilentProgress, SweepResult
from orchestrator.sweep import Job

STATUS_STYLE = {"ok": "green", "timeout": "yellow", "oom": "magenta", "error": "red", "lost": "red"}
STATUS_STYLE["killed"] = "red"  # what stores before `lost` recorded for it


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
        self.running: dict[str, tuple[Job, float]] = {}
        self.t0 = time.monotonic()

    def begin(self, total: int, skipped: int) -> None:
        self.total, self.skipped, self.t0 = total, skipped, time.monotonic()

    def start(self, jobs: Sequence[Job]) -> None:
        now = time.monotonic()
        if not self.running and not self.finished:
            self.t0 = now  # throughput counts from the first job, not from Ray's start-up
        for job in jobs:
            self.running[job.job_id] = (job, now)

    def finish(self, job: Job, status: str) -> None:
        self.running.pop(job.job_id, None)
        self.done[status] += 1

    @property
    def finished(self) -> int:
        return sum(self.done.values())

    def rate(self) -> float:
        elapsed = time.monotonic() - self.t0
        return self.finished / elapsed if elapsed > 0 else 0.0

    def eta(self) -> str:
        rate = self.rate()
        return _duration((self.total - self.finished) / rate) if rate > 0 else "?"


class PlainProgress:
    """One line per finished job (for logs and pipes)."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.tally = _Tally()

    def begin(self, total: int, skipped: int) -> None:
        self.tally.begin(total, skipped)
        print(f"{total} job(s) to run, {skipped} already stored", file=self.stream, flush=True)

    def running(self, jobs: Sequence[Job]) -> None:
        self.tally.start(jobs)

    def finished(self, job: Job, row: dict) -> None:
        self.tally.finish(job, row["status"])
        t = self.tally
        took = (row.get("learn_s") or 0.0) + (row.get("eval_s") or 0.0)
        print(
            f"[{t.finished}/{t.total}] {row['status']:<7} {job.label()} {took:.2f}s job={job.job_id}",
            file=self.stream,
            flush=True,
        )

    def tick(self) -> None:
        pass

    def end(self, result: SweepResult) -> None:
        print(summary_line(result), file=self.stream, flush=True)


class LiveProgress:
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

    def running(self, jobs: Sequence[Job]) -> None:
        self.tally.start(jobs)

    def finished(self, job: Job, row: dict) -> None:
        self.tally.finish(job, row["status"])

    def tick(self) -> None:
        now = time.monotonic()
        if now - self.drawn >= 0.25:
            self.drawn = now
            self.live.update(self.render())

    def render(self) -> Group:
        t = self.tally
        head = Text(f"{t.finished}/{t.total} done")
        head.append(f"  ({t.skipped} already stored)  {t.rate():.1f} jobs/s  ETA {t.eta()}  ", style="dim")
        head.append(f"running {len(t.running)}")
        counts = Text()
        for status, n in sorted(t.done.items()):
            counts.append(f"{status} {n}  ", style=STATUS_STYLE.get(status, ""))
        table = Table(title="slowest running jobs", title_justify="left", box=None, pad_edge=False)
        table.add_column("job")
        table.add_column("running for", justify="right")
        table.add_column("budget", justify="right")
        now = time.monotonic()
        for job, since in sorted(t.running.values(), key=lambda x: x[1])[: self.slowest]:
            table.add_row(job.label(), _duration(now - since), _duration(job.budget_s))
        return Group(head, counts, table)

    def end(self, result: SweepResult) -> None:
        self.live.update(self.render())
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


def make_progress(json_output: bool = False, stream: TextIO | None = None):
    """The right display for where output goes: live on a TTY, plain lines otherwise."""
    if json_output:
        return QuietProgress()
    stream = stream or sys.stdout
    return LiveProgress() if stream.isatty() else PlainProgress(stream)
