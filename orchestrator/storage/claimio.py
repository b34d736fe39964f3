"""The coordination files of one driver on one store: write, delete, list and create exclusively.

Why a module of its own: claims (:mod:`orchestrator.storage.jobclaims`), heartbeats
(:mod:`orchestrator.storage.leases`) and done markers (:mod:`orchestrator.storage.markers`) are all
small files under ``DIR/_<name>/``, written by a driver identified by one random token, on a local
disk or an object store. Each needs the same few primitives, the same error messages and, on object
stores, the same thread pool (one round trip per file would make a claim round slow). Keeping them
here keeps the parts that decide things free of filesystem detail.

Exclusive creation locally is one file written whole and hard-linked to each name: ``link(2)``
fails when the name exists (like ``O_EXCL``; atomic on local filesystems and NFS), and a reader
never sees a file half written. Object stores have no such primitive; their parts decide by
writing, listing and winning only alone (see :mod:`orchestrator.storage.claims`).
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow.fs as pafs

from orchestrator.storage.credentials import scrub
from orchestrator.storage.errors import StoreError
from orchestrator.storage.location import StoreLocation

CLAIMS, DRIVERS, DONE = "_claims", "_drivers", "_done"
SEP = "~"
Key = tuple[str, int]
"""A job attempt: ``(job_id, attempt)``."""


class ClaimIO:
    """File primitives for one driver's coordination files (its ``token`` names it in them)."""

    def __init__(self, store: StoreLocation, *, pool: bool) -> None:
        """``pool``: run per-file calls on 8 threads (object stores, where each call is a round trip)."""
        self.store, self.fs = store, store.fs
        self.token = uuid.uuid4().hex[:16]
        self.pool = ThreadPoolExecutor(8) if pool and not store.local else None

    def path(self, *parts: str) -> str:
        """The full path of ``parts`` under the store's root."""
        return "/".join([self.store.root, *parts])

    def create_dirs(self, *subs: str) -> None:
        """Create the coordination directories (a driver does, before its first claim)."""
        for sub in subs:
            try:
                self.fs.create_dir(self.path(sub), recursive=True)
            except OSError as e:
                raise StoreError(
                    f"cannot create {sub}/ in the store at {self.store.uri}: {scrub(str(e))}"
                ) from e

    def info(self) -> bytes:
        """What a claim or heartbeat file holds: who wrote it (for people debugging a stuck store)."""
        return json.dumps({"driver": self.token, "host": socket.gethostname(), "pid": os.getpid()}).encode()

    def write(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` (whole: on object stores a PUT is visible only when complete)."""
        try:
            with self.fs.open_output_stream(path) as f:
                f.write(data)
        except OSError as e:
            raise StoreError(f"cannot write {path.rsplit('/', 1)[-1]} in the store: {scrub(str(e))}") from e

    def delete(self, path: str) -> None:
        """Delete ``path`` if it is there: another driver (or clean-up) may have deleted it first."""
        try:
            self.fs.delete_file(path)
        except OSError:
            pass

    def read(self, path: str) -> bytes | None:
        """The bytes of ``path``, or ``None`` if it is gone (withdrawn meanwhile)."""
        try:
            with self.fs.open_input_stream(path) as f:
                return f.read()
        except OSError:
            return None

    def names(self, sub: str) -> list[str]:
        """The file names under ``sub`` (dot-files, the private temporaries, left out)."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.path(sub), allow_not_found=True))
        except OSError as e:
            raise StoreError(f"cannot list {sub}/ in the store at {self.store.uri}: {scrub(str(e))}") from e
        return [
            i.base_name for i in infos if i.type == pafs.FileType.File and not i.base_name.startswith(".")
        ]

    def link_all(self, paths: dict[Key, str], data: bytes, sub: str) -> set[Key]:
        """Locally: write ``data`` once, hard-link it to each path; the keys whose link was created.

        ``link(2)`` fails when the name exists, so of any number of drivers exactly one creates each.
        """
        got = set()
        temp = self.path(sub, f".{self.token}-{uuid.uuid4().hex[:8]}.tmp")
        try:
            with open(temp, "wb") as f:
                f.write(data)
            for key, path in paths.items():
                try:
                    os.link(temp, path)
                except FileExistsError:
                    continue
                got.add(key)
        except OSError as e:
            raise StoreError(f"cannot write {sub}/ in the store at {self.store.uri}: {e.strerror}") from e
        finally:
            self.delete(temp)
        return got

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """``fn`` over ``items`` in order, on the pool when there is one (object stores)."""
        if self.pool is None:
            return [fn(item) for item in items]
        return list(self.pool.map(fn, items))

    def shutdown(self) -> None:
        """Stop the pool's threads (a driver's last step)."""
        if self.pool is not None:
            self.pool.shutdown(wait=False)
