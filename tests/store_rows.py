"""A complete, plausible result row for tests that write a store by hand (no Ray run needed)."""

from __future__ import annotations

import datetime as dt

from orchestrator.storage.schema import COUNT_COLUMNS, ResultRow, result_row

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def row(job_id: str, attempt: int = 1, status: str = "ok", **kw) -> ResultRow:
    """A complete, plausible result row, built by the one row constructor."""
    return result_row(**raw_row(job_id, attempt, status, **kw))


def raw_row(job_id: str, attempt: int = 1, status: str = "ok", **kw) -> dict:
    """The same as a plain dict, unchecked: what a library user may hand the store directly."""
    base = {
        "sweep": "s1",
        "job_id": job_id,
        "dataset": "/data/iggp",
        "dataset_fingerprint": "fp",
        "game": "minimal_decay",
        "target": "next",
        "predicate": "next_value",
        "learner": "knn5",
        "params": {"k": 5},
        "seed": 0,
        "budget_s": 60.0,
        "status": status,
        "attempt": attempt,
        **{c: i for i, c in enumerate(COUNT_COLUMNS)},
        "learn_s": 1.5,
        "eval_s": 0.25,
        "peak_rss": 123456789,
        "node": "10.0.0.1",
        "started": T0,
        "finished": T0 + dt.timedelta(seconds=attempt),
        "program": "next_value(X) :- true_value(X).",
        "description": "1 rule",
        "extra": {"curve": [0.5, 0.75]},
    }
    return {**base, **kw}
