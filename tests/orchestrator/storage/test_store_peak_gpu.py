"""Store schema version 3 adds ``peak_gpu``: stores written before it (version 2 files, no such
column) still read, with ``peak_gpu`` null, through projections, filters and compaction."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from store_rows import row

from orchestrator.storage.schema import SCHEMA, SCHEMA_V2, SCHEMA_VERSION, VERSION_KEY
from orchestrator.storage.store import ResultStore


def _v2_file(root: Path, job_ids: list[str]) -> Path:
    """A results file exactly as orch wrote it before version 3 (no ``peak_gpu`` column)."""
    rows = [{**row(j), "params": "{}", "extra": "{}", "schema_version": 2, "repeat": 0} for j in job_ids]
    path = root / "results" / "part-20260101T000000000000Z-v2.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA_V2), path)
    return path


def test_version_2_files_read_with_null_peak_gpu(tmp_path: Path) -> None:
    assert "peak_gpu" not in SCHEMA_V2.names and SCHEMA_VERSION == 3
    _v2_file(tmp_path, ["old-a", "old-b"])
    store = ResultStore(tmp_path)
    store.write([row("new", peak_gpu=3 << 30)])
    table = store.read()
    assert table.schema.names == SCHEMA.names
    got = {r["job_id"]: (r["peak_gpu"], r["schema_version"], r["peak_rss"]) for r in table.to_pylist()}
    assert got == {
        "old-a": (None, 2, 123456789),
        "old-b": (None, 2, 123456789),
        "new": (3 << 30, 3, 123456789),
    }
    # projections with and without the new column, and filters on either kind of column
    assert store.read(["job_id", "peak_gpu"], filter=pc.field("peak_gpu") > 0)["job_id"].to_pylist() == [
        "new"
    ]
    old = store.read(["job_id"], filter=pc.field("peak_gpu").is_null())["job_id"].to_pylist()
    assert sorted(old) == ["old-a", "old-b"]
    assert sorted(store.read(["job_id"], filter=pc.field("job_id") == "old-a")["job_id"].to_pylist()) == [
        "old-a"
    ]
    assert store.job_status() == {"old-a": "ok", "old-b": "ok", "new": "ok"}


def test_compaction_migrates_version_2_files(tmp_path: Path) -> None:
    _v2_file(tmp_path, ["old"])
    store = ResultStore(tmp_path)
    store.write([row("new", peak_gpu=1 << 20)])
    before = store.read().sort_by("job_id")
    assert store.compact() == (2, 1)
    (merged,) = store.files()
    assert pq.read_schema(merged).metadata[VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert ResultStore(tmp_path).read().sort_by("job_id").equals(before)
