"""What a person sees while a sweep runs and after it: rendered displays, fed the scheduler's events."""

from __future__ import annotations

import io
import time

from rich.console import Console

from orchestrator.scheduling.progress import LiveProgress, PlainProgress, next_steps
from orchestrator.scheduling.scheduler import SweepResult
from orchestrator.scheduling.sweep import Job


def _job(i: int, budget: float = 60.0) -> Job:
    return Job(f"j{i}", "bundled", "fp", "pennies", "next", f"next_p{i}", "knn5", "{}", 0, 0, budget)


def _screen(progress: LiveProgress) -> str:
    out = io.StringIO()
    Console(file=out, width=120, color_system=None).print(progress.render())
    return out.getvalue()


def test_live_panel_counts_started_jobs_as_running_and_the_rest_as_queued():
    live = LiveProgress(Console(file=io.StringIO(), width=120))
    jobs = [_job(i) for i in range(4)]
    live.tally.begin(4, 0)
    live.starting("starting a local Ray")
    assert "starting a local Ray" in _screen(live) and "ETA" not in _screen(live)
    live.running(jobs)  # all four sent to workers in batches: none has started
    live.started(jobs[0], time.time() - 42)
    live.started(jobs[2], time.time())
    screen = _screen(live)
    assert "running 2  queued 2" in screen
    assert "slowest running jobs" in screen and " 42s" in screen and "1m00s" in screen
    assert "next_p1" not in screen and "next_p3" not in screen  # queued jobs show no time
    live.ended(jobs[0])
    live.finished(jobs[0], {"status": "ok"})
    live.finished(jobs[2], {"status": "timeout"})
    screen = _screen(live)
    assert "2/4 done" in screen and "running 0  queued 2" in screen
    assert "slowest running jobs" not in screen  # never an empty table


def test_plain_progress_prints_phases_and_a_periodic_line_with_an_eta():
    out = io.StringIO()
    plain = PlainProgress(out, every=0.0)
    jobs = [_job(i) for i in range(3)]
    plain.begin(3, 1)
    plain.starting("starting a local Ray")
    plain.tick()
    plain.running(jobs)
    plain.started(jobs[0], time.time())
    plain.finished(jobs[0], {"status": "ok", "learn_s": 0.5, "eval_s": 0.1})
    plain.started(jobs[1], time.time())
    time.sleep(0.01)
    plain.tick()
    lines = out.getvalue().splitlines()
    assert lines[0] == "3 job(s) to run, 1 already stored"
    assert lines[1] == "starting a local Ray..."
    assert lines[2] == "progress: 0/3 done: starting a local Ray (0s)"
    assert lines[3].startswith("[1/3] ok") and "job=j0" in lines[3]
    assert lines[4].startswith("progress: 1/3 done, running 1, queued 1, ") and "ETA " in lines[4]
    assert "ETA ?" not in lines[4]


def test_next_steps_say_where_the_results_are_and_what_to_run():
    result = SweepResult(10, 2, {"ok": 6, "timeout": 1, "error": 1}, 12.0, 30.0)
    text = next_steps("/tmp/my-store", result)
    assert text.splitlines()[0] == "results: /tmp/my-store (error 1, ok 6, timeout 1; 2 stored before)"
    assert "orch status --store /tmp/my-store" in text
    assert "orch report --store /tmp/my-store --html report.html" in text
    assert "--retry-failed" in text and "1 failed" in text and "lost to memory" not in text
    infra = next_steps("./s", SweepResult(10, 0, {"ok": 7, "lost": 2, "oom": 1}, 1.0, 1.0))
    assert "re-run the 3 job(s) lost to memory or a dead worker" in infra and "--retry-failed" not in infra
    interrupted = next_steps("./orch-results", SweepResult(10, 0, {"ok": 3}, 1.0, 1.0, interrupted=True))
    assert "--store" not in interrupted
