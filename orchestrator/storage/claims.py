"""Claims: any number of drivers on one store (local or S3) run and store each job exactly once.

Why claims, and why this shape:

* Two ``orch run`` on one store (two terminals, two machines on one S3 prefix) both plan every
  job that is not stored yet. Without coordination each runs and stores every job. Before a driver
  sends a job to a worker it must hold the job's **claim**; a job claimed by a live driver is left
  to it, and its row is waited for.
* A claim is a small file per (job, attempt, generation) under ``DIR/_claims/`` (ignored by
  Parquet readers: the name starts with ``_``). It belongs to a driver, identified by a random
  token. A driver proves it is alive by a **heartbeat** file ``DIR/_drivers/<token>~<expiry ms>``,
  renewed every ``lease_s / 4``. A claim whose driver's heartbeat expired is dead: another driver
  takes it over by claiming the next generation. One heartbeat per driver (not per claim) keeps
  renewals cheap however many jobs are in flight.
* Exclusive creation, the one primitive needed:
  - locally, a file written whole and hard-linked to its name: ``link(2)`` fails when the name exists
    (like ``O_EXCL``; atomic on local filesystems and NFS);
  - on object stores (S3, GCS via pyarrow), which pyarrow cannot write conditionally: each driver
    writes its own uniquely named object ``<claim>~<token>``, then lists the prefix, and wins only
    if its object is the only one there. If two drivers race, a later writer always sees the
    earlier object (S3 lists are strongly consistent), so at most one wins; when both see both,
    both withdraw and try again later (no driver can be starved for long: jobs are shuffled per
    driver, so collisions are rare). Safe without clocks agreeing; only lease expiry needs the
    drivers' clocks to agree within a fraction of ``lease_s``.
* A stored attempt has a **done** marker ``DIR/_done/<job>~<attempt>``, created when its rows are
  committed (below); the claim is deleted after. A driver that wins a claim checks for the marker
  (after winning: a marker exists before its claim goes, so a claim won afterwards sees it) and so
  learns that another driver stored that attempt without re-reading the store. Markers live apart
  from the claims so that the listing each claim round makes stays as small as the jobs in
  flight. A claim taken over from a dead driver without a marker makes the taker check the store
  for the row first (stores written before markers were fenced).
* **Fenced commits.** A driver stalled past its lease (a frozen VM, a sleeping laptop, SIGSTOP) may
  have lost claims to a takeover, and wake up with rows to store. Every flush therefore commits
  (:meth:`Claims.commit`): it checks that this driver's claim generation is still the newest one
  (the fencing token) and that no ``_done/`` marker exists, and then creates the attempt's done
  marker *exclusively*, before the rows become visible. Exactly one driver creates a marker, and
  only that driver publishes a row for the attempt, so a raw reader sees one row per
  ``(job_id, attempt)`` whatever the clocks say. Locally the marker is hard-linked into place
  (``link(2)`` fails when the name exists); on object stores it is ``_done/<job>~<attempt>/<token>``
  decided like a claim (write, list, win only alone). A driver that loses drops its rows and says so.
* A marker whose rows never appeared (its driver died, or froze, between the two steps) is an
  **orphan**: :meth:`Claims.settle` finds it, fences the unpublished file out (locally its
  ``_tmp/`` file is renamed away, so a frozen writer that wakes cannot publish it) and the job
  runs again as the next attempt.
* Clocks only decide when a lease has run out (liveness, never uniqueness). ``ORCH_CLOCK_SKEW_S``
  shifts this driver's clock (:func:`now`), a test hook for drivers whose clocks disagree.

Stores written before claims existed have no ``_claims/``; they read and resume as before.

The parts, each small enough to read in one sitting; :class:`Claims` is the façade the scheduler
uses and composes them:

* :mod:`orchestrator.storage.claimio`: the file primitives (write, list, create exclusively);
* :mod:`orchestrator.storage.leases`: heartbeats, who is alive, clocks, clean-up of dead drivers;
* :mod:`orchestrator.storage.jobclaims`: the per-job claim files and their generations;
* :mod:`orchestrator.storage.markers`: the done markers;
* :mod:`orchestrator.storage.fencing`: the fenced commit and the settling of orphans.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.storage.claimio import CLAIMS, DONE, DRIVERS, SEP, ClaimIO, Key
from orchestrator.storage.fencing import Commit, Fence, Settled
from orchestrator.storage.jobclaims import JobClaims
from orchestrator.storage.leases import (
    CLOCK_SKEW_ENV,
    DEFAULT_LEASE_S,
    LEASE_ENV,
    Lease,
    lease_from_env,
    now,
    remove_stale,
)
from orchestrator.storage.markers import DoneMarkers
from orchestrator.storage.store import ResultStore, StoreError

__all__ = [
    "CLAIMS",
    "CLOCK_SKEW_ENV",
    "DEFAULT_LEASE_S",
    "DONE",
    "DRIVERS",
    "LEASE_ENV",
    "SEP",
    "Claims",
    "Commit",
    "Key",
    "Outcome",
    "Settled",
    "backoff",
    "lease_from_env",
    "now",
    "remove_stale",
]


@dataclass(frozen=True)
class Outcome:
    """What one claim round decided for each job key ``(job_id, attempt)``."""

    won: set[Key]
    busy: set[Key]
    """Held by another live driver (or lost a race): try again later."""
    done: set[Key]
    """Another driver stored this attempt."""
    taken_over: set[Key]
    """Won from a dead driver: the caller checks the store before running (it may have stored it)."""


class Claims:
    """This driver's claims on one store: the one object the scheduler talks to."""

    def __init__(self, store: ResultStore, lease_s: float = DEFAULT_LEASE_S, *, drive: bool = True) -> None:
        """``drive=False``: only look (clean-up), with no heartbeat and nothing created in the store."""
        self.store, self.fs, self.lease_s = store, store.fs, float(lease_s)
        self.io = ClaimIO(store, pool=drive)
        self.lease = Lease(self.io, self.lease_s)
        self.jobs = JobClaims(self.io)
        self.markers = DoneMarkers(self.io)
        self.fence = Fence(store, self.jobs, self.lease, self.markers)
        if not drive:
            return
        self.io.create_dirs(CLAIMS, DRIVERS, DONE)
        self.heartbeat(force=True)

    @property
    def token(self) -> str:
        """This driver's random id, in its heartbeat, claims and markers."""
        return self.io.token

    @token.setter
    def token(self, value: str) -> None:
        self.io.token = value  # tests impersonate a driver; every part reads the token from io

    @property
    def held(self) -> dict[Key, int]:
        """Each key this driver holds -> the generation it holds."""
        return self.jobs.held

    def heartbeat(self, force: bool = False) -> None:
        """Renew this driver's lease (every ``lease_s / 4``; call it often, it is cheap when not due)."""
        self.lease.heartbeat(force)

    def claim(self, keys: Iterable[Key]) -> Outcome:
        """Try to claim each ``(job_id, attempt)``; already held ones count as won.

        A key whose newest claim belongs to a live driver is busy; one whose holder is dead is taken
        over as the next generation. The done markers are checked *after* winning: a marker exists
        before its claim goes, so a claim won afterwards sees it.
        """
        self.heartbeat()
        keys = list(dict.fromkeys(keys))
        listing = self.jobs.listing(self.lease.live())
        won = {k for k in keys if k in self.held}
        busy: set[Key] = set()
        wanted: dict[Key, int] = {}
        taken: set[Key] = set()
        for key in keys:
            if key in won:
                continue
            gens = listing.claims.get(key, {})
            if not gens:
                wanted[key] = 0
            elif any(h in listing.live for h in gens[max(gens)]):
                busy.add(key)
            else:
                wanted[key] = max(gens) + 1
                taken.add(key)
        got = self.jobs.create(wanted)
        busy |= set(wanted) - got
        done = self.markers.done(got)
        self.release(done)
        won |= got - done
        return Outcome(won, busy, done, taken & won)

    def commit(self, keys: Iterable[Key], file: str) -> Commit:
        """Decide which of ``keys`` (rows about to be stored in the results file named ``file``)
        this driver may store; call before the rows are written, publish only ``won``
        (:meth:`orchestrator.storage.fencing.Fence.commit`)."""
        return self.fence.commit(keys, file)

    def settle(self, keys: Iterable[Key]) -> Settled:
        """What the done markers of ``keys`` mean: stored, being committed, or orphaned
        (:meth:`orchestrator.storage.fencing.Fence.settle`)."""
        return self.fence.settle(keys)

    def unmark(self, keys: Iterable[Key]) -> None:
        """Withdraw this driver's own markers (its rows could not be written: nothing was stored)."""
        self.markers.withdraw(keys)

    def mark_stored(self, keys: Iterable[Key]) -> None:
        """Mark attempts found in the store (a dead driver stored them but left no marker)."""
        self.markers.mark_stored(keys)

    def release(self, keys: Iterable[Key]) -> None:
        """Give up claims (delete this driver's claim files)."""
        self.jobs.release(keys)

    def close(self) -> None:
        """Release every claim still held (not done) and stop the heartbeat: a clean exit frees its jobs."""
        try:
            self.release(list(self.held))
            self.lease.stop()
            remove_stale(self.store, self.lease_s)  # what dead drivers left behind
        except StoreError:
            pass  # cleaning is a courtesy: never fail a finished sweep for it
        finally:
            self.io.shutdown()


def backoff() -> float:
    """Seconds to wait before claiming again after losing a race (randomised so racers separate)."""
    return random.uniform(0.2, 1.0)
