"""How much of a fit's allowance is left: wall-clock seconds, or units of work counted by the search.

Why: with only a wall-clock budget, *where* each stage stops depends on how busy the machine is,
and so do the choices that follow (a seed's search that ran out of time doubles the next one's
share, a frame step cut early tests fewer literals). Two runs of the same sweep then store
different programs, and a researcher cannot tell a real difference from a loaded machine.

A :class:`Meter` measures one allowance in one of two units:

* **seconds** (the default): the allowance ends at a monotonic-clock deadline;
* **work** (``ilasp_w<N>``): the allowance ends after ``N`` units of work, counted by one
  :class:`Work` counter shared by every stage of a fit. A unit is one candidate clause or frame
  literal tested by a vectorised join, one clause verified on every training example, one step of
  the frame step's sequential cover, or one clingo conflict. Every share the learner hands out
  (the loop's, one seed's search, the frame step's, clingo's) is then a number of units, so the
  search takes the same steps in the same order on any machine; only the wall-clock budget, which
  still holds as a hard stop (the worker kills a job past it), can cut it earlier.

A meter never outlives its parent: :meth:`Meter.part` makes a sub-allowance that ends no later
than the meter it was cut from, and every meter also ends at the wall-clock budget.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from learners.base import Budget

WORK_PER_SECOND = 5000
"""About how many units of work one second of the search does on one core (measured with
bench/bench_ilp.py); used only to state the few minimum-time thresholds in units of work."""


@dataclass
class Work:
    """Units of work done so far in one fit (shared by every meter of the fit)."""

    done: int = 0


class Meter:
    """One allowance: :meth:`left` units (seconds or work) before it is :meth:`expired`."""

    def __init__(self, budget: Budget, work: Work | None = None, end: float | None = None) -> None:
        """``budget``: the job's wall-clock budget, a hard stop in either unit. ``work``: count work
        units (None: seconds). ``end``: where this allowance ends, on the monotonic clock (seconds)
        or on ``work.done`` (work); None: at the budget's deadline (seconds) or never (work)."""
        self.budget = budget
        self.work = work
        if end is None:
            end = budget.deadline if work is None else math.inf
        self.end = end

    @classmethod
    def of(cls, budget: Budget, max_work: int | None = None) -> Meter:
        """The whole fit's meter: seconds, or ``max_work`` units of work within ``budget``."""
        return cls(budget) if max_work is None else cls(budget, Work(), float(max_work))

    @property
    def counts_work(self) -> bool:
        return self.work is not None

    def _now(self) -> float:
        return time.monotonic() if self.work is None else float(self.work.done)

    def left(self) -> float:
        """Units left (``inf`` when unbounded); the wall-clock budget is not counted in work units."""
        return self.end - self._now()

    def expired(self) -> bool:
        """Whether the allowance is used up, or the wall-clock budget is (a hard stop either way)."""
        return self.left() <= 0 or self.budget.expired()

    def spend(self, units: int = 1) -> None:
        """Count ``units`` of work done (a no-op when measuring seconds)."""
        if self.work is not None:
            self.work.done += units

    def part(self, units: float) -> Meter:
        """A sub-allowance of ``units`` from now, ending no later than this one."""
        return Meter(self.budget, self.work, min(self.end, self._now() + max(units, 0.0)))

    def share(self, fraction: float) -> Meter:
        """A sub-allowance of ``fraction`` of what is left (all of an unbounded one)."""
        left = self.left()
        return self.part(left * fraction if math.isfinite(left) else left)

    def less(self, reserve: float) -> Meter:
        """A sub-allowance that ends ``reserve`` (finite) units before this one (all of an
        unbounded one: infinity less a number)."""
        return self.part(self.left() - reserve)

    def grace(self, units: float) -> Meter:
        """This allowance, or ``units`` from now if that ends later (a cheap last step after a
        costly one that may have used everything); still within the wall-clock budget."""
        return Meter(self.budget, self.work, max(self.end, self._now() + max(units, 0.0)))

    def now(self) -> float:
        """The position on this meter's scale (monotonic seconds, or work units done)."""
        return self._now()

    def units(self, seconds: float) -> float:
        """``seconds`` on this meter's scale: itself, or the work done in about that time
        (:data:`WORK_PER_SECOND`), for the few thresholds stated in seconds."""
        return seconds if self.work is None else seconds * WORK_PER_SECOND

    def seconds(self, floor: float) -> float:
        """Wall-clock seconds a clingo call may take: the time left here (at least ``floor``);
        counting work, the wall-clock budget's time left (the solver is stopped by a conflict
        limit instead, :mod:`learners.ilp.cover`)."""
        if self.work is None:
            return max(self.left(), floor)
        return max(self.budget.remaining(), 0.05)
