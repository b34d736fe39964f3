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
  - locally, ``open(O_CREAT | O_EXCL)`` (atomic on local filesystems and NFSv3+);
  - on object stores (S3, GCS via pyarrow), which pyarrow cannot write conditionally: each driver
    writes its own uniquely named object ``<claim>~<token>``, then lists the prefix, and wins only
    if its object is the only one there. If two drivers race, a later writer always sees the
    earlier object (S3 lists are strongly consistent), so at most one wins; when both see both,
    both withdraw and try again later (no driver can be starved for long: jobs are shuffled per
    driver, so collisions are rare). Safe without clocks agreeing; only lease expiry needs the
    drivers' clocks to agree within a fraction of ``lease_s``.
* When a job's row is stored, its driver writes a **done** marker ``DIR/_done/<job>~<attempt>``
  and then deletes the claim. A driver that wins a claim checks for the marker (after winning: a
  marker is written before its claim goes, so a claim won afterwards sees it) and so learns that
  another driver stored that attempt without re-reading the store. Markers live apart from the
  claims so that the listing each claim round makes stays as small as the jobs in flight. A driver that died between storing rows and writing markers leaves claims
  of a dead driver: whoever takes such a claim over first checks the store for the row.
* A driver stalled past its own lease (a frozen VM) may have lost claims to a takeover; before it
  stores rows it checks that it still holds their claims, and drops the rows it does not.

Stores written before claims existed have no ``_claims/``; they read and resume as before.
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow.fs as pafs

from orchestrator.storage.store import ResultStore, StoreError, scrub

CLAIMS, DRIVERS, DONE = "_claims", "_drivers", "_done"
DEFAULT_LEASE_S = float(os.environ.get("ORCH_LEASE_S", "60"))
"""How long a driver's claims outlive its last heartbeat (``ORCH_LEASE_S``; tests shorten it)."""
SEP = "~"


@dataclass(frozen=True)
class Outcome:
    """What one claim round decided for each job key ``(job_id, attempt)``."""

    won: set[tuple[str, int]]
    busy: set[tuple[str, int]]
    """Held by another live driver (or lost a race): try again later."""
    done: set[tuple[str, int]]
    """Another driver stored this attempt."""
    taken_over: set[tuple[str, int]]
    """Won from a dead driver: the caller checks the store before running (it may have stored it)."""


@dataclass
class _Listing:
    claims: dict[tuple[str, int], dict[int, list[str]]]  # key -> generation -> holder tokens
    live: set[str]  # tokens of drivers whose heartbeat has not expired


