"""Writing a store's Parquet files atomically, and fencing out a file a stalled driver has not published.

Why apart from the store's API: every file (results, manifests, analyses, a compaction's output) is
written the same way — to ``_tmp/`` and renamed into place locally, in one PUT on object stores — so
that a reader sees all of a file or none of it, and a failure (full disk, quota, read-only) leaves
nothing behind and names the path. The fenced commit (:mod:`orchestrator.storage.fencing`) relies on
the rename being the only way a results file appears, which is what :meth:`PartWriter.fence_out`
blocks.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from orchestrator.storage.credentials import scrub
from orchestrator.storage.errors import StoreError, StoreFenced
from orchestrator.storage.location import TMP, StoreLocation


def _void(temp: str) -> str:
    """Where :meth:`ResultStore.fence_out` moves a temporary results file it fenced out."""
    return temp.removesuffix(".tmp") + ".void"


def _stamp() -> str:
    """A UTC timestamp for file names: names sort in the order files were written."""
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")


class PartWriter:
    """Atomic writes of new Parquet files under one store location."""

    def __init__(self, location: StoreLocation) -> None:
        """Writes go under ``location``'s root, through its filesystem."""
        self.location, self.fs = location, location.fs

    @staticmethod
    def new_part_name() -> str:
        """A fresh, unique name for a results file (a fenced commit names it before writing it)."""
        return f"part-{_stamp()}-{uuid.uuid4().hex}.parquet"

    def fence_out(self, name: str) -> None:
        """Make sure the results file ``name``, if not published yet, never will be (local stores).

        Its temporary file is renamed away, or, if it does not exist yet, a directory takes its
        name: the writer's rename (or its open) then fails and it learns it was fenced out. On
        object stores a file is published in one PUT and cannot be stopped (docs/store.md).
        """
        if not self.location.local:
            return
        temp = Path(self.location.path(TMP, name + ".tmp"))
        for _ in range(5):
            try:
                os.rename(temp, _void(str(temp)))
                return
            except FileNotFoundError:
                pass
            except IsADirectoryError:
                return
            except OSError as e:
                if temp.is_dir():
                    return
                raise StoreError(
                    f"cannot fence out {name} in the store at {self.location.root}: {e.strerror}"
                ) from e
            try:
                temp.parent.mkdir(parents=True, exist_ok=True)
                temp.mkdir()
                return
            except FileExistsError:
                continue  # the writer just created it: rename it away instead

    def put(self, table: pa.Table, subdir: str, prefix: str, name: str | None = None) -> str:
        """Write ``table`` as a new file ``subdir/<name>`` (default ``<prefix>-<stamp>-<uuid>``); its path.

        Raises :class:`StoreFenced` when another driver fenced ``name`` out, else
        :class:`StoreError` naming the path (the temporary file removed).
        """
        final = self.location.path(subdir, name or f"{prefix}-{_stamp()}-{uuid.uuid4().hex}.parquet")
        temp = self.location.path(TMP, final.rsplit("/", 1)[1] + ".tmp") if self.location.local else final
        try:
            self.fs.create_dir(self.location.path(subdir), recursive=True)
            if self.location.local:
                self.fs.create_dir(self.location.path(TMP), recursive=True)
            pq.write_table(table, temp, filesystem=self.fs, compression="zstd")
            if self.location.local:
                self.fs.move(temp, final)
        except OSError as e:
            if (
                name is not None
                and self.location.local
                and (os.path.isdir(temp) or os.path.exists(_void(temp)))
            ):
                raise StoreFenced(f"{name}: fenced out by another driver; its rows were not stored") from e
            self.discard(temp)
            raise StoreError(
                f"cannot write to the store at {self.location.display(final)}: {scrub(str(e))}"
            ) from e
        return final

    def discard(self, path: str) -> None:
        """Delete ``path`` if it is there (a failed write's temporary file, a collected file)."""
        try:
            self.fs.delete_file(path)
        except OSError:
            pass
