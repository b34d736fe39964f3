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
columns as it is read (:func:`_from_v1`); compaction rewrites it as the current version.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, overload

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from orchestrator import __version__
from orchestrator.storage import DEFAULT_STORE
from orchestrator.storage.schema import (
    ANALYSIS_SCHEMAS,
    FINAL_STATUSES,
    MANIFEST_SCHEMA,
    ROW_DEFAULTS,
    SCHEMA,
    SCHEMA_VERSION,
    SCHEMAS,
    STATUSES,
    VERSION_KEY,
)

__all__ = [
    "DEFAULT_STORE",
    "FINAL_STATUSES",
    "SCHEMA",
    "SCHEMA_VERSION",
    "STATUSES",
    "ResultStore",
    "StoreError",
    "StoreMissing",
    "scrub",
]

RESULTS, MANIFESTS, ANALYSES, TMP = "results", "manifests", "analyses", "_tmp"
LEGACY_ANALYSIS_DIRS = frozenset({"predictive"})
"""Analyses that wrote unversioned files to ``DIR/<name>/`` before they had a table of their own."""


class StoreError(RuntimeError):
    """Anything wrong with the store itself: unreadable or foreign files, a full or read-only disk."""


class StoreMissing(StoreError):
    """A command that reads a store was pointed at a location holding none (exit 2, not "no results")."""


# --- credentials -----------------------------------------------------------------------------------

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s@]+@")
_SECRET_PARAM = re.compile(
    r"(?i)(?P<key>\b(?:aws_access_key_id|aws_secret_access_key|aws_session_token|access_key(?:_id)?"
    r"|secret_key|secret_access_key|session_token|password|passwd|token))(?P<sep>\s*(?:=|:(?!-))\s*[\"']?)"
    r"[^\s&\"',;]+"
)
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")


@overload
def scrub(text: str) -> str: ...
@overload
def scrub(text: None) -> None: ...
def scrub(text: str | None) -> str | None:
    """``text`` with anything that looks like a credential replaced by ``***``.

    Covers URIs with userinfo (``s3://KEY:SECRET@bucket``), ``key=value`` pairs for the usual
    secret names (also as URI query parameters) and bare AWS access key ids.
    """
    if text is None:
        return None
    text = _USERINFO.sub(r"\g<scheme>***@", text)
    text = _SECRET_PARAM.sub(r"\g<key>\g<sep>***", text)
    return _AWS_KEY_ID.sub("***", text)


# --- rows ------------------------------------------------------------------------------------------


