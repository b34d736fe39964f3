"""The Parquet results store: round trips, atomicity, compaction, schema checks, credentials."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from store_rows import T0, raw_row, row

from orchestrator.storage.schema import VERSION_KEY
from orchestrator.storage.store import SCHEMA, SCHEMA_VERSION, ResultStore, StoreError, scrub


def test_round_trip_keeps_every_column_and_type(tmp_path: Path) -> None:
    store = ResultStore(tmp_path / "st")
    store.write([row("a"), row("b", status="timeout", test_tp=None, error="budget")])
    table = store.read()
    assert table.schema.equals(SCHEMA, check_metadata=False)
    got = {r["job_id"]: r for r in table.to_pylist()}
    assert set(got) == {"a", "b"}
    a = got["a"]
    assert a["schema_version"] == SCHEMA_VERSION and a["orch_version"]
    assert json.loads(a["params"]) == {"k": 5} and json.loads(a["extra"]) == {"curve": [0.5, 0.75]}
    assert a["finished"] == T0 + dt.timedelta(seconds=1) and a["peak_rss"] == 123456789
    assert a["repeat"] == 0 and a["test_fn"] == 3 and a["validate_fn"] == 7
    assert got["b"]["test_tp"] is None and got["b"]["status"] == "timeout"


def test_naive_datetimes_are_utc_and_columns_and_filters_apply(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write([row("a", finished=dt.datetime(2026, 1, 2, 3, 4, 5)), row("b", game="other")])
    only = store.read(columns=["job_id", "finished"], filter=pc.field("game") == "minimal_decay")
    assert only.column_names == ["job_id", "finished"]
    assert only.to_pylist() == [{"job_id": "a", "finished": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)}]


def test_one_file_per_write_and_readers_ignore_temporaries(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write([row("a")])
    store.write([row("b"), row("c")])
    assert len(store.files()) == 2
    # A half-written file (as a crashed writer leaves it) and a foreign dot-file stay invisible.
    (tmp_path / "_tmp").mkdir(exist_ok=True)
    (tmp_path / "_tmp" / "part-x.parquet.tmp").write_bytes(b"PAR1 half written")
    (tmp_path / "results" / ".part-y.parquet").write_bytes(b"garbage")
    assert sorted(store.read(["job_id"])["job_id"].to_pylist()) == ["a", "b", "c"]
    assert list((tmp_path / "_tmp").iterdir()) == [tmp_path / "_tmp" / "part-x.parquet.tmp"]


def test_readable_by_pyarrow_dataset_duckdb_and_polars(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    import pyarrow.dataset as ds

    store = ResultStore(tmp_path)
    store.write([row("a"), row("b", attempt=2)])
    store.write([row("c", status="error", error="boom", test_tp=None)])
    glob = str(tmp_path / "results" / "*.parquet")

    by_pyarrow = ds.dataset(str(tmp_path / "results"), format="parquet").to_table()
    by_duckdb = duckdb.sql(
        f"select job_id, attempt, status, test_tp from read_parquet('{glob}') order by job_id"
    )
    by_polars = pl.read_parquet(glob).sort("job_id")

    assert sorted(by_pyarrow["job_id"].to_pylist()) == ["a", "b", "c"]
    assert by_duckdb.fetchall() == [("a", 1, "ok", 0), ("b", 2, "ok", 0), ("c", 1, "error", None)]
    assert by_polars["job_id"].to_list() == ["a", "b", "c"]
    assert by_polars.schema["finished"] == pl.Datetime("us", "UTC")


def test_latest_takes_highest_attempt_and_job_status(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write([row("a", 1, "error", error="x")])
    store.write([row("a", 2, "oom"), row("b", 1, "ok")])
    store.write([row("a", 3, "ok")])
    latest = {r["job_id"]: (r["attempt"], r["status"]) for r in store.latest().to_pylist()}
    assert latest == {"a": (3, "ok"), "b": (1, "ok")}
    assert store.job_status() == {"a": "ok", "b": "ok"}
    assert store.read().num_rows == 4


def test_compact_keeps_every_row_once(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    for i in range(5):
        store.write([row(f"j{i}"), row(f"j{i}", attempt=2, status="timeout")])
    before = store.read().sort_by([("job_id", "ascending"), ("attempt", "ascending")])
    assert store.compact() == (5, 1)
    after = store.read().sort_by([("job_id", "ascending"), ("attempt", "ascending")])
    assert after.equals(before)
    assert store.compact() == (1, 1)


def test_a_crash_between_merge_and_delete_leaves_readable_duplicates(tmp_path: Path) -> None:
    """Compaction writes the merged file before deleting inputs; a crash leaves both states on disk."""
    store = ResultStore(tmp_path)
    store.write([row("a")])
    store.write([row("b")])
    (tmp_path / "keep").mkdir()
    copies = [shutil.copy(p, tmp_path / "keep") for p in store.files()]
    store.compact()
    for c in copies:  # the inputs "survive" the crash next to the merged file
        shutil.copy(c, tmp_path / "results")
    assert len(store.files()) == 3
    assert sorted(store.read()["job_id"].to_pylist()) == ["a", "b"]
    assert store.compact() == (3, 1)
    assert sorted(store.read()["job_id"].to_pylist()) == ["a", "b"]


def test_wrong_schema_version_names_the_file(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write([row("a")])
    table = store.read().replace_schema_metadata({VERSION_KEY: b"99"})
    bad = tmp_path / "results" / "part-future.parquet"
    pq.write_table(table, bad)
    with pytest.raises(StoreError, match=r"part-future\.parquet.*version 99"):
        store.read()
    with pytest.raises(StoreError, match=r"part-future\.parquet"):
        store.compact()
    assert len(store.files()) == 2  # a failed compaction deleted nothing


def test_missing_columns_and_foreign_files_are_refused(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write([row("a")])
    pq.write_table(store.read().drop_columns(["status"]), tmp_path / "results" / "part-short.parquet")
    with pytest.raises(StoreError, match=r"part-short\.parquet.*missing column.*status"):
        store.job_status()
    (tmp_path / "results" / "part-short.parquet").unlink()
    pq.write_table(pa.table({"x": [1]}), tmp_path / "results" / "part-foreign.parquet")
    with pytest.raises(StoreError, match=r"part-foreign\.parquet.*not an orch store file"):
        store.read()
    (tmp_path / "results" / "part-foreign.parquet").write_text("not parquet at all")
    with pytest.raises(StoreError, match=r"part-foreign\.parquet.*not a readable Parquet file"):
        store.read()


def test_bad_rows_are_rejected_naming_the_job(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    with pytest.raises(StoreError, match=r"job 'a'.*unknown column.*'scroe'"):
        store.write([raw_row("a", scroe=1.0)])
    with pytest.raises(StoreError, match=r"job 'a'.*status 'done'"):
        store.write([raw_row("a", status="done")])
    with pytest.raises(StoreError, match=r"job_id"):
        store.write([row(None)])
    with pytest.raises(StoreError, match=r"job 'b': seed='zero' is not int64"):
        store.write([row("a"), row("b", seed="zero")])
    assert store.files() == []


@pytest.mark.parametrize(
    "secret, leaked",
    [
        ("s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI@bucket/iggp", "wJalrXUtnFEMI"),
        ("https://user:hunter2@example.org/data", "hunter2"),
        ("s3://bucket/p?access_key=AK123&secret_key=SK456&region=eu", "SK456"),
        ("failed with aws_secret_access_key = 'abc/def+ghi' set", "abc/def+ghi"),
        ("env AWS_SESSION_TOKEN=FQoGZXIvYXdzE", "FQoGZXIvYXdzE"),
        ("key id AKIAIOSFODNN7EXAMPLE in the log", "AKIAIOSFODNN7EXAMPLE"),
    ],
)
def test_scrub_removes_credentials(secret: str, leaked: str) -> None:
    assert leaked not in scrub(secret)
    assert "***" in scrub(secret)


def test_scrub_keeps_ordinary_text() -> None:
    text = "s3://bucket/prefix and next_cell(X, Y, b) :- true_cell(X, Y, b), not does(P, mark(X, Y))."
    assert scrub(text) == text
    rule = "token :- true_control(P), not password(P).\nlegal(P, take(token)) :- token."
    assert scrub(rule) == rule


def test_models_are_stored_verbatim(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    model = "password(X) :- true_cell(X).\ntoken : - b."
    store.write([row("a", program=model, description=model)])
    got = store.read(["program", "description"]).to_pylist()[0]
    assert got == {"program": model, "description": model}


def test_credentials_are_never_stored(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    store.write(
        [
            row(
                "a",
                status="error",
                dataset="s3://AKIAIOSFODNN7EXAMPLE:topsecretvalue@bucket/iggp",
                error="Traceback ...\nOSError: s3://bucket?secret_key=topsecretvalue denied",
            )
        ]
    )
    stored = store.read().to_pylist()[0]
    assert stored["dataset"] == "s3://***@bucket/iggp"
    assert "topsecretvalue" not in stored["error"] and "OSError" in stored["error"]
    for path in store.files():  # not in the file at all, not even uncompressed metadata
        assert b"topsecretvalue" not in Path(path).read_bytes()


def test_unwritable_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError, match=r"cannot write to the store at .*a-file/st/results/part-"):
        ResultStore(blocker / "st").write([row("a")])


def test_a_full_disk_loses_nothing_stored_before(tmp_path: Path) -> None:
    """A write that runs out of space (RLIMIT_FSIZE, a real kernel limit) fails cleanly."""
    store = ResultStore(tmp_path / "st")
    store.write([row("kept")])
    script = textwrap.dedent(
        f"""
        import os, resource, signal, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[3])!r})
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        from orchestrator.storage.store import ResultStore, StoreError
        big = os.urandom(200_000).hex()
        try:
            ResultStore({str(tmp_path / "st")!r}).write([{{"job_id": "big", "status": "ok", "program": big}}])
        except StoreError as e:
            print("STOREERROR", e)
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "STOREERROR cannot write to the store at" in out.stdout, out.stderr
    assert str(tmp_path / "st" / "results") in out.stdout
    assert store.read(["job_id"])["job_id"].to_pylist() == ["kept"]
    assert list((tmp_path / "st" / "_tmp").iterdir()) == []


