"""Report tables from a hand-made store: pooling per task, strictness, incomplete tasks, formats."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orchestrator.analysis.report import STRICT_NOTE, render, report_tables
from orchestrator.cli.analysis import report_command
from orchestrator.cli.run import compact_command
from orchestrator.storage.store import ResultStore, StoreError


def result(learner, game, target, predicate, counts=None, status="ok", attempt=1, job_id=None, **kw) -> dict:
    tp, fp, tn, fn = counts if counts is not None else (None,) * 4
    return {
        "job_id": job_id or f"{learner}-{game}-{predicate}-{kw.get('repeat', 0)}-{kw.get('budget_s', 60.0)}",
        "sweep": kw.pop("sweep", "s1"),
        "learner": learner,
        "game": game,
        "target": target,
        "predicate": predicate,
        "status": status,
        "attempt": attempt,
        "seed": 0,
        "budget_s": 60.0,
        "test_tp": tp,
        "test_fp": fp,
        "test_tn": tn,
        "test_fn": fn,
        **kw,
    }


@pytest.fixture
def store(tmp_path: Path) -> ResultStore:
    s = ResultStore(tmp_path / "st")
    s.write(
        [
            # g1/next: two predicates. A solves both; B does not.
            result("A", "g1", "next", "next_a", (5, 0, 10, 0)),
            result("A", "g1", "next", "next_b", (3, 0, 7, 0)),
            result("B", "g1", "next", "next_a", (4, 2, 8, 1)),
            result("B", "g1", "next", "next_b", (3, 0, 7, 0)),
            # g1/goal: A timed out with a best model; B succeeded once, then its retry failed.
            result("A", "g1", "goal", "goal", (1, 0, 1, 1), status="timeout"),
            result("B", "g1", "goal", "goal", (1, 0, 1, 0), attempt=1),
        ]
    )
    s.write([result("B", "g1", "goal", "goal", status="error", attempt=2, error="Traceback: boom")])
    s.write(
        [
            # g2/legal: A never ran legal_y; B solves both (legal_x has no positives: p = 0).
            result("A", "g2", "legal", "legal_x", (2, 0, 2, 0)),
            result("B", "g2", "legal", "legal_x", (0, 0, 4, 0)),
            result("B", "g2", "legal", "legal_y", (2, 0, 2, 0)),
        ]
    )
    return s


B_NEXT = ((7 / 8) + (15 / 17)) / 2  # pooled over next_a and next_b, not the mean of the two


def by_key(rows: list[dict], *keys: str) -> dict:
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: r for r in rows}


def test_learner_table_pools_predicates_and_leaves_out_incomplete_tasks(store: ResultStore) -> None:
    tables = report_tables(store)
    learners = by_key(tables["learner"], "learner")
    a, b = learners["A"], learners["B"]
    assert (a["tasks"], a["incomplete"], a["perfect"]) == (2, 1, 1)
    assert a["balanced_accuracy"] == pytest.approx((1.0 + 0.75) / 2)
    assert a["perfect_share"] == pytest.approx(0.5)
    assert (b["tasks"], b["incomplete"], b["perfect"]) == (2, 1, 1)
    assert b["balanced_accuracy"] == pytest.approx((B_NEXT + 1.0) / 2)
    assert B_NEXT != pytest.approx(((0.8 + 0.8) / 2 + 1.0) / 2)  # the per-predicate mean differs
    reasons = by_key(tables["incomplete"], "learner", "reason")
    assert reasons == {
        ("A", "missing"): {"learner": "A", "reason": "missing", "tasks": 1},
        ("B", "error"): {"learner": "B", "reason": "error", "tasks": 1},
    }


def test_target_and_game_tables(store: ResultStore) -> None:
    tables = report_tables(store, by=("target", "game", "task"))
    assert set(tables) == {"target", "game", "task", "incomplete"}
    targets = by_key(tables["target"], "learner", "target")
    assert [(r["learner"], r["target"]) for r in tables["target"]] == [
        ("A", "goal"),
        ("A", "legal"),
        ("A", "next"),
        ("B", "goal"),
        ("B", "legal"),
        ("B", "next"),
    ]
    assert targets[("A", "goal")]["balanced_accuracy"] == pytest.approx(0.75)
    assert targets[("A", "legal")]["tasks"] == 0 and targets[("A", "legal")]["balanced_accuracy"] is None
    assert targets[("B", "goal")]["incomplete"] == 1
    games = by_key(tables["game"], "game", "learner")
    assert games[("g1", "B")]["balanced_accuracy"] == pytest.approx(B_NEXT)
    assert games[("g2", "B")]["perfect"] == 1
    tasks = by_key(tables["task"], "learner", "game", "target")
    assert len(tasks) == 6 and tasks[("A", "g1", "next")]["perfect"] == 1


def test_manifest_predicates_make_a_task_incomplete(store: ResultStore) -> None:
    store.write_manifest(
        {
            "sweep": "s1",
            "jobs": [
                {"job_id": "never-run", "game": "g1", "target": "next", "predicate": "next_c", "learner": "A"}
            ],
        }
    )
    learners = by_key(report_tables(store, sweep="s1")["learner"], "learner")
    # With a manifest, --sweep means "the planned jobs": only never-run is planned, so nothing is complete.
    assert learners == {}
    everything = by_key(report_tables(store)["learner"], "learner")
    assert everything["A"]["tasks"] == 1 and everything["A"]["incomplete"] == 2


def test_repeats_average_and_budgets_split_labels(tmp_path: Path) -> None:
    s = ResultStore(tmp_path)
    s.write(
        [
            result("C", "g3", "terminal", "terminal", (1, 0, 1, 0), repeat=0),
            result("C", "g3", "terminal", "terminal", (1, 1, 0, 0), repeat=1),
            result("D", "g3", "terminal", "terminal", (1, 0, 1, 0), budget_s=10.0),
            result("D", "g3", "terminal", "terminal", (0, 0, 1, 1), budget_s=60.0),
        ]
    )
    learners = by_key(report_tables(s)["learner"], "learner")
    assert learners["C"]["balanced_accuracy"] == pytest.approx((1.0 + 0.5) / 2)
    assert learners["C"]["perfect"] == 0.5 and learners["C"]["tasks"] == 1
    assert set(learners) == {"C", "D (10s)", "D (60s)"}
    assert learners["D (60s)"]["balanced_accuracy"] == pytest.approx(0.5)


def test_sweep_filter_without_manifest_uses_the_sweep_column(tmp_path: Path) -> None:
    s = ResultStore(tmp_path)
    s.write([result("A", "g", "next", "next_a", (1, 0, 1, 0), sweep="one")])
    s.write([result("B", "g", "next", "next_a", (1, 1, 0, 0), sweep="two")])
    assert [r["learner"] for r in report_tables(s, sweep="two")["learner"]] == ["B"]


def test_render_formats(store: ResultStore) -> None:
    tables = report_tables(store)
    text = render(tables, "table")
    assert "by learner:" in text and f"{100 * (B_NEXT + 1) / 2:.1f}%" in text and STRICT_NOTE in text
    md = render(tables, "md")
    assert "## by target" in md and "| learner | target | tasks |" in md
    data = json.loads(render(tables, "json"))
    assert data["learner"] == json.loads(json.dumps(tables["learner"])) and "Strict" in data["note"]
    sections = render(tables, "csv").split("# ")[1:]
    parsed = {s.split("\n", 1)[0]: list(csv.DictReader(io.StringIO(s.split("\n", 1)[1]))) for s in sections}
    assert set(parsed) == {"learner", "target", "game", "incomplete", "like_for_like"}
    assert float(parsed["learner"][0]["balanced_accuracy"]) == pytest.approx(0.875)
    with pytest.raises(StoreError, match="unknown format"):
        render(tables, "xml")
    with pytest.raises(StoreError, match="unknown table"):
        report_tables(store, by=("learners",))


def test_empty_store_renders(tmp_path: Path) -> None:
    assert "no results in the store" in render(report_tables(ResultStore(tmp_path)), "table")


def test_cli_commands(store: ResultStore, tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("report")(report_command)
    store_app = typer.Typer()
    store_app.command("compact")(compact_command)
    app.add_typer(store_app, name="store")
    runner = CliRunner()
    out = runner.invoke(app, ["report", "--store", store.root, "--format", "md", "--by", "learner"])
    # B's g1/goal retry ended in an error: reported, and exit 1 (README "Exit codes"), last line says which
    assert out.exit_code == 1, out.output
    assert out.output.strip().splitlines()[-1].startswith("failed: 1 job(s) read ended 1 error (B)")
    assert "| A | 2 | 1 | 87.5% | 1/2 (50.0%) |" in out.output
    out = runner.invoke(app, ["store", "compact", "--store", store.root])
    assert out.exit_code == 0 and "3 result file(s) -> 1" in out.output
    out = runner.invoke(app, ["report", "--store", store.root, "--format", "md", "--by", "learner"])
    assert "| A | 2 | 1 | 87.5% | 1/2 (50.0%) |" in out.output
    bad = tmp_path / "bad"
    (bad / "results").mkdir(parents=True)
    (bad / "results" / "part-x.parquet").write_text("nope")
    out = runner.invoke(app, ["report", "--store", str(bad)])
    assert out.exit_code == 2 and "part-x.parquet" in out.output


def test_rows_on_other_data_are_not_mixed_the_newest_data_is_read(tmp_path: Path) -> None:
    """After a data fix the store holds a task on two datasets: the report reads the newest (it is
    readable, issue 28), says which sweeps it read, and never pools the two."""
    import datetime as dt

    from orchestrator.analysis.current import Currency

    s = ResultStore(tmp_path)
    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    s.write(
        [
            result("E", "g4", "goal", "goal", (1, 0, 1, 0), dataset_fingerprint="old", job_id="e-old",
                   sweep="before-fix", finished=t0),
            result("E", "g4", "goal", "goal", (0, 1, 0, 1), dataset_fingerprint="new", job_id="e-new",
                   sweep="after-fix", finished=t0 + dt.timedelta(minutes=5)),
        ]
    )  # fmt: skip
    currency = Currency()
    tables = report_tables(s, currency=currency)
    row = by_key(tables["learner"], "learner")["E"]
    assert (row["tasks"], row["balanced_accuracy"], tables["incomplete"]) == (1, 0.0, [])  # the new counts
    assert currency.sweeps_read == {"after-fix": 1} and currency.superseded_sweeps == {"before-fix": 1}
    assert "after-fix" in currency.line() and "orch gc" in currency.line()
    # one sweep that holds both datasets is still not pooled: incomplete, with the reason
    s.write([result("F", "g5", "goal", p, (1, 0, 1, 0), dataset_fingerprint=fp, job_id=f"f-{fp}",
                    sweep="both") for fp, p in (("a", "goal"), ("b", "goal_b"))])  # fmt: skip
    both = report_tables(s, sweep="both")
    assert both["incomplete"] == [{"learner": "F", "reason": "mixed datasets (use --sweep)", "tasks": 1}]


def test_a_failed_job_with_stored_all_false_counts_scores_as_predicting_false(tmp_path: Path) -> None:
    s = ResultStore(tmp_path / "st")
    nothing = {"all_false": {"test_tp": 0, "test_fp": 0, "test_tn": 6, "test_fn": 2}}
    s.write(
        [
            result("C", "g", "next", "next_a", (2, 0, 4, 0)),
            result("C", "g", "next", "next_b", status="error", error="boom", extra=nothing),
        ]
    )
    (row,) = report_tables(s, by=("learner",))["learner"]
    # pooled (2, 0, 10, 2): recall 2/4, specificity 1 -> 0.75; the task is scored, not left out
    assert (row["tasks"], row["incomplete"], row["errored"], row["perfect"]) == (1, 0, 1, 0)
    assert row["balanced_accuracy"] == pytest.approx(0.75)
