"""Store schema version 2: ``program`` / ``description``, old (version 1) stores still read, the one
row constructor, and the versioned analysis tables behind the public store API."""

from __future__ import annotations

import inspect
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from store_rows import row

from orchestrator.analysis.predictive import read_predictive, rule_model, write_predictive
from orchestrator.storage.schema import SCHEMA, SCHEMA_V1, SCHEMA_VERSION, VERSION_KEY, result_row
from orchestrator.storage.store import ResultStore, StoreError

RULES = "next_value(X) :- true_value(X)."


def _v1_file(root: Path, rows: list[dict]) -> Path:
    """A results file exactly as orch wrote it before version 2 (one ``model`` column)."""
    full = []
    for r in rows:
        base = dict(row(r["job_id"]))
        base.pop("program"), base.pop("description")
        full.append({**base, "params": "{}", "extra": "{}", "schema_version": 1, "repeat": 0, **r})
    path = root / "results" / "part-20250101T000000000000Z-v1.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(full, schema=SCHEMA_V1), path)
    return path


def test_version_1_rows_are_mapped_to_program_or_description(tmp_path: Path) -> None:
    _v1_file(
        tmp_path,
        [
            {"job_id": "ilp", "learner": "ilasp", "model": RULES},
            {"job_id": "ilp-desc", "learner": "ilasp", "model": "no rule found within the budget"},
            {"job_id": "knn", "learner": "knn5", "model": "knn5 over 30 training backgrounds"},
            {"job_id": "knn-parses", "learner": "knn5", "model": "a."},  # knn never gives rules
            {"job_id": "foreign", "learner": "someone-elses", "model": RULES},
            {"job_id": "none", "learner": "ilasp", "model": None, "status": "error"},
        ],
    )
    store = ResultStore(tmp_path)
    store.write([row("new", program="", description="the empty program")])
    got = {r["job_id"]: (r["program"], r["description"]) for r in store.read().to_pylist()}
    assert got == {
        "ilp": (RULES, None),
        "ilp-desc": (None, "no rule found within the budget"),
        "knn": (None, "knn5 over 30 training backgrounds"),
        "knn-parses": (None, "a."),
        "foreign": (RULES, None),
        "none": (None, None),
        "new": ("", "the empty program"),  # new rows never guess: "" is the empty program
    }
    # filters and projections work across versions; the version column says what was written
    old = store.read(["job_id", "schema_version"], filter=pc.field("learner") == "ilasp").to_pylist()
    assert {(r["job_id"], r["schema_version"]) for r in old} == {("ilp", 1), ("ilp-desc", 1), ("none", 1)}
    assert store.job_status()["none"] == "error"


def test_compaction_migrates_version_1_files(tmp_path: Path) -> None:
    _v1_file(tmp_path, [{"job_id": "ilp", "learner": "ilasp", "model": RULES}])
    store = ResultStore(tmp_path)
    store.write([row("new")])
    before = store.read().sort_by("job_id")
    assert store.compact() == (2, 1)
    (merged,) = store.files()
    assert pq.read_schema(merged).metadata[VERSION_KEY] == str(SCHEMA_VERSION).encode()
    assert ResultStore(tmp_path).read().sort_by("job_id").equals(before)


def test_an_unknown_version_is_still_refused(tmp_path: Path) -> None:
    _v1_file(tmp_path, [{"job_id": "a", "learner": "ilasp", "model": RULES}])
    table = pq.read_table(next((tmp_path / "results").iterdir()))
    pq.write_table(
        table.replace_schema_metadata({VERSION_KEY: b"7"}), tmp_path / "results" / "part-x.parquet"
    )
    with pytest.raises(StoreError, match=r"part-x\.parquet.*version 7"):
        ResultStore(tmp_path).read()


def test_result_row_is_the_schema() -> None:
    """One constructor, exactly the stored columns (the store adds schema_version itself)."""
    params = list(inspect.signature(result_row).parameters)
    assert sorted(params) == sorted(n for n in SCHEMA.names if n != "schema_version")
    assert result_row("j", status="ok", program=None, description="d") == {
        "job_id": "j",
        "status": "ok",
        "description": "d",
    }
    with pytest.raises(TypeError):
        result_row("j", model="x")  # the version-1 column is gone
    with pytest.raises(ValueError, match="job 'j'.*'finished'"):
        result_row("j", status="finished")


def test_rule_model_reads_program_without_guessing() -> None:
    assert rule_model(None, "knn5") is None
    assert rule_model("", "ilasp").rules() == ""
    assert "next_value" in rule_model(RULES, "ilasp").rules()
    with pytest.raises(ValueError, match="stored program of ilasp"):
        rule_model("knn5 over 30 training backgrounds", "ilasp")


def _pp(learner: str, precision: float) -> dict:
    return {"sweep": "s", "dataset": "d", "game": "g", "learner": learner, "seed": 0, "repeat": 0,
            "applicability_precision": precision, "applicability_recall": 1.0, "effects_precision": 1.0,
            "effects_recall": 1.0, "actions": 3, "joint_actions": 2}  # fmt: skip


def test_predictive_rows_use_a_versioned_table_and_old_files_still_read(tmp_path: Path) -> None:
    store = ResultStore(tmp_path)
    legacy = tmp_path / "predictive" / "predictive-20250101T000000000000Z-old.parquet"
    legacy.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([_pp("ilasp", 0.5), _pp("aspal", 0.25)]), legacy)  # unversioned
    path = write_predictive(store, [_pp("ilasp", 0.75)])
    assert "/analyses/predictive/" in path
    assert pq.read_schema(path).metadata[VERSION_KEY] == b"1"
    got = {r["learner"]: r["applicability_precision"] for r in read_predictive(store)}
    assert got == {"ilasp": 0.75, "aspal": 0.25}  # the newest row per run wins
    with pytest.raises(StoreError, match="unknown column"):
        write_predictive(store, [{**_pp("x", 1.0), "surprise": 1}])
    with pytest.raises(StoreError, match="unknown analysis table 'nope'"):
        store.write_analysis("nope", [{}])
