"""Rows into Arrow tables of the store's schemas: checked, normalised and scrubbed before writing.

Why apart from the writing: what a row must look like (known columns, required ones present,
JSON text for dict columns, UTC timestamps, credentials scrubbed from text) is the same whether it
is a result, a manifest or an analysis row, and none of it touches a filesystem. A bad value is
named with its job and column here, before anything is written.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from orchestrator import __version__
from orchestrator.storage.credentials import scrub
from orchestrator.storage.errors import StoreError
from orchestrator.storage.schema import (
    ANALYSIS_SCHEMAS,
    MANIFEST_SCHEMA,
    ROW_DEFAULTS,
    SCHEMA,
    STATUSES,
    VERSION_KEY,
)

UNSCRUBBED = frozenset({"program", "description"})
"""Learned models are made from the data, not the environment; scrubbing could corrupt a rule."""


def _json_text(value: Any) -> str:
    """Dict columns (params, extra, spec) as stable JSON text: equal values compare equal."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _utc(value: Any) -> Any:
    """Naive datetimes are taken as UTC; epoch seconds are accepted too."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return dt.datetime.fromtimestamp(value, tz=dt.UTC)
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


def _normalise(row: dict, schema: pa.Schema, defaults: dict, where: str) -> dict:
    """``row`` as ``schema`` stores it: defaults filled, dicts as JSON, times in UTC, text scrubbed;
    unknown columns and missing required ones are refused, naming ``where``."""
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
    """``rows`` as one table of ``schema``; a value that does not fit names its job and column."""
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


def result_table(rows: Sequence[dict]) -> pa.Table:
    """Result rows (see :func:`orchestrator.storage.schema.result_row`) as one table of :data:`SCHEMA`;
    a status outside :data:`STATUSES` is refused (readers count on the closed set)."""
    normal = [
        _normalise(r, SCHEMA, ROW_DEFAULTS, f"result row {i} (job {r.get('job_id')!r})")
        for i, r in enumerate(rows)
    ]
    for r in normal:
        if r["status"] not in STATUSES:
            raise StoreError(
                f"result row for job {r['job_id']!r}: status {r['status']!r} is not one of {sorted(STATUSES)}"
            )
    return _table(normal, SCHEMA, "result rows")


def manifest_table(sweep: dict) -> pa.Table:
    """A sweep's planned jobs as one table of :data:`MANIFEST_SCHEMA` (see
    :meth:`orchestrator.storage.store.ResultStore.write_manifest` for the shape of ``sweep``)."""
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
    return _table(rows, MANIFEST_SCHEMA, f"manifest of sweep {scrub(name)!r}")


def analysis_schema(name: str) -> pa.Schema:
    """The schema of analysis table ``name``; an unknown name is refused with the known ones."""
    if name not in ANALYSIS_SCHEMAS:
        raise StoreError(f"unknown analysis table {name!r}; known: {', '.join(sorted(ANALYSIS_SCHEMAS))}")
    return ANALYSIS_SCHEMAS[name]


def analysis_table(name: str, rows: Sequence[dict]) -> pa.Table:
    """Rows of analysis ``name`` as one table of its schema."""
    schema = analysis_schema(name)
    normal = [_normalise(dict(r), schema, {}, f"{name} row {i}") for i, r in enumerate(rows)]
    return _table(normal, schema, f"{name} rows")
