"""Done markers: ``DIR/_done/<job>~<attempt>`` says that one driver stored (or is storing) an attempt.

Why markers, and why apart from the claims: a claim is deleted once its attempt is stored, so
something must remember that the attempt is done without re-reading the results. Markers live in
their own directory so that the listing each claim round makes of ``_claims/`` stays as small as
the jobs in flight. A marker is created *exclusively* when rows are committed
(:mod:`orchestrator.storage.fencing`), which is what makes a row unique per attempt:

* locally the marker is hard-linked into place (``link(2)`` fails when the name exists);
* on object stores it is ``_done/<job>~<attempt>/<token>``, decided like a claim: write, look, win
  only alone. A plain object ``_done/<job>~<attempt>`` is a marker from before commits were fenced.

A marker holds ``{"driver": token, "file": results file name}``; ``file`` is ``None`` when the row
was found already stored (a dead driver stored it but left no marker).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import pyarrow.fs as pafs

from orchestrator.storage.claimio import DONE, SEP, ClaimIO, Key
from orchestrator.storage.credentials import scrub
from orchestrator.storage.errors import StoreError


class DoneMarkers:
    """Reading, creating and withdrawing the done markers of job attempts."""

    def __init__(self, io: ClaimIO) -> None:
        """Markers are written with ``io``'s token, which names this driver in them."""
        self.io = io

    def path(self, key: Key) -> str:
        """The marker's path (locally a file, on object stores a prefix of per-driver objects)."""
        return self.io.path(DONE, f"{key[0]}{SEP}{key[1]}")

    def paths(self, key: Key, tokens: list[str]) -> list[str]:
        """The marker files of ``key`` that :meth:`marks` found (``[""]``: the marker itself)."""
        return [self.path(key)] if tokens == [""] else [f"{self.path(key)}/{t}" for t in tokens]

    def marks(self, key: Key) -> list[str] | None:
        """Who marked ``key`` as stored: ``None`` if nobody; locally ``[""]`` (the holder is in the
        file); on object stores the tokens under ``_done/<key>/`` (``[""]`` for a marker written
        before commits were fenced, a plain object ``_done/<key>``)."""
        path = self.path(key)
        try:
            info = self.io.fs.get_file_info(path)
            if info.type == pafs.FileType.File:
                return [""]
            if info.type != pafs.FileType.Directory:
                return None
            # pyarrow leaves an empty directory behind when the last object under it goes
            tokens = [
                i.base_name
                for i in self.io.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
                if i.type == pafs.FileType.File
            ]
        except OSError as e:
            raise StoreError(
                f"cannot read _done/ in the store at {self.io.store.uri}: {scrub(str(e))}"
            ) from e
        return tokens or None

    def done(self, keys: Iterable[Key]) -> set[Key]:
        """Of ``keys``, the attempts some driver marked as stored (or is marking now)."""
        keys = list(keys)
        found = self.io.map(self.marks, keys) if keys else []
        return {k for k, f in zip(keys, found, strict=True) if f}

    def create(self, keys: set[Key], mark: bytes) -> tuple[set[Key], set[Key]]:
        """Exclusively create the markers of ``keys``: (the keys won, the keys to try later).

        On object stores a race without a winner (both drivers see both objects) withdraws this
        driver's object, and the key is tried again at the next flush.
        """
        if not keys:
            return set(), set()
        if self.io.store.local:
            return self.io.link_all({k: self.path(k) for k in keys}, mark, DONE), set()
        mine = {k: f"{self.path(k)}/{self.io.token}" for k in keys}
        self.io.map(lambda p: self.io.write(p, mark), list(mine.values()))
        in_order = list(keys)
        won, later, withdraw = set(), set(), []
        for key, tokens in zip(in_order, self.io.map(self.marks, in_order), strict=True):
            if tokens == [self.io.token]:
                won.add(key)
            else:  # someone else marked it, or is racing us: withdraw, and look again at the next flush
                later.add(key)
                withdraw.append(mine[key])
        self.io.map(self.io.delete, withdraw)
        return won, later

    def withdraw(self, keys: Iterable[Key]) -> None:
        """Delete this driver's own markers of ``keys`` (its rows could not be written)."""
        keys = list(keys)
        if self.io.store.local:
            self.io.map(self.io.delete, [self.path(k) for k in keys])
        else:
            self.io.map(self.io.delete, [f"{self.path(k)}/{self.io.token}" for k in keys])

    def mark_stored(self, keys: Iterable[Key]) -> None:
        """Mark attempts found in the store (a dead driver stored them but left no marker)."""
        keys = list(keys)
        mark = json.dumps({"driver": self.io.token, "file": None}).encode()
        if self.io.store.local:
            self.io.link_all({k: self.path(k) for k in keys}, mark, DONE)
        else:
            self.io.map(lambda p: self.io.write(p, mark), [f"{self.path(k)}/{self.io.token}" for k in keys])

    def read(self, path: str) -> dict | None:
        """A marker's content (``{}`` if unreadable), or ``None`` if it was withdrawn meanwhile."""
        data = self.io.read(path)
        if data is None:
            return None
        try:
            found = json.loads(data.decode()) if data else {}
        except ValueError:
            found = {}
        return found if isinstance(found, dict) else {}
