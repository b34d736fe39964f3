"""Where a fit's time and work went: one timer object for every stage of the ILASP* loop.

The bench (bench/bench_ilp.py) reads it per job; ``IlaspLearner.profile`` is the last fit's.
A second learning (a refit, the complement, the defaults, the concept library) adds its profile
to the first's (:meth:`Profile.add`), so the totals count every search the fit ran.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

STAGES = ("facts", "search", "verify", "solve", "select")
"""The timed stages: building fact tables, the seeds' searches, verifying candidates on every
training example, clingo's covers and the fallback selection."""


@dataclass
class Profile:
    """Seconds per stage, candidates tested, loop iterations, units of work, how the loop ended."""

    facts: float = 0.0
    search: float = 0.0
    verify: float = 0.0
    solve: float = 0.0
    select: float = 0.0
    tested: int = 0
    iterations: int = 0
    work: int = 0
    status: str = ""
    notes: list[str] = field(default_factory=list)

    @contextmanager
    def timing(self, stage: str) -> Iterator[None]:
        """Add the time spent in the ``with`` block to ``stage`` (one of :data:`STAGES`)."""
        started = time.monotonic()
        try:
            yield
        finally:
            setattr(self, stage, getattr(self, stage) + time.monotonic() - started)

    def add(self, earlier: Profile) -> None:
        """Count an earlier learning's time and work (a search given up on) in this profile."""
        for k in (*STAGES, "tested", "iterations", "work"):
            setattr(self, k, getattr(self, k) + getattr(earlier, k))
