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
* Rows are plain data (see :mod:`orchestrator.schema`) and credentials are scrubbed from every
  text column before anything is written.

Layout::

    DIR/results/part-<utc timestamp>-<uuid>.parquet     one file per write() or compact()
    DIR/manifests/sweep-<utc timestamp>-<uuid>.parquet  planned jobs of one sweep
    DIR/_tmp/                                           files being written (ignored by readers)
"""

from __future__ import annotations

import datetime as dt
import json
import re
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import typer

from orchestrator import __version__
from orchestrator.schema import (
    FINAL_STATUSES,
    MANIFEST_SCHEMA,
    ROW_DEFAULTS,
    SCHEMA,
    SCHEMA_VERSION,
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
    "compact_command",
    "scrub",
]

DEFAULT_STORE = "./orch-results"
RESULTS, MANIFESTS, TMP = "results", "manifests", "_tmp"


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


UNSCRUBBED = frozenset({"model"})
"""Learned rules are made from the data, not the environment; scrubbing could corrupt a rule."""


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
    out["schema_version"] = SCHEMA_VERSION
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

    def write(self, rows: list[dict]) -> str | None:
        """Store ``rows`` (one dict per job attempt) as one new Parquet file; return its path.

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
        """Paths of the committed Parquet files under ``subdir``, oldest name first."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self._path(subdir), allow_not_found=True))
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

    def _check(self, path: str, schema: pa.Schema) -> None:
        """Refuse a file of another schema version, or one missing columns, naming the file."""
        where = self._display(path)
        try:
            found = pq.read_schema(path, filesystem=self.fs)
        except (OSError, pa.ArrowException) as e:
            raise StoreError(f"{where}: not a readable Parquet file: {scrub(str(e))}") from e
        version = (found.metadata or {}).get(VERSION_KEY)
        if version is None:
            raise StoreError(f"{where}: not an orch store file (no {VERSION_KEY.decode()} in its metadata)")
        if version != str(SCHEMA_VERSION).encode():
            raise StoreError(
                f"{where}: written with store schema version {version.decode()}, this orch reads version "
                f"{SCHEMA_VERSION}"
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


def compact_command(
    store: str = typer.Option(
        DEFAULT_STORE, "--store", help="Store directory or URI (e.g. s3://bucket/prefix)."
    ),
) -> None:
    """Merge the store's small result files into one (safe to run while a sweep writes)."""
    try:
        before, after = ResultStore(store, must_exist=True).compact()
    except StoreError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    typer.echo(f"{scrub(store)}: {before} result file(s) -> {after}")