def test_manifests_round_trip(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    jobs = [
        {"job_id": f"j{i}", "game": "g", "target": "next", "predicate": "next_x", "learner": "knn5"}
        for i in range(3)
    ]
    store.write_manifest({"sweep": "nightly/1", "jobs": jobs, "learners": ["knn5"], "budget_s": 60})
    store.write_manifest({"sweep": "other", "jobs": jobs[:1]})
    m = store.manifests()
    assert m.num_rows == 4
    nightly = m.filter(pc.field("sweep") == "nightly/1")
    assert nightly["job_id"].to_pylist() == ["j0", "j1", "j2"]
    assert json.loads(nightly["spec"][0].as_py()) == {"learners": ["knn5"], "budget_s": 60}
    assert all("/" not in Path(p).name for p in store.files("manifests"))
    with pytest.raises(StoreError, match="needs a name"):
        store.write_manifest({"jobs": jobs})
    with pytest.raises(StoreError, match=r"sweep 'x', job 0.*unknown column"):
        store.write_manifest({"sweep": "x", "jobs": [{"job_id": "a", "colour": "red"}]})


def test_file_uri_and_empty_store(tmp_path: Path) -> None:
    store = ResultStore(f"file://{tmp_path}/st")
    assert store.read().num_rows == 0 and store.job_status() == {} and store.compact() == (0, 0)
    assert store.manifests().num_rows == 0
    store.write([row("a")])
    assert ResultStore(tmp_path / "st").job_status() == {"a": "ok"}


def test_object_store_path_writes_final_keys_directly(tmp_path: Path) -> None:
    """A filesystem without atomic rename (here fsspec's in-memory one, like S3) gets one PUT per file."""
    fsspec = pytest.importorskip("fsspec")
    import pyarrow.fs as pafs

    memory = fsspec.filesystem("memory")
    fs = pafs.PyFileSystem(pafs.FSSpecHandler(memory))
    store = ResultStore(f"orch-test-{tmp_path.name}/st", filesystem=fs)
    assert not store.local
    store.write([row("a")])
    store.write([row("b"), row("a", attempt=2, status="timeout")])
    store.write_manifest({"sweep": "s", "jobs": [{"job_id": "a"}, {"job_id": "b"}]})
    assert store.job_status() == {"a": "timeout", "b": "ok"}
    assert not memory.exists(f"/orch-test-{tmp_path.name}/st/_tmp")
    assert store.compact() == (2, 1)
    assert sorted(store.read(["job_id"])["job_id"].to_pylist()) == ["a", "a", "b"]
    assert store.manifests().num_rows == 2
    memory.rm(f"/orch-test-{tmp_path.name}", recursive=True)


def test_store_pickles_for_ray_workers(tmp_path: Path) -> None:
    import pickle

    store = ResultStore(tmp_path)
    pickle.loads(pickle.dumps(store)).write([row("a")])
    assert store.job_status() == {"a": "ok"}


def test_compaction_while_others_write_read_and_compact_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    import threading

    n_writers, per_writer = 3, 20
    expected = sorted(f"w{w}-{i}" for w in range(n_writers) for i in range(per_writer))
    errors: list[BaseException] = []
    seen_by_reader: list[int] = []

    def writer(w: int) -> None:
        mine = ResultStore(tmp_path)  # as another process would
        for i in range(per_writer):
            mine.write([row(f"w{w}-{i}")])

    def guarded(fn, *args) -> None:
        try:
            fn(*args)
        except BaseException as e:  # surfaced by the assertion below
            errors.append(e)

    writers = [threading.Thread(target=guarded, args=(writer, w)) for w in range(n_writers)]

    def while_writing(action) -> None:
        store = ResultStore(tmp_path)
        while any(t.is_alive() for t in writers):
            action(store)

    def read(store: ResultStore) -> None:
        ids = store.read(["job_id"])["job_id"].to_pylist()
        assert len(ids) == len(set(ids)), "a read saw a row twice"
        assert not seen_by_reader or len(ids) >= seen_by_reader[-1], "a read lost rows"
        seen_by_reader.append(len(ids))

    others = [threading.Thread(target=guarded, args=(while_writing, a)) for a in (read, ResultStore.compact)]
    for t in writers + others:
        t.start()
    compactions = 0
    while any(t.is_alive() for t in writers):
        ResultStore(tmp_path).compact()
        compactions += 1
    for t in writers + others:
        t.join()
    assert not errors, errors
    store = ResultStore(tmp_path)
    assert sorted(store.read(["job_id"])["job_id"].to_pylist()) == expected
    assert compactions > 0 and len(seen_by_reader) > 0
    assert store.compact()[1] == 1 and store.read().num_rows == len(expected)
