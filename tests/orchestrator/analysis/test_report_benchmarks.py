"""One report group per benchmark: an IGGP ``tictactoe`` and a GGP corpus's ``tictactoe`` in one
store are two groups with their own means, and the newer GGP rows never supersede the IGGP ones."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from orchestrator.analysis.benchmarks import GGP, GRAPHLOG, IGGP, benchmark_of
from orchestrator.analysis.current import Currency, newest_per_task
from orchestrator.analysis.htmlreport import write_html
from orchestrator.analysis.report import benchmark_tables, render, render_benchmarks, report_tables
from orchestrator.cli.analysis import report_command
from orchestrator.storage.store import ResultStore
from tasks.corpus import MANIFEST

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def row(dataset: Path, predicate: str, counts: tuple[int, int, int, int], minutes: int) -> dict:
    """A job of learner K on tictactoe/next of ``dataset`` (its own fingerprint), finished at T0 + minutes."""
    tp, fp, tn, fn = counts
    return {
        "job_id": f"{dataset.name}-{predicate}",
        "sweep": dataset.name,
        "dataset": str(dataset),
        "dataset_fingerprint": f"fp-{dataset.name}",
        "learner": "K",
        "game": "tictactoe",
        "target": "next",
        "predicate": predicate,
        "status": "ok",
        "attempt": 1,
        "seed": 0,
        "repeat": 0,
        "budget_s": 60.0,
        "finished": T0 + dt.timedelta(minutes=minutes),
        **{"test_tp": tp, "test_fp": fp, "test_tn": tn, "test_fn": fn},
    }


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """An IGGP dataset folder and a generated corpus folder (recognised by its manifest)."""
    iggp, corpus = tmp_path / "iggp", tmp_path / "corpus"
    iggp.mkdir()
    corpus.mkdir()
    (corpus / MANIFEST).write_text(json.dumps({"games": [{"game": "tictactoe", "status": "ok"}]}))
    return iggp, corpus


@pytest.fixture
def store(tmp_path: Path, folders: tuple[Path, Path]) -> ResultStore:
    iggp, corpus = folders
    s = ResultStore(tmp_path / "st")
    # IGGP: solved perfectly (BA 1.0); the GGP corpus, run later: half right (BA 0.5).
    s.write([row(iggp, "next_cell", (2, 0, 2, 0), 0)])
    s.write([row(corpus, "next_cell", (1, 1, 1, 1), 5), row(corpus, "next_control", (1, 1, 1, 1), 5)])
    # the corpus's sweep plans one more predicate of its tictactoe: it must not touch the IGGP task
    jobs = [
        {k: r[k] for k in ("job_id", "game", "target", "predicate", "learner", "seed", "repeat", "budget_s",
                           "dataset", "dataset_fingerprint")}
        for r in (row(corpus, "next_cell", (0,) * 4, 5), row(corpus, "next_control", (0,) * 4, 5))
    ]  # fmt: skip
    s.write_manifest({"sweep": corpus.name, "jobs": [{**j, "params": "{}"} for j in jobs]})
    return s


def test_the_benchmark_comes_from_the_stored_dataset(folders: tuple[Path, Path]) -> None:
    iggp, corpus = folders
    assert [benchmark_of(d) for d in (str(iggp), str(corpus), "graphlog:/x", "bundled", None)] == [
        IGGP, GGP, GRAPHLOG, IGGP, IGGP,
    ]  # fmt: skip


def test_a_corpus_never_supersedes_the_iggp_task_of_the_same_name(store: ResultStore) -> None:
    rows = store.latest(["learner", "params", "budget_s", "game", "target", "dataset", "dataset_fingerprint",
                         "sweep", "finished"])  # fmt: skip
    kept, currency = newest_per_task(rows)
    assert kept.num_rows == 3 and currency.superseded_rows == 0
    assert currency.sweeps_read == {"iggp": 1, "corpus": 2}


def test_two_benchmarks_are_two_groups_with_their_own_means(store: ResultStore) -> None:
    currency = Currency()
    groups = benchmark_tables(store, by=("learner", "game"), currency=currency)
    assert list(groups) == [IGGP, GGP]
    learner = {name: tables["learner"] for name, tables in groups.items()}
    assert [(r["learner"], r["tasks"], r["balanced_accuracy"]) for r in learner[IGGP]] == [("K", 1, 1.0)]
    assert [(r["learner"], r["tasks"], r["balanced_accuracy"]) for r in learner[GGP]] == [("K", 1, 0.5)]
    assert all(tables["incomplete"] == [] for tables in groups.values())  # no "mixed datasets"
    assert [r["tasks"] for r in groups[IGGP]["like_for_like"]] == [1]
    assert currency.superseded_rows == 0 and currency.sweeps_read == {"iggp": 1, "corpus": 2}

    text = render_benchmarks(groups, "table")
    assert text.index("Benchmark: IGGP\n====") < text.index("Benchmark: GGP benchmark (generated corpus)\n")
    assert "100.0%" in text and "50.0%" in text and "75.0%" not in text  # never one mean over both
    md = render_benchmarks(groups, "md")
    assert "# Benchmark: IGGP" in md and "# Benchmark: GGP benchmark (generated corpus)" in md
    data = json.loads(render_benchmarks(groups, "json"))
    assert set(data["benchmarks"]) == {IGGP, GGP} and "Strict" in data["note"]
    assert data["benchmarks"][GGP]["learner"][0]["balanced_accuracy"] == 0.5
    assert "# ggp/learner" in render_benchmarks(groups, "csv")


def test_the_cli_and_the_page_show_one_part_per_benchmark(store: ResultStore, tmp_path: Path) -> None:
    app = typer.Typer()
    app.command("report")(report_command)
    app.command("other")(lambda: None)  # two commands, so that "report" is a subcommand
    out = CliRunner().invoke(app, ["report", "--store", store.root, "--format", "json", "--by", "learner"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert {b: t["learner"][0]["balanced_accuracy"] for b, t in data["benchmarks"].items()} == {
        IGGP: 1.0,
        GGP: 0.5,
    }
    page = write_html(store, tmp_path / "r.html", k=3).read_text()
    assert page.index("Benchmark: IGGP") < page.index("Benchmark: GGP benchmark (generated corpus)")
    assert (
        "<h3>Learners (IGGP Table 3)</h3>" in page
        and "<h3>Learners (GGP benchmark: generated corpus)</h3>" in page
    )
    assert (tmp_path / "r_figures" / GGP / "heatmap_ba.png").is_file()


def test_one_benchmark_reports_as_before(
    store: ResultStore, tmp_path: Path, folders: tuple[Path, Path]
) -> None:
    iggp, _ = folders
    alone = ResultStore(tmp_path / "alone")
    alone.write([row(iggp, "next_cell", (2, 0, 2, 0), 0)])
    groups = benchmark_tables(alone)
    assert list(groups) == [IGGP]
    for fmt in ("table", "md", "json", "csv"):
        assert render_benchmarks(groups, fmt) == render(report_tables(alone), fmt)
