"""Per-job claim files: which driver holds which job attempt, and in which generation.

Why this shape: a claim is a small file per (job, attempt, generation) under ``DIR/_claims/``
(ignored by Parquet readers: the name starts with ``_``), named ``<job>~<attempt>~g<n>``. A claim
taken over from a dead driver is the next generation, so the newest generation is the **fencing
token** a commit checks (:mod:`orchestrator.storage.fencing`). Creating a claim must be exclusive:

* locally the file is hard-linked into place (:meth:`ClaimIO.link_all`); the holder is in the file;
* on object stores (S3, GCS via pyarrow), which pyarrow cannot write conditionally, each driver
  writes its own uniquely named object ``<claim>~<token>``, then lists the prefix, and wins only if
  its object is the only one there. If two drivers race, a later writer always sees the earlier
  object (S3 lists are strongly consistent), so at most one wins; when both see both, both withdraw
  and try again later. Safe without clocks agreeing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator.storage.claimio import CLAIMS, SEP, ClaimIO, Key


@dataclass
class Listing:
    """One look at ``_claims/``: what a claim round or a commit decides from."""

    claims: dict[Key, dict[int, list[str]]]
    """key -> generation -> holder tokens."""
    live: set[str]
    """Tokens of drivers whose heartbeat has not expired."""


def claim_name(key: Key, gen: int) -> str:
    """The file name of generation ``gen`` of the claim on ``key`` (without the holder)."""
    return f"{key[0]}{SEP}{key[1]}{SEP}g{gen}"


class JobClaims:
    """This driver's claim files: the generations it holds, creating and deleting them."""

    def __init__(self, io: ClaimIO) -> None:
        """Holds nothing yet; :attr:`held` maps each key this driver holds to its generation."""
        self.io = io
        self.held: dict[Key, int] = {}

    def listing(self, live: set[str]) -> Listing:
        """Every claim in the store by key and generation, with its holders (one listing)."""
        claims: dict[Key, dict[int, list[str]]] = {}
        for name in self.io.names(CLAIMS):
            parts = name.split(SEP)
            if len(parts) < 3 or not parts[1].isdigit():
                continue
            if not parts[2].startswith("g") or not parts[2][1:].isdigit():
                continue
            holders = claims.setdefault((parts[0], int(parts[1])), {}).setdefault(int(parts[2][1:]), [])
            if len(parts) == 4:  # object stores: the holder is in the name
                holders.append(parts[3])
            else:  # local: the holder is in the file
                holders.append(self.holder(name))
        return Listing(claims, live)

    def holder(self, name: str) -> str:
        """The token in a local claim file (``""`` if unreadable: then no live driver holds it)."""
        data = self.io.read(self.io.path(CLAIMS, name))
        try:
            return json.loads(data.decode()).get("driver", "") if data is not None else ""
        except (ValueError, AttributeError):
            return ""  # files are complete when linked into place, so this is a foreign file

    def holds(self, listing: Listing, key: Key) -> bool:
        """The fencing check: this driver's claim on ``key`` is still the newest generation."""
        gen = self.held.get(key)
        gens = listing.claims.get(key, {})
        return gen is not None and gen in gens and max(gens) == gen and self.io.token in gens[gen]

    def create(self, wanted: dict[Key, int]) -> set[Key]:
        """Exclusively create the claim files of ``wanted`` (key -> generation); the keys this driver
        created, which it now holds."""
        if not wanted:
            return set()
        if self.io.store.local:
            # Written whole to a private file, then hard-linked to its name: link(2) fails if the
            # name exists (like O_EXCL, also on NFS), and a reader never sees it empty.
            paths = {key: self.io.path(CLAIMS, claim_name(key, gen)) for key, gen in wanted.items()}
            got = self.io.link_all(paths, self.io.info(), CLAIMS)
        else:
            got = self._create_alone(wanted)
        self.held.update({key: wanted[key] for key in got})
        return got

    def _create_alone(self, wanted: dict[Key, int]) -> set[Key]:
        """Object stores: write ``<claim>~<token>``, list, and keep only those where this driver is
        alone; withdraw the rest (another driver raced for them)."""
        info, token = self.io.info(), self.io.token
        mine = {key: f"{claim_name(key, gen)}{SEP}{token}" for key, gen in wanted.items()}
        self.io.map(lambda n: self.io.write(self.io.path(CLAIMS, n), info), mine.values())
        present: dict[str, list[str]] = {}
        for name in self.io.names(CLAIMS):
            base, sep, holder = name.rpartition(SEP)
            if sep:
                present.setdefault(base, []).append(holder)
        got, lost = set(), []
        for key, name in mine.items():
            if present.get(claim_name(key, wanted[key])) == [token]:
                got.add(key)
            else:
                lost.append(name)
        self.io.map(lambda n: self.io.delete(self.io.path(CLAIMS, n)), lost)
        return got

    def release(self, keys: Iterable[Key]) -> None:
        """Give up claims (delete this driver's claim files; only its own, checked locally)."""
        keys = [k for k in keys if k in self.held]
        if not keys:
            return
        paths = []
        for key in keys:
            name = claim_name(key, self.held.pop(key))
            if not self.io.store.local:
                paths.append(self.io.path(CLAIMS, f"{name}{SEP}{self.io.token}"))
            elif self.holder(name) == self.io.token:  # the name may be another driver's claim by now
                paths.append(self.io.path(CLAIMS, name))
        self.io.map(self.io.delete, paths)