UNSCRUBBED = frozenset({"program", "description"})
"""Learned models are made from the data, not the environment; scrubbing could corrupt a rule."""


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _utc(value: Any) -> Any:
    """Naive datetimes are taken as UTC; epoch seconds are accepted too."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, tz=dt.UTC)
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def _normalise(row: dict, schema: pa.Schema, defaults: dict, where: str) -> dict:
    unknown = set(row) - set(schema.names)
    if unknown:
        raise StoreError(f"{where}: unknown column(s) {sorted(unknown)}; the schema is in docs/store.md")
    out = {**defaults, **{k: v for k, v in row.items() if v is not None}}
    out["schema_version"] = int(schema.metadata[VERSION_KEY])
    if "orch_version" in schema.names:
        out.setdefault("orch_version", __version__)
    for name in ("params", "extra", "spec"):
        if name in out:
            out[name] = _json_text(out[name])
    for name in ("started", "finished", "created"):
        if name in out:
            out[name] = _utc(out[name])
    for field in schema:
        if field.name in UNSCRUBBED:
            pass
        elif pa.types.is_string(field.type) and isinstance(out.get(field.name), str):
            out[field.name] = scrub(out[field.name])
        if not field.nullable and out.get(field.name) is None:
            raise StoreError(f"{where}: column {field.name!r} is required")
    return out


def _table(rows: list[dict], schema: pa.Schema, where: str) -> pa.Table:
    try:
        return pa.Table.from_pylist(rows, schema=schema)
    except (pa.ArrowException, TypeError, ValueError) as e:
        for row in rows:  # find the culprit, to name its job and column
            for name, value in row.items():
                try:
                    pa.array([value], schema.field(name).type)
                except (pa.ArrowException, TypeError, ValueError):
                    raise StoreError(
                        f"{where}: job {row.get('job_id')!r}: {name}={value!r:.80} is not {schema.field(name).type}"
                    ) from e
        raise StoreError(f"{where}: a value does not fit the schema: {e}") from e


def _from_v1(table: pa.Table) -> pa.Table:
    """Version-1 rows in the current schema: the old ``model`` text becomes ``program`` when it is a
    program for the learner that wrote it (:func:`v1_model_is_program`), else ``description``.

    Only old rows are mapped this way; new rows carry both columns as the learner gave them.
    """
    models, learners = table["model"].to_pylist(), table["learner"].to_pylist()
    program = [
        m if m is not None and v1_model_is_program(m, lr) else None
        for m, lr in zip(models, learners, strict=True)
    ]
    description = [m if p is None else None for m, p in zip(models, program, strict=True)]
    cols = {f.name: table[f.name] for f in SCHEMA if f.name in table.column_names}
    cols["program"], cols["description"] = pa.array(program, pa.string()), pa.array(description, pa.string())
    return pa.table({f.name: cols[f.name] for f in SCHEMA}, schema=SCHEMA)


@lru_cache(maxsize=4096)
def v1_model_is_program(text: str, learner: str | None) -> bool:
    """Whether a version-1 ``model`` text was rules: the learner's family gives rules (unknown
    learners: any) and clingo accepts the text (the empty text is the empty program)."""
    from learners.base import UnknownLearner, spec_for
    from tasks.asp import rejection

    try:
        if learner is not None and not spec_for(learner)[0].symbolic:
            return False
    except UnknownLearner:
        pass
    return not text.strip() or rejection(text) is None


def _first_per_key(table: pa.Table, keys: list[str], order: list[tuple[str, str]]) -> pa.Table:
    """The first row of each ``keys`` group when rows are sorted by ``order`` within the group."""
    if table.num_rows == 0:
        return table
    ordered = table.sort_by([(k, "ascending") for k in keys] + order)
    ordered = ordered.append_column("_row", pa.array(range(ordered.num_rows), pa.int64()))
    firsts = ordered.group_by(keys, use_threads=False).aggregate([("_row", "min")])
    rows = firsts["_row_min"]
    return ordered.take(rows.take(pc.sort_indices(rows))).drop_columns(["_row"])


def _stamp() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")


# --- the store -------------------------------------------------------------------------------------


class ResultStore:
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
        uri = str(uri)
        if filesystem is not None:
            self.fs, root = filesystem, uri
        elif "://" in uri:
            try:
                self.fs, root = pafs.FileSystem.from_uri(uri)
            except (pa.ArrowException, ValueError, OSError) as e:
                raise StoreError(f"cannot open store {scrub(uri)}: {scrub(str(e))}") from e
        else:
            self.fs, root = pafs.LocalFileSystem(), str(Path(uri).expanduser().resolve())
        self.uri = scrub(uri)
        self.root = root.rstrip("/")
        self.local = isinstance(self.fs, pafs.LocalFileSystem)
        self._checked: set[str] = set()  # committed files never change, so each is checked once
        self._versions: dict[str, int] = {}
        if must_exist and not self.exists():
            raise StoreMissing(f"no results store at {self._display(self.root)} (check --store)")

    def __repr__(self) -> str:
        return f"ResultStore({self.uri!r})"

    def exists(self) -> bool:
        """Whether a store is there: something (results, manifests, GraphLog rows, ...) is under its root."""
        try:
            return bool(self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True)))
        except OSError:
            return False

    def _path(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def _display(self, path: str) -> str:
        return path if self.local else f"{self.uri} ({path})"

    # writing

    def write(self, rows: Sequence[dict]) -> str | None:
        """Store ``rows`` (one per job attempt, see :func:`orchestrator.storage.schema.result_row`) as one new
        Parquet file; return its path.

        Atomic: afterwards every reader sees all of the rows or, if this raises, none of them.
        """
        if not rows:
            return None
        normal = [
            _normalise(r, SCHEMA, ROW_DEFAULTS, f"result row {i} (job {r.get('job_id')!r})")
            for i, r in enumerate(rows)
        ]
        for r in normal:
            if r["status"] not in STATUSES:
                raise StoreError(
                    f"result row for job {r['job_id']!r}: status {r['status']!r} is not one of {sorted(STATUSES)}"
                )
        return self._put(_table(normal, SCHEMA, "result rows"), RESULTS, "part")

    def write_manifest(self, sweep: dict) -> str:
        """Record a sweep's planned jobs, so its remaining work can be listed from the store alone.

        ``sweep`` is ``{"sweep": name, "jobs": [{job_id, game, target, predicate, learner, params,
        seed, repeat, budget_s, dataset, dataset_fingerprint}, ...], ...}``; any other top-level
        keys (the sweep's settings) are kept as JSON text in the ``spec`` column.
        """
        name = sweep.get("sweep") or sweep.get("name")
        if not name:
            raise StoreError("manifest: the sweep needs a name (key 'sweep')")
        jobs = sweep.get("jobs")
        if not isinstance(jobs, list | tuple):
            raise StoreError(f"manifest of sweep {name!r}: 'jobs' must be a list of job dicts")
        spec = _json_text({k: v for k, v in sweep.items() if k not in ("sweep", "name", "jobs")})
        created = dt.datetime.now(dt.UTC)
        rows = [
            _normalise(
                {**job, "sweep": name, "created": created, "spec": spec},
                MANIFEST_SCHEMA,
                {"repeat": 0, "params": "{}"},
                f"manifest of sweep {name!r}, job {i}",
            )
            for i, job in enumerate(jobs)
        ]
        # No user text in file names: a sweep name may carry a secret the scrubber does not know.
        return self._put(
            _table(rows, MANIFEST_SCHEMA, f"manifest of sweep {scrub(name)!r}"), MANIFESTS, "sweep"
        )

    def write_analysis(self, name: str, rows: Sequence[dict]) -> str | None:
        """Store rows of a store-level analysis (``name`` in :data:`orchestrator.storage.schema.ANALYSIS_SCHEMAS`)
        as one new Parquet file under ``analyses/<name>/``; atomic like :meth:`write`."""
        schema = self._analysis_schema(name)
        if not rows:
            return None
        normal = [_normalise(dict(r), schema, {}, f"{name} row {i}") for i, r in enumerate(rows)]
        return self._put(_table(normal, schema, f"{name} rows"), f"{ANALYSES}/{name}", name)

    def read_analysis(self, name: str) -> pa.Table:
        """Every stored row of analysis ``name``, oldest file first (callers keep the newest per key).

        Files from before the analysis table was versioned (``predictive/`` without version
        metadata) are read too, with the columns they have.
        """
        schema = self._analysis_schema(name)
        _, table = self._load(f"{ANALYSES}/{name}", schema)
        legacy = [p for p in self.files(name)] if name in LEGACY_ANALYSIS_DIRS else []
        if not legacy:
            return table
        old = []
        for path in legacy:
            try:
                t = pq.read_table(path, filesystem=self.fs)
            except (OSError, pa.ArrowException) as e:
                raise self._unreadable(path, e) from e
            cols = {f.name: t[f.name].cast(f.type) if f.name in t.column_names else pa.nulls(t.num_rows, f.type)
                    for f in schema}  # fmt: skip
            cols["schema_version"] = pa.array([1] * t.num_rows, pa.int32())
            old.append(pa.table(cols, schema=schema))
        return pa.concat_tables([*old, table])

    @staticmethod
    def _analysis_schema(name: str) -> pa.Schema:
        if name not in ANALYSIS_SCHEMAS:
            raise StoreError(f"unknown analysis table {name!r}; known: {', '.join(sorted(ANALYSIS_SCHEMAS))}")
        return ANALYSIS_SCHEMAS[name]

    def _put(self, table: pa.Table, subdir: str, prefix: str) -> str:
        final = self._path(subdir, f"{prefix}-{_stamp()}-{uuid.uuid4().hex}.parquet")
        temp = self._path(TMP, final.rsplit("/", 1)[1] + ".tmp") if self.local else final
        try:
            self.fs.create_dir(self._path(subdir), recursive=True)
            if self.local:
                self.fs.create_dir(self._path(TMP), recursive=True)
            pq.write_table(table, temp, filesystem=self.fs, compression="zstd")
            if self.local:
                self.fs.move(temp, final)
        except OSError as e:
            self._discard(temp)
            raise StoreError(f"cannot write to the store at {self._display(final)}: {scrub(str(e))}") from e
        return final

    def _discard(self, path: str) -> None:
        try:
            self.fs.delete_file(path)
        except OSError:
            pass

    # reading

    def files(self, subdir: str = RESULTS) -> list[str]:
        """Paths of the committed Parquet files under ``subdir``, oldest name first.

        A listing can fail when a file vanishes under it (a concurrent compaction deleted it, or
        the folder was just made): that is retried; a store that cannot be listed is a StoreError.
        """
        for attempt in range(5):
            try:
                infos = self.fs.get_file_info(pafs.FileSelector(self._path(subdir), allow_not_found=True))
                break
            except FileNotFoundError:
                if attempt == 4:
                    raise StoreError(
                        f"{self._display(self._path(subdir))}: files keep vanishing while being listed"
                    ) from None
                time.sleep(0.01 * (attempt + 1))
            except OSError as e:
                raise StoreError(
                    f"cannot list the store at {self._display(self._path(subdir))}: {scrub(str(e))}"
                ) from e
        return sorted(
            i.path
            for i in infos
            if i.type == pafs.FileType.File
            and i.base_name.endswith(".parquet")
            and i.base_name[0] not in "._"
        )

    def _dataset(self, paths: list[str], schema: pa.Schema) -> ds.Dataset:
        for path in paths:
            if path not in self._checked:
                self._check(path, schema)
                self._checked.add(path)
        return ds.dataset(paths, schema=schema, format="parquet", filesystem=self.fs)

    def _unreadable(self, path: str, e: Exception) -> StoreError:
        return StoreError(f"{self._display(path)}: not a readable Parquet file: {scrub(str(e))}")

    def _version(self, path: str) -> int:
        """The result-schema version a results file was written with (read from its footer once)."""
        if path not in self._versions:
            try:
                found = pq.read_schema(path, filesystem=self.fs)
            except (OSError, pa.ArrowException) as e:
                raise self._unreadable(path, e) from e
            version = (found.metadata or {}).get(VERSION_KEY, b"")
            self._versions[path] = int(version) if version.isdigit() and int(version) in SCHEMAS else -1
        return self._versions[path]

    def _results(self, paths: list[str], columns: list[str], filter: pc.Expression | None) -> pa.Table:
        """Rows of result files of every known version, in the current schema (``columns`` of it)."""
        by_version: dict[int, list[str]] = defaultdict(list)
        for path in paths:
            by_version[self._version(path)].append(path)
        tables = []
        if by_version.get(-1):  # unknown version: let _check name the file and what is wrong
            self._check(by_version[-1][0], SCHEMA)
        if by_version.get(SCHEMA_VERSION):
            tables.append(
                self._dataset(by_version[SCHEMA_VERSION], SCHEMA).to_table(columns=columns, filter=filter)
            )
        if by_version.get(1):
            old = _from_v1(self._dataset(by_version[1], SCHEMAS[1]).to_table())
            tables.append((old if filter is None else old.filter(filter)).select(columns))
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def _check(self, path: str, schema: pa.Schema) -> None:
        """Refuse a file of another schema version, or one missing columns, naming the file."""
        where = self._display(path)
        try:
            found = pq.read_schema(path, filesystem=self.fs)
        except (OSError, pa.ArrowException) as e:
            raise self._unreadable(path, e) from e
        version = (found.metadata or {}).get(VERSION_KEY)
        if version is None:
            raise StoreError(f"{where}: not an orch store file (no {VERSION_KEY.decode()} in its metadata)")
        if version != schema.metadata[VERSION_KEY]:
            raise StoreError(
                f"{where}: written with store schema version {version.decode()}, this orch reads version "
                f"{schema.metadata[VERSION_KEY].decode()}" + (" (and 1)" if schema is SCHEMA else "")
            )
        missing = [f.name for f in schema if f.name not in found.names]
        if missing:
            raise StoreError(f"{where}: missing column(s) {missing}")
        wrong = [
            f"{f.name} is {found.field(f.name).type}" for f in schema if found.field(f.name).type != f.type
        ]
        if wrong:
            raise StoreError(f"{where}: column type(s) differ from the schema: {', '.join(wrong)}")

    def _load(
        self,
        subdir: str,
        schema: pa.Schema,
        columns: list[str] | None = None,
        filter: pc.Expression | None = None,
    ) -> tuple[list[str], pa.Table]:
        """The files under ``subdir`` and their rows. A file that vanishes while being read was
        merged by a concurrent compaction, whose output is already committed: list again."""
        for _ in range(5):
            paths = self.files(subdir)
            if not paths:
                return paths, schema.empty_table().select(columns or schema.names)
            try:
                if schema is SCHEMA:
                    return paths, self._results(paths, columns or schema.names, filter)
                return paths, self._dataset(paths, schema).to_table(columns=columns, filter=filter)
            except (OSError, pa.ArrowException, StoreError) as e:
                if all(i.type == pafs.FileType.File for i in self.fs.get_file_info(paths)):
                    if isinstance(e, StoreError):
                        raise
                    where = self._display(self._path(subdir))
                    raise StoreError(f"cannot read the store at {where}: {scrub(str(e))}") from e
        raise StoreError(f"{self._display(self._path(subdir))}: files keep vanishing while being read")

    def read(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None) -> pa.Table:
        """Every stored row (each ``(job_id, attempt)`` once), optionally projected and filtered."""
        wanted = list(columns) if columns is not None else SCHEMA.names
        unknown = [c for c in wanted if c not in SCHEMA.names]
        if unknown:
            raise StoreError(f"unknown column(s) {unknown}; the schema is in docs/store.md")
        keys = ["job_id", "attempt", "finished"]
        load = wanted + [k for k in keys if k not in wanted]
        _, table = self._load(RESULTS, SCHEMA, load, filter)
        table = _first_per_key(table, ["job_id", "attempt"], [("finished", "descending")])
        return table.select(wanted)

    def latest(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None) -> pa.Table:
        """One row per job: its highest attempt (ties: the one that finished last)."""
        wanted = list(columns) if columns is not None else SCHEMA.names
        table = self.read(
            [*wanted, *(k for k in ("job_id", "attempt", "finished") if k not in wanted)], filter
        )
        table = _first_per_key(table, ["job_id"], [("attempt", "descending"), ("finished", "descending")])
        return table.select(wanted)

    def job_status(self) -> dict[str, str]:
        """``job_id -> status`` of each job's latest attempt (reads only four columns)."""
        table = self.latest(["job_id", "status"])
        return dict(zip(table["job_id"].to_pylist(), table["status"].to_pylist(), strict=True))

    def manifests(self) -> pa.Table:
        """Every planned job of every recorded sweep (one row per sweep and job)."""
        return self._load(MANIFESTS, MANIFEST_SCHEMA)[1]

    # maintenance

    def compact(self) -> tuple[int, int]:
        """Merge all result files into one; return ``(files_before, files_after)``.

        Crash-safe: the merged file is committed before any input is deleted, and a file written
        by someone else while this runs is left alone (only the files listed at the start merge).
        """
        paths, merged = self._load(RESULTS, SCHEMA)
        if len(paths) <= 1:
            return len(paths), len(paths)
        merged = _first_per_key(merged, ["job_id", "attempt"], [("finished", "descending")])
        self._put(merged.replace_schema_metadata(SCHEMA.metadata), RESULTS, "part")
        for path in paths:
            try:
                self.fs.delete_file(path)
            except FileNotFoundError:
                pass  # a concurrent compaction got there first
            except OSError as e:
                raise StoreError(
                    f"compacted, but could not delete {self._display(path)} ({scrub(str(e))}); its rows are "
                    "also in the merged file and reads skip the duplicates: delete it when possible"
                ) from e
        return len(paths), len(self.files(RESULTS))


def rows_with_status(table: pa.Table, statuses: Iterable[str]) -> pa.Table:
    """The rows of ``table`` whose status is one of ``statuses``."""
    return table.filter(pc.is_in(table["status"], pa.array(sorted(statuses), pa.string())))
