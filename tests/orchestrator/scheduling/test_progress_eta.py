"""Issue 28's end-of-sweep and ETA items: a sane ETA, the right "stored before", the other driver."""

from __future__ import annotations

import time

from orchestrator.scheduling.progress import _Tally, next_steps
from orchestrator.scheduling.scheduler import SweepResult
from orchestrator.scheduling.sweep import Job


def _job(i: int) -> Job:
    return Job(f"j{i}", "bundled", "fp", "pennies", "next", f"next_p{i}", "knn5", "{}", 0, 0, 60.0)


def test_eta_is_remaining_jobs_times_the_moving_average_over_the_slots() -> None:
    """Half the jobs done quickly (throughput says little is left) while the recent jobs take 4 s on
    2 slots: 34 jobs left are about 34 x 4 / 2 = 68 s, not the seconds the throughput suggests."""
    tally = _Tally()
    tally.begin(68, 0)
    jobs = [_job(i) for i in range(68)]
    tally.start(jobs[0], time.time())
    tally.start(jobs[1], time.time())  # two slots seen at once
    for i in range(34):
        tally.finish(jobs[i], "ok", 0.01 if i < 20 else 4.0)
    tally.t0 = time.monotonic() - 10  # 34 jobs in 10 s: throughput alone would say 10 s left
    left = tally.eta_seconds()
    assert left is not None
    mean = (6 * 0.01 + 14 * 4.0) / 20  # the last 20 jobs (a moving average)
    assert abs(left - 34 * mean / 2) < 0.5
    assert left > 34 / (34 / 10)  # more than the throughput's guess


def test_eta_falls_back_to_throughput_and_is_unknown_before_any_job() -> None:
    tally = _Tally()
    tally.begin(4, 0)
    assert tally.eta() == "?"
    tally.finish(_job(0), "ok")  # no duration known: throughput only
    assert tally.eta_seconds() is not None and tally.eta() != "?"


def test_next_steps_count_stored_errors_that_retry_failed_runs_again_and_the_other_driver() -> None:
    result = SweepResult(4, 0, {"ok": 4}, 3.0, 2.0, elsewhere=2)
    text = next_steps("/tmp/s", result, stored_before=4, sweep="sweep-abc")
    first = text.splitlines()[0]
    assert first == "results: sweep sweep-abc: /tmp/s (ok 4; 4 stored before, 4 of them run again)"
    assert "another driver on this store ran 2 job(s) of this sweep" in text
    alone = next_steps("/tmp/s", SweepResult(4, 4, {}, 1.0, 0.0), stored_before=4)
    assert "4 stored before)" in alone and "another driver" not in alone
