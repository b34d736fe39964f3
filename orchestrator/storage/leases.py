"""Driver leases: which drivers on a store are alive, and the clean-up of the dead ones' files.

Why leases: a claim (:mod:`orchestrator.storage.claims`) must outlive a slow job but not a dead
driver. A driver proves it is alive by one **heartbeat** file ``DIR/_drivers/<token>~<expiry ms>``,
renewed every ``lease_s / 4``; a claim whose driver's heartbeat expired is dead, and another driver
may take it over. One heartbeat per driver (not per claim) keeps renewals cheap however many jobs
are in flight.

Clocks only decide when a lease has run out (liveness, never uniqueness: that is the fenced commit's
job, :mod:`orchestrator.storage.fencing`). ``ORCH_CLOCK_SKEW_S`` shifts this driver's clock
(:func:`now`), a test hook for drivers whose clocks disagree.
"""

from __future__ import annotations

import os
import time

from orchestrator.storage.claimio import CLAIMS, DRIVERS, SEP, ClaimIO
from orchestrator.storage.errors import StoreError
from orchestrator.storage.jobclaims import JobClaims
from orchestrator.storage.location import StoreLocation

LEASE_ENV = "ORCH_LEASE_S"
CLOCK_SKEW_ENV = "ORCH_CLOCK_SKEW_S"


def lease_from_env() -> float:
    """The lease in seconds: ``ORCH_LEASE_S``, else 60 (tests shorten it to make takeovers quick)."""
    return float(os.environ.get(LEASE_ENV) or 60)


DEFAULT_LEASE_S = lease_from_env()
"""How long a driver's claims outlive its last heartbeat (``ORCH_LEASE_S``; tests shorten it)."""


def now() -> float:
    """The clock every lease is computed with: wall time plus ``ORCH_CLOCK_SKEW_S`` seconds.

    The offset is a test hook (read here only) that makes one driver's clock run ahead or behind,
    to check that drivers whose clocks differ by less than the lease keep every guarantee.
    """
    return time.time() + float(os.environ.get(CLOCK_SKEW_ENV) or 0.0)


class Lease:
    """This driver's heartbeat, and who else is alive on the store."""

    def __init__(self, io: ClaimIO, lease_s: float) -> None:
        """Nothing is written until the first :meth:`heartbeat` (a sweeper never writes one)."""
        self.io, self.lease_s = io, float(lease_s)
        self._beat_name: str | None = None
        self._beat_at = 0.0

    def heartbeat(self, force: bool = False) -> None:
        """Renew this driver's lease (every ``lease_s / 4``; call it often, it is cheap when not due).

        The new file is written before the old one goes, so the driver never looks dead in between.
        """
        at = now()
        if not force and at - self._beat_at < self.lease_s / 4:
            return
        name = f"{self.io.token}{SEP}{int((at + self.lease_s) * 1000)}"
        self.io.write(self.io.path(DRIVERS, name), self.io.info())
        if self._beat_name:
            self.io.delete(self.io.path(DRIVERS, self._beat_name))
        self._beat_name, self._beat_at = name, at

    def live(self) -> set[str]:
        """Tokens of the drivers whose heartbeat has not expired (this one always)."""
        now_ms = now() * 1000
        live = {self.io.token}
        for name in self.io.names(DRIVERS):
            token, _, expiry = name.partition(SEP)
            if expiry.isdigit() and int(expiry) > now_ms:
                live.add(token)
        return live

    def stop(self) -> None:
        """Delete this driver's heartbeat (a clean exit): its leftover claims are free at once."""
        if self._beat_name:
            self.io.delete(self.io.path(DRIVERS, self._beat_name))
            self._beat_name = None


def remove_stale(store: StoreLocation, lease_s: float | None = None) -> tuple[int, int]:
    """Delete the claims and heartbeat files of drivers that are dead; return ``(claims, drivers)``.

    A driver is dead once its heartbeat expired a whole lease ago (the margin covers clocks that
    differ by less than the lease), so a live driver's files are never touched. Removing a dead
    driver's claim is a takeover by nobody: the next claim round creates generation 0 again, and
    the dead driver, should it wake up, fails the fencing check at commit. ``lease_s``: default
    ``ORCH_LEASE_S`` as set now.
    """
    lease_s = lease_from_env() if lease_s is None else lease_s
    io = ClaimIO(store, pool=False)  # a token of its own, but no heartbeat: cleaning is not driving
    try:
        beats = io.names(DRIVERS)
    except StoreError:
        return 0, 0  # an old store without _drivers/: nothing to clean
    cutoff_ms = (now() - lease_s) * 1000
    alive, dead_beats = set(), []
    for name in beats:
        token, _, expiry = name.partition(SEP)
        if expiry.isdigit() and int(expiry) < cutoff_ms:
            dead_beats.append(name)
        else:
            alive.add(token)
    claims = JobClaims(io)
    stale = []
    for name in io.names(CLAIMS):
        parts = name.split(SEP)
        if len(parts) < 3:
            continue
        holder = parts[3] if len(parts) == 4 else claims.holder(name)
        if holder not in alive:
            stale.append(name)
    for name in stale:
        io.delete(io.path(CLAIMS, name))
    for name in dead_beats:
        io.delete(io.path(DRIVERS, name))
    return len(stale), len(dead_beats)