class Claims:
    """This driver's claims on one store."""

    def __init__(self, store: ResultStore, lease_s: float = DEFAULT_LEASE_S) -> None:
        self.store, self.fs, self.lease_s = store, store.fs, float(lease_s)
        self.token = uuid.uuid4().hex[:16]
        self.held: dict[tuple[str, int], int] = {}  # key -> generation held
        self._beat_name: str | None = None
        self._beat_at = 0.0
        self.lapsed = False
        self._pool = ThreadPoolExecutor(8) if not store.local else None
        for sub in (CLAIMS, DRIVERS, DONE):
            try:
                self.fs.create_dir(self._path(sub), recursive=True)
            except OSError as e:
                raise StoreError(f"cannot create {sub}/ in the store at {store.uri}: {scrub(str(e))}") from e
        self.heartbeat(force=True)

    def _path(self, *parts: str) -> str:
        return "/".join([self.store.root, *parts])

    # --- liveness ----------------------------------------------------------------------------------

    def heartbeat(self, force: bool = False) -> None:
        """Renew this driver's lease (every ``lease_s / 4``; call it often, it is cheap when not due)."""
        now = time.time()
        if not force and now - self._beat_at < self.lease_s / 4:
            return
        if self._beat_at and now - self._beat_at > self.lease_s:
            self.lapsed = True  # others may have taken our claims over: check before storing
        name = f"{self.token}{SEP}{int((now + self.lease_s) * 1000)}"
        self._write(self._path(DRIVERS, name), self._info())
        if self._beat_name:
            self._delete(self._path(DRIVERS, self._beat_name))
        self._beat_name, self._beat_at = name, now

    def _info(self) -> bytes:
        return json.dumps({"driver": self.token, "host": socket.gethostname(), "pid": os.getpid()}).encode()

    # --- files -------------------------------------------------------------------------------------

    def _write(self, path: str, data: bytes) -> None:
        try:
            with self.fs.open_output_stream(path) as f:
                f.write(data)
        except OSError as e:
            raise StoreError(f"cannot write {path.rsplit('/', 1)[-1]} in the store: {scrub(str(e))}") from e

    def _delete(self, path: str) -> None:
        try:
            self.fs.delete_file(path)
        except OSError:
            pass

    def _names(self, sub: str) -> list[str]:
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self._path(sub), allow_not_found=True))
        except OSError as e:
            raise StoreError(f"cannot list {sub}/ in the store at {self.store.uri}: {scrub(str(e))}") from e
        return [
            i.base_name for i in infos if i.type == pafs.FileType.File and not i.base_name.startswith(".")
        ]

    def _listing(self) -> _Listing:
        now_ms = time.time() * 1000
        live = set()
        for name in self._names(DRIVERS):
            token, _, expiry = name.partition(SEP)
            if expiry.isdigit() and int(expiry) > now_ms:
                live.add(token)
        live.add(self.token)
        claims: dict[tuple[str, int], dict[int, list[str]]] = {}
        for name in self._names(CLAIMS):
            parts = name.split(SEP)
            if len(parts) < 3 or not parts[1].isdigit():
                continue
            key = (parts[0], int(parts[1]))
            if not parts[2].startswith("g") or not parts[2][1:].isdigit():
                continue
            holders = claims.setdefault(key, {}).setdefault(int(parts[2][1:]), [])
            if len(parts) == 4:  # object stores: the holder is in the name
                holders.append(parts[3])
            else:  # local: the holder is in the file
                holders.append(self._holder(name))
        return _Listing(claims, live)

    def _holder(self, name: str) -> str:
        try:
            with self.fs.open_input_stream(self._path(CLAIMS, name)) as f:
                return json.loads(f.read().decode()).get("driver", "")
        except (OSError, ValueError):
            return ""  # unreadable: no live holder (files are complete when linked into place)

    @staticmethod
    def _claim_name(key: tuple[str, int], gen: int) -> str:
        return f"{key[0]}{SEP}{key[1]}{SEP}g{gen}"

    # --- claiming ----------------------------------------------------------------------------------

    def claim(self, keys: Iterable[tuple[str, int]]) -> Outcome:
        """Try to claim each ``(job_id, attempt)``; already held ones count as won."""
        self.heartbeat()
        keys = list(dict.fromkeys(keys))
        listing = self._listing()
        won = {k for k in keys if k in self.held}
        busy, wanted = set(), {}
        taken: set[tuple[str, int]] = set()
        for key in keys:
            if key in won:
                continue
            gens = listing.claims.get(key, {})
            if gens:
                top = max(gens)
                if any(h in listing.live for h in gens[top]):
                    busy.add(key)
                    continue
                wanted[key] = top + 1
                taken.add(key)
            else:
                wanted[key] = 0
        got = self._create(wanted)
        for key, gen in wanted.items():
            if key in got:
                self.held[key] = gen
            else:
                busy.add(key)
                taken.discard(key)
        done = self._done(got)  # checked after winning: see the module docstring
        self.release(done, done=False)
        won |= set(got) - done
        return Outcome(won, busy, done, taken & won)

    def _done_path(self, key: tuple[str, int]) -> str:
        return self._path(DONE, f"{key[0]}{SEP}{key[1]}")

    def _done(self, keys: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
        """Of ``keys``, the attempts some driver marked as stored."""
        keys = list(keys)
        if not keys:
            return set()

        def exists(key: tuple[str, int]) -> bool:
            try:
                return self.fs.get_file_info(self._done_path(key)).type == pafs.FileType.File
            except OSError as e:
                raise StoreError(
                    f"cannot read _done/ in the store at {self.store.uri}: {scrub(str(e))}"
                ) from e

        if self._pool is None:
            found = [exists(k) for k in keys]
        else:
            found = list(self._pool.map(exists, keys))
        return {k for k, f in zip(keys, found, strict=True) if f}

    def _create(self, wanted: dict[tuple[str, int], int]) -> set[tuple[str, int]]:
        """Exclusively create the claim files of ``wanted``; the keys whose file this driver created."""
        if not wanted:
            return set()
        info = self._info()
        if self.store.local:
            # The claim is written whole to a private file, then hard-linked to its name: link(2)
            # fails if the name exists (like O_EXCL, also on NFS), and a reader never sees it empty.
            got = set()
            temp = self._path(CLAIMS, f".{self.token}-{uuid.uuid4().hex[:8]}.tmp")
            try:
                with open(temp, "wb") as f:
                    f.write(info)
                for key, gen in wanted.items():
                    try:
                        os.link(temp, self._path(CLAIMS, self._claim_name(key, gen)))
                    except FileExistsError:
                        continue
                    got.add(key)
            except OSError as e:
                raise StoreError(f"cannot claim jobs in the store at {self.store.uri}: {e.strerror}") from e
            finally:
                self._delete(temp)
            return got
        mine = {key: f"{self._claim_name(key, gen)}{SEP}{self.token}" for key, gen in wanted.items()}
        assert self._pool is not None
        list(self._pool.map(lambda n: self._write(self._path(CLAIMS, n), info), mine.values()))
        present: dict[str, list[str]] = {}
        for name in self._names(CLAIMS):
            base, sep, token = name.rpartition(SEP)
            if sep:
                present.setdefault(base, []).append(token)
        got, lost = set(), []
        for key, name in mine.items():
            if present.get(self._claim_name(key, wanted[key])) == [self.token]:
                got.add(key)
            else:
                lost.append(name)
        list(self._pool.map(lambda n: self._delete(self._path(CLAIMS, n)), lost))
        return got

    def still_held(self, keys: Iterable[tuple[str, int]]) -> set[tuple[str, int]]:
        """Of ``keys`` (claimed by this driver), those whose claim no other driver has taken over."""
        listing = self._listing()
        out = set()
        for key in keys:
            gen = self.held.get(key)
            gens = listing.claims.get(key, {})
            if gen is not None and gen in gens and max(gens) == gen and self.token in gens[gen]:
                out.add(key)
        return out

    def release(self, keys: Iterable[tuple[str, int]], done: bool) -> None:
        """Give up claims; with ``done``, first mark the attempts as stored (call after the write)."""
        keys = [k for k in keys if k in self.held]
        if not keys:
            return
        if done:
            self._map(lambda p: self._write(p, b""), [self._done_path(k) for k in keys])
        paths = []
        for key in keys:
            name = self._claim_name(key, self.held.pop(key))
            paths.append(self._path(CLAIMS, name if self.store.local else f"{name}{SEP}{self.token}"))
        self._map(self._delete, paths)

    def _map(self, fn, items: list) -> None:  # noqa: ANN001
        if self._pool is None:
            for item in items:
                fn(item)
        else:
            list(self._pool.map(fn, items))

    def close(self) -> None:
        """Release every claim still held (not done) and stop the heartbeat: a clean exit frees its jobs."""
        try:
            self.release(list(self.held), done=False)
            if self._beat_name:
                self._delete(self._path(DRIVERS, self._beat_name))
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=False)


def backoff() -> float:
    """Seconds to wait before claiming again after losing a race (randomised so racers separate)."""
    return random.uniform(0.2, 1.0)
