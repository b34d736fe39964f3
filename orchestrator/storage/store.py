"""The results store: one small Parquet file per write, on a local disk or any pyarrow filesystem.

Why this shape:

* A sweep writes one row per job from wherever the job finished. Appending to a shared file would
  need locks; writing a *new* file per call needs none, and a file is either fully there or not
  at all (written under ``_tmp/`` and renamed into ``results/``; on object stores, where there is
  no rename, the final key is written in one PUT, which becomes visible only when complete).
* Readers (pyarrow, DuckDB, Polars) glob ``results/*.parquet``; ``_tmp/`` and dot-files are
  invisible to all of them.
* Many small files read slowly, so :meth:`ResultStore.compact` merges them. It writes the merged
  file first and deletes the inputs afterwards: a crash in between leaves duplicate rows, which
  every read drops (rows are identified by ``(job_id, attempt)``).
* Rows are plain data (see :mod:`orchestrator.storage.schema`) and credentials are scrubbed from every
  text column before anything is written.

Layout::

    DIR/results/part-<utc timestamp>-<uuid>.parquet     one file per write() or compact()
    DIR/manifests/sweep-<utc timestamp>-<uuid>.parquet  planned jobs of one sweep
    DIR/analyses/<name>/<name>-<utc timestamp>-<uuid>.parquet  rows of a store-level analysis
    DIR/graphlog/graphlog-<utc timestamp>-<uuid>.parquet  GraphLog sweeps before schema version 2
    DIR/_tmp/                                           files being written (ignored by readers)
    DIR/_live/<sweep>.json                              jobs in flight (orchestrator.storage.live)

Older stores still read: a version-1 result file (one ``model`` column) is mapped to the current
columns as it is read (:func:`orchestrator.storage.reading._from_v1`); compaction rewrites it as
the current version.

:class:`ResultStore` is the API every caller uses; it is a :class:`StoreLocation` (the filesystem,
the root, listing) and delegates to parts small enough to read in one sitting:
:mod:`orchestrator.storage.rows` (rows checked and normalised into tables),
:mod:`orchestrator.storage.writing` (atomic files, fencing out), :mod:`orchestrator.storage.reading`
(schema checks, older versions, files vanishing mid-read) and
:mod:`orchestrator.storage.credentials` (scrubbing). Compaction is here: it is reading and writing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from orchestrator.storage import DEFAULT_STORE
from orchestrator.storage.credentials import runnable_uri, scrub
from orchestrator.storage.errors import StoreError, StoreFenced, StoreMissing, StoreUnreadable
from orchestrator.storage.location import ANALYSES, MANIFESTS, RESULTS, TMP, StoreLocation
from orchestrator.storage.reading import ParquetReader, _from_v1, first_per_key, v1_model_is_program
from orchestrator.storage.rows import analysis_schema, analysis_table, manifest_table, result_table
from orchestrator.storage.schema import (
    FINAL_STATUSES,
    MANIFEST_SCHEMA,
    SCHEMA,
    SCHEMA_VERSION,
    STATUSES,
)
from orchestrator.storage.writing import PartWriter

__all__ = [
    "ANALYSES",
    "DEFAULT_STORE",
    "FINAL_STATUSES",
    "MANIFESTS",
    "RESULTS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "STATUSES",
    "TMP",
    "ResultStore",
    "StoreError",
    "StoreFenced",
    "StoreMissing",
    "StoreUnreadable",
    "_from_v1",
    "rows_with_status",
    "runnable_uri",
    "scrub",
    "v1_model_is_program",
]

LEGACY_ANALYSIS_DIRS = frozenset({"predictive"})
"""Analyses that wrote unversioned files to ``DIR/<name>/`` before they had a table of their own."""


class ResultStore(StoreLocation):
    """Job results of any number of sweeps under one root (a directory or a filesystem URI)."""

    def __init__(
        self,
        uri: str | Path = DEFAULT_STORE,
        *,
        filesystem: pafs.FileSystem | None = None,
        must_exist: bool = False,
    ) -> None:
        """``uri``: a local directory or a pyarrow filesystem URI; with ``filesystem``, a path in it.

        ``must_exist``: raise :class:`StoreMissing` unless a store is there (commands that only read:
        a typo in ``--store`` must not look like an empty store).
        """
        super().__init__(uri, filesystem=filesystem, must_exist=must_exist)
        self.reader = ParquetReader(self)
        self.writer = PartWriter(self)

    def __repr__(self) -> str:
        return f"ResultStore({self.uri!r})"

    # writing

    def write(self, rows: Sequence[dict], name: str | None = None) -> str | None:
        """Store ``rows`` (one per job attempt, see :func:`orchestrator.storage.schema.result_row`) as one new
        Parquet file; return its path. ``name``: the file's name, from :meth:`new_part_name` (a
        fenced commit names the file in its markers before writing it).

        Atomic: afterwards every reader sees all of the rows or, if this raises, none of them.
        """
        if not rows:
            return None
        return self.writer.put(result_table(rows), RESULTS, "part", name)

    @staticmethod
    def new_part_name() -> str:
        """A fresh, unique name for a results file (see :meth:`write`)."""
        return PartWriter.new_part_name()

    def fence_out(self, name: str) -> None:
        """Make sure the results file ``name``, if not published yet, never will be (local stores;
        :meth:`orchestrator.storage.writing.PartWriter.fence_out`)."""
        self.writer.fence_out(name)

    def write_manifest(self, sweep: dict) -> str:
        """Record a sweep's planned jobs, so its remaining work can be listed from the store alone.

        ``sweep`` is ``{"sweep": name, "jobs": [{job_id, game, target, predicate, learner, params,
        seed, repeat, budget_s, dataset, dataset_fingerprint}, ...], ...}``; any other top-level
        keys (the sweep's settings) are kept as JSON text in the ``spec`` column.
        """
        # No user text in file names: a sweep name may carry a secret the scrubber does not know.
        return self.writer.put(manifest_table(sweep), MANIFESTS, "sweep")

    def write_analysis(self, name: str, rows: Sequence[dict]) -> str | None:
        """Store rows of a store-level analysis (``name`` in :data:`orchestrator.storage.schema.ANALYSIS_SCHEMAS`)
        as one new Parquet file under ``analyses/<name>/``; atomic like :meth:`write`."""
        analysis_schema(name)  # an unknown name is an error even with no rows
        if not rows:
            return None
        return self.writer.put(analysis_table(name, rows), f"{ANALYSES}/{name}", name)

    def _put(self, table: pa.Table, subdir: str, prefix: str, name: str | None = None) -> str:
        """Write ``table`` as a new file under ``subdir`` (kept for ``orch gc``, which rewrites files)."""
        return self.writer.put(table, subdir, prefix, name)

    def _discard(self, path: str) -> None:
        """Delete ``path`` if it is there (kept for ``orch gc``)."""
        self.writer.discard(path)

    # reading

    def read_analysis(self, name: str) -> pa.Table:
        """Every stored row of analysis ``name``, oldest file first (callers keep the newest per key).

        Files from before the analysis table was versioned (``predictive/`` without version
        metadata) are read too, with the columns they have.
        """
        schema = analysis_schema(name)
        _, table = self.reader.load(f"{ANALYSES}/{name}", schema)
        legacy = self.files(name) if name in LEGACY_ANALYSIS_DIRS else []
        if not legacy:
            return table
        return pa.concat_tables([*self.reader.legacy_analysis(legacy, schema), table])

    def read(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None) -> pa.Table:
        """Every stored row (each ``(job_id, attempt)`` once), optionally projected and filtered."""
        wanted = list(columns) if columns is not None else SCHEMA.names
        unknown = [c for c in wanted if c not in SCHEMA.names]
        if unknown:
            raise StoreError(f"unknown column(s) {unknown}; the schema is in docs/store.md")
        keys = ["job_id", "attempt", "finished"]
        load = wanted + [k for k in keys if k not in wanted]
        _, table = self.reader.load(RESULTS, SCHEMA, load, filter)
        table = first_per_key(table, ["job_id", "attempt"], [("finished", "descending")])
        return table.select(wanted)

    def latest(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None) -> pa.Table:
        """One row per job: its highest attempt (ties: the one that finished last)."""
        wanted = list(columns) if columns is not None else SCHEMA.names
        table = self.read(
            [*wanted, *(k for k in ("job_id", "attempt", "finished") if k not in wanted)], filter
        )
        table = first_per_key(table, ["job_id"], [("attempt", "descending"), ("finished", "descending")])
        return table.select(wanted)

    def job_status(self) -> dict[str, str]:
        """``job_id -> status`` of each job's latest attempt (reads only four columns)."""
        table = self.latest(["job_id", "status"])
        return dict(zip(table["job_id"].to_pylist(), table["status"].to_pylist(), strict=True))

    def manifests(self) -> pa.Table:
        """Every planned job of every recorded sweep (one row per sweep and job)."""
        return self.reader.load(MANIFESTS, MANIFEST_SCHEMA)[1]

    # maintenance

    def compact(self) -> tuple[int, int]:
        """Merge all result files into one; return ``(files_before, files_after)``.

        Crash-safe: the merged file is committed before any input is deleted, and a file written
        by someone else while this runs is left alone (only the files listed at the start merge).
        """
        paths, merged = self.reader.load(RESULTS, SCHEMA)
        if len(paths) <= 1:
            return len(paths), len(paths)
        merged = first_per_key(merged, ["job_id", "attempt"], [("finished", "descending")])
        self.writer.put(merged.replace_schema_metadata(SCHEMA.metadata), RESULTS, "part")
        for path in paths:
            try:
                self.fs.delete_file(path)
            except FileNotFoundError:
                pass  # a concurrent compaction got there first
            except OSError as e:
                raise StoreError(
                    f"compacted, but could not delete {self.display(path)} ({scrub(str(e))}); its rows are "
                    "also in the merged file and reads skip the duplicates: delete it when possible"
                ) from e
        return len(paths), len(self.files(RESULTS))


def rows_with_status(table: pa.Table, statuses: Iterable[str]) -> pa.Table:
    """The rows of ``table`` whose status is one of ``statuses``."""
    return table.filter(pc.is_in(table["status"], pa.array(sorted(statuses), pa.string())))
