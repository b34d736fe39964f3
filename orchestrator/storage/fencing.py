"""The fenced commit: only the holder of a job's newest claim stores its row, checked at commit time.

Why: a driver stalled past its lease (a frozen VM, a sleeping laptop, SIGSTOP) may have lost claims
to a takeover, and wake up with rows to store. Every flush therefore commits (:meth:`Fence.commit`):
it checks that this driver's claim generation is still the newest one (the fencing token) and that
no ``_done/`` marker exists, and then creates the attempt's done marker *exclusively*
(:class:`orchestrator.storage.markers.DoneMarkers`), before the rows become visible. Exactly one
driver creates a marker, and only that driver publishes a row for the attempt, so a raw reader sees
one row per ``(job_id, attempt)`` whatever the clocks say. A driver that loses drops its rows.

A marker whose rows never appeared (its driver died, or froze, between the two steps) is an
**orphan**: :meth:`Fence.settle` finds it, fences the unpublished file out (locally its ``_tmp/``
file is renamed away, :meth:`orchestrator.storage.store.ResultStore.fence_out`, so a frozen writer
that wakes cannot publish it) and the job runs again as the next attempt.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.storage.claimio import Key
from orchestrator.storage.jobclaims import JobClaims
from orchestrator.storage.leases import Lease
from orchestrator.storage.markers import DoneMarkers
from orchestrator.storage.store import ResultStore


@dataclass(frozen=True)
class Commit:
    """What one commit decided for each job key of a flush."""

    won: set[Key]
    """Marked as stored by this driver: publish these rows now (and only these)."""
    lost: set[Key]
    """Another driver holds a newer claim or stored the attempt: drop these rows."""
    later: set[Key]
    """A commit race without a winner (object stores): keep the rows, commit at the next flush."""


@dataclass(frozen=True)
class Settled:
    """What the done markers of some attempts say (:meth:`Fence.settle`)."""

    stored: set[Key]
    busy: set[Key]
    """Being committed by a live driver: look again later."""
    orphan: dict[Key, str | None]
    """Marked, but the rows were never published (and now never will be): key -> the file named.
    The caller checks the store (a compaction may have merged the file) and else runs the job as
    the next attempt."""


class Fence:
    """Commits and settles attempts for one driver, from its claims, lease and the done markers."""

    def __init__(self, store: ResultStore, claims: JobClaims, lease: Lease, markers: DoneMarkers) -> None:
        """The parts are the driver's own (:class:`orchestrator.storage.claims.Claims` builds them)."""
        self.store, self.claims, self.lease, self.markers = store, claims, lease, markers

    def commit(self, keys: Iterable[Key], file: str) -> Commit:
        """Decide which of ``keys`` (rows about to be stored in the results file named ``file``)
        this driver may store; call before the rows are written, publish only ``won``.

        Fenced: a key is won only while this driver's claim is the newest generation, no marker
        exists, and this driver creates the marker exclusively. So of any number of drivers (also
        one that froze past its lease and woke up) at most one stores a row per attempt.
        """
        self.lease.heartbeat()
        keys = list(dict.fromkeys(keys))
        if not keys:
            return Commit(set(), set(), set())
        listing = self.claims.listing(self.lease.live())
        fenced = {k for k in keys if self.claims.holds(listing, k)}
        fenced -= self.markers.done(fenced)
        mark = json.dumps({"driver": self.claims.io.token, "file": file}).encode()
        won, later = self.markers.create(fenced, mark)
        lost = set(keys) - won - later
        self.claims.release(lost)  # whatever this driver still had of them is not its to keep
        return Commit(won, lost, later)

    def settle(self, keys: Iterable[Key]) -> Settled:
        """What the done markers of ``keys`` mean: stored, being committed, or orphaned.

        An orphan's file is fenced out (:meth:`ResultStore.fence_out`) before its absence is
        trusted, so a frozen writer that wakes up cannot publish it afterwards (local stores).
        """
        stored: set[Key] = set()
        busy: set[Key] = set()
        orphan: dict[Key, str | None] = {}
        live = self.lease.live()
        for key in keys:
            verdict, file = self._settle_one(key, live)
            if verdict == "stored":
                stored.add(key)
            elif verdict == "busy":
                busy.add(key)
            else:
                orphan[key] = file
        return Settled(stored, busy, orphan)

    def _settle_one(self, key: Key, live: set[str]) -> tuple[str, str | None]:
        """``("stored" | "busy" | "orphan", the file an orphan's marker names)``.

        A marker withdrawn meanwhile is ``busy``: the next claim round decides again.
        """
        tokens = self.markers.marks(key)
        if not tokens:
            return "busy", None
        marks = [m for m in map(self.markers.read, self.markers.paths(key, tokens)) if m is not None]
        if not marks:
            return "busy", None
        if any(m.get("file") is None or not m.get("driver") for m in marks):
            return "stored", None  # an old marker, or one written after the row was found stored
        named = [(str(m["file"]), str(m["driver"])) for m in marks]  # several: a race (object stores)
        if any(self.store.published(file) for file, _ in named):
            return "stored", None
        if any(driver in live and driver != self.claims.io.token for _, driver in named):
            return "busy", None  # its driver is between marking and writing (or withdrawing)
        for file, _ in named:
            self.store.fence_out(file)  # first: then its absence below can be trusted
        if any(self.store.published(file) for file, _ in named):
            return "stored", None
        return "orphan", named[0][0]
