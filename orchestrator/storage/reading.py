"""Reading a store's Parquet files: schema checks, older versions mapped, files that vanish mid-read.

Why apart from the store's API: a read must refuse a foreign file by name, map files of every
older schema version into the current one (as they are read, never rewriting them), and survive a
concurrent compaction that deletes the files it listed. None of that is what a caller asks for
("the rows of job X"), so it lives here, behind :class:`orchestrator.storage.store.ResultStore`.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from orchestrator.storage.credentials import scrub
from orchestrator.storage.errors import StoreError
from orchestrator.storage.location import StoreLocation
from orchestrator.storage.schema import SCHEMA, SCHEMA_VERSION, SCHEMAS, VERSION_KEY, missing_as_null

_OLDER = ", ".join(str(v) for v in sorted(SCHEMAS) if v != SCHEMA_VERSION)
"""The older result-schema versions this orch still reads, for messages."""


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
    return missing_as_null(pa.table(cols), SCHEMA.names)


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


def first_per_key(table: pa.Table, keys: list[str], order: list[tuple[str, str]]) -> pa.Table:
    """The first row of each ``keys`` group when rows are sorted by ``order`` within the group."""
    if table.num_rows == 0:
        return table
    ordered = table.sort_by([(k, "ascending") for k in keys] + order)
    ordered = ordered.append_column("_row", pa.array(range(ordered.num_rows), pa.int64()))
    firsts = ordered.group_by(keys, use_threads=False).aggregate([("_row", "min")])
    rows = firsts["_row_min"]
    return ordered.take(rows.take(pc.sort_indices(rows))).drop_columns(["_row"])


class ParquetReader:
    """Checked reads of the committed Parquet files of one store location."""

    def __init__(self, location: StoreLocation) -> None:
        """Committed files never change, so each is checked (and its version read) once."""
        self.location, self.fs = location, location.fs
        self._checked: set[str] = set()
        self._versions: dict[str, int] = {}

    def _dataset(self, paths: list[str], schema: pa.Schema) -> ds.Dataset:
        """A dataset over ``paths``, each file checked against ``schema`` the first time it is read."""
        for path in paths:
            if path not in self._checked:
                self._check(path, schema)
                self._checked.add(path)
        return ds.dataset(paths, schema=schema, format="parquet", filesystem=self.fs)

    def unreadable(self, path: str, e: Exception) -> StoreError:
        """The error for a file that is not Parquet at all (truncated, or something else)."""
        return StoreError(f"{self.location.display(path)}: not a readable Parquet file: {scrub(str(e))}")

    def _version(self, path: str) -> int:
        """The result-schema version a results file was written with (read from its footer once)."""
        if path not in self._versions:
            try:
                found = pq.read_schema(path, filesystem=self.fs)
            except (OSError, pa.ArrowException) as e:
                raise self.unreadable(path, e) from e
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
        for version in sorted(v for v in by_version if 1 < v < SCHEMA_VERSION):
            tables.append(self._fewer_columns(by_version[version], SCHEMAS[version], columns, filter))
        return tables[0] if len(tables) == 1 else pa.concat_tables(tables)

    def _fewer_columns(
        self, paths: list[str], schema: pa.Schema, columns: list[str], filter: pc.Expression | None
    ) -> pa.Table:
        """Rows of files of an older version that only lacks columns of the current one (read as
        null). Projected and filtered in the files, so an old store reads as fast as a new one."""
        dataset = self._dataset(paths, schema)
        try:
            table = dataset.to_table(columns=[c for c in columns if c in schema.names], filter=filter)
        except pa.ArrowInvalid:  # the filter names a column this version lacks: filter the nulls
            whole = missing_as_null(dataset.to_table(), SCHEMA.names)
            return whole.filter(filter).select(columns)
        return missing_as_null(table, columns)

    def _check(self, path: str, schema: pa.Schema) -> None:
        """Refuse a file of another schema version, or one missing columns, naming the file."""
        where = self.location.display(path)
        try:
            found = pq.read_schema(path, filesystem=self.fs)
        except (OSError, pa.ArrowException) as e:
            raise self.unreadable(path, e) from e
        version = (found.metadata or {}).get(VERSION_KEY)
        if version is None:
            raise StoreError(f"{where}: not an orch store file (no {VERSION_KEY.decode()} in its metadata)")
        if version != schema.metadata[VERSION_KEY]:
            raise StoreError(
                f"{where}: written with store schema version {version.decode()}, this orch reads version "
                f"{schema.metadata[VERSION_KEY].decode()}" + (f" (and {_OLDER})" if schema is SCHEMA else "")
            )
        missing = [f.name for f in schema if f.name not in found.names]
        if missing:
            raise StoreError(f"{where}: missing column(s) {missing}")
        wrong = [
            f"{f.name} is {found.field(f.name).type}" for f in schema if found.field(f.name).type != f.type
        ]
        if wrong:
            raise StoreError(f"{where}: column type(s) differ from the schema: {', '.join(wrong)}")

    def load(
        self,
        subdir: str,
        schema: pa.Schema,
        columns: list[str] | None = None,
        filter: pc.Expression | None = None,
    ) -> tuple[list[str], pa.Table]:
        """The files under ``subdir`` and their rows. A file that vanishes while being read was
        merged by a concurrent compaction, whose output is already committed: list again."""
        for _ in range(5):
            paths = self.location.files(subdir)
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
                    where = self.location.display(self.location.path(subdir))
                    raise StoreError(f"cannot read the store at {where}: {scrub(str(e))}") from e
        raise StoreError(
            f"{self.location.display(self.location.path(subdir))}: files keep vanishing while being read"
        )

    def legacy_analysis(self, paths: list[str], schema: pa.Schema) -> list[pa.Table]:
        """Unversioned files of an analysis from before it had a table (``predictive/``), in
        ``schema``: the columns they have, the others null, marked schema version 1."""
        old = []
        for path in paths:
            try:
                t = pq.read_table(path, filesystem=self.fs)
            except (OSError, pa.ArrowException) as e:
                raise self.unreadable(path, e) from e
            cols = {f.name: t[f.name].cast(f.type) if f.name in t.column_names else pa.nulls(t.num_rows, f.type)
                    for f in schema}  # fmt: skip
            cols["schema_version"] = pa.array([1] * t.num_rows, pa.int32())
            old.append(pa.table(cols, schema=schema))
        return old
