"""Results files: committed figures match the learners' sources (or say they are stale), the docs
tables match the files, and the like-for-like scoring (errors as false, fallback twice, trivial
tasks, noise) is computed right on hand-made stores."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from store_rows import row

from orchestrator.analysis.anchor import GraphLogAnchor, compare_to_anchor, read_anchor, read_iggp_anchor
from orchestrator.analysis.locations import GGP_RESULTS_DIR
from orchestrator.analysis.results import (
    COLUMNS,
    RESULTS_DIR,
    ba_of,
    collect,
    export,
    git_commit,
    mark_stale,
    perfect_count_ci,
    read_rows,
    source_files,
    source_hash,
    stale_rows,
    summarise,
    task_row,
    write_rows,
)
from orchestrator.analysis.results_docs import DEFAULT_ANCHOR, DOC, current_section, render, section_for
from orchestrator.storage.store import ResultStore

COMMITTED = sorted(RESULTS_DIR.glob("*.csv")) + sorted(GGP_RESULTS_DIR.glob("*.csv"))


def test_results_files_are_committed():
    assert list(RESULTS_DIR.glob("*.csv")), f"no results files under {RESULTS_DIR}"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_figures_come_from_the_learners_current_sources(path: Path):
    """Whoever changes a learner regenerates its results file, or marks it stale (orch bench stale)."""
    stale = stale_rows(path)
    assert not stale, (
        f"{path.name}: {len(stale)} row(s) were measured with other sources of {stale[0][1]} "
        f"(recorded {stale[0][2]}, now {stale[0][3]}; files {source_files(stale[0][1])}). Regenerate with "
        f"`orch bench iggp` (`orch bench ggp`) or mark them: `orch bench stale {path.relative_to(RESULTS_DIR.parents[2])}`"
    )


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_committed_rows_are_self_consistent(path: Path):
    for r in read_rows(path):
        where = f"{path.name} {r['game']}/{r['target']}"
        assert math.isclose(ba_of(r), float(r["balanced_accuracy"]), abs_tol=1e-6), where
        assert r["perfect"] == str(int(r["fp"] == "0" and r["fn"] == "0")), where
        assert r["trivial"] == str(int(int(r["tp"]) + int(r["fn"]) == 0 or int(r["tn"]) + int(r["fp"]) == 0))
        assert (
            float(r["ba_fallback_failed"]) <= float(r["balanced_accuracy"]) + 1e-9
            or r["fallback_predicates"] != "0"
        )


def test_docs_tables_match_the_results_files():
    if not DEFAULT_ANCHOR.exists():
        pytest.skip("../shared/iggp is not beside the project (the docs compare with its ILASP* file)")
    assert current_section(DOC.read_text()) == section_for(), (
        "docs/benchmarks.md is stale: run `orch bench docs`"
    )


# --- hand-made stores -------------------------------------------------------------------------------


def _row(
    job: str,
    pred: str,
    status: str = "ok",
    counts=(1, 0, 3, 0),
    fallback=None,
    learner="ilasp",
    game="g",
    **kw,
):
    extra = {"all_false": {"test_tp": 0, "test_fp": 0, "test_tn": 4, "test_fn": 2}}
    if fallback is not None:
        extra["fallback"] = fallback
    values = dict(zip(("test_tp", "test_fp", "test_tn", "test_fn"), counts or (None,) * 4, strict=True))
    return row(job, status=status, game=game, target="next", predicate=pred, learner=learner, extra=extra,
               learn_s=2.0, **values, **kw)  # fmt: skip


def test_errors_score_as_false_and_fallback_is_counted_both_ways(tmp_path):
    store = ResultStore(tmp_path / "s")
    store.write(
        [
            _row("a", "next_a", counts=(1, 0, 3, 0), fallback=False),
            _row("b", "next_b", counts=(2, 1, 3, 0), fallback=True),
            _row("c", "next_c", status="error", counts=None),
        ]
    )
    (task,) = collect(store)
    r = task_row(task, "abc", "h")
    # as scored: a + b + all-false for c = (1+2+0, 0+1+0, 3+3+4, 0+0+2)
    assert (r["tp"], r["fp"], r["tn"], r["fn"]) == (3, 1, 10, 2)
    assert float(r["balanced_accuracy"]) == pytest.approx((3 / 5 + 10 / 11) / 2, abs=1e-6)
    # fallback = failure: b scored as all-false too: (1, 0, 3+4+4, 0+2+2)
    assert float(r["ba_fallback_failed"]) == pytest.approx((1 / 5 + 11 / 11) / 2, abs=1e-6)
    assert (r["errored_predicates"], r["fallback_predicates"], r["perfect"]) == (1, 1, 0)
    assert r["statuses"] == "error=1;ok=2" and r["trivial"] == 0 and r["learn_s"] == "6.0"


def test_statuses_tell_a_work_bound_cut_from_the_clock_s(tmp_path):
    """A timeout the work bound made (``extra.cut_by``) is counted apart: any machine reproduces it."""
    store = ResultStore(tmp_path / "s")
    rows = [_row(j, f"next_{j}", status="timeout", counts=(1, 0, 3, 0), fallback=False) for j in "abc"]
    rows[0]["extra"]["cut_by"] = "work"
    rows[1]["extra"]["cut_by"] = "clock"  # and c was stored before the cause was recorded
    store.write(rows)
    (task,) = collect(store)
    assert task_row(task)["statuses"] == "timeout=2;timeout-work=1"


def test_a_timeout_of_a_learner_with_fallbacks_counts_as_one(tmp_path):
    store = ResultStore(tmp_path / "s")
    store.write(
        [
            _row("a", "next_a", status="timeout", fallback=False),
            _row("b", "next_a", learner="knn5", status="timeout"),
        ]
    )
    rows = {t.learner: task_row(t) for t in collect(store)}
    assert rows["ilasp"]["fallback_predicates"] == 1 and rows["ilasp"]["perfect_fallback_failed"] == 0
    assert rows["knn5"]["fallback_predicates"] == 0 and rows["knn5"]["perfect_fallback_failed"] == 1


def test_a_task_with_a_predicate_not_yet_run_is_left_out(tmp_path):
    store = ResultStore(tmp_path / "s")
    store.write([_row("a", "next_a"), _row("b", "next_b")])  # ilasp: next_c is still to run
    store.write([_row(f"k{p}", f"next_{p}", learner="knn5") for p in "abc"])
    rows = {t.learner: task_row(t) for t in collect(store)}
    assert rows["ilasp"] is None and rows["knn5"] is not None


def test_the_datasets_predicates_fix_what_a_task_is_made_of(tmp_path):
    """A row of a predicate the dataset does not have (a job planned under another spelling, e.g.
    `next_prev-goal` for `next_k0xprev02dgoal`) is not part of the task's figures."""
    store = ResultStore(tmp_path / "s")
    store.write(
        [_row("a", "next_a"), _row("b", "next_k0xb02dc"), _row("x", "next_b-c", status="error", counts=None)]
    )
    (loose,) = export(store, tmp_path / "loose", commit="abc").items()
    assert loose[1] == (1, 0) and read_rows(loose[0])[0]["errored_predicates"] == "1"
    (fixed,) = export(
        store, tmp_path / "fixed", commit="abc", predicates={("g", "next"): ["next_a", "next_k0xb02dc"]}
    ).items()
    (row_,) = read_rows(fixed[0])
    assert (row_["predicates"], row_["errored_predicates"], row_["statuses"]) == ("2", "0", "ok=2")


def _three_runs(tmp_path: Path) -> ResultStore:
    """One task, three runs: perfect, not perfect (BA 0.75), perfect."""
    store = ResultStore(tmp_path / "s")
    store.write(
        [
            _row("r0", "next_a", counts=(2, 0, 4, 0), repeat=0),
            _row("r1", "next_a", counts=(1, 0, 4, 1), repeat=1),
            _row("r2", "next_a", counts=(2, 0, 4, 0), repeat=2),
        ]
    )
    return store


def test_repeats_give_spread_and_the_first_run_gives_the_counts(tmp_path):
    store = _three_runs(tmp_path)
    r = task_row(collect(store)[0])
    assert (r["runs"], r["perfect"], r["perfect_runs"], r["tp"]) == (3, 1, 2, 2)
    bas = [1.0, 0.75, 1.0]
    mean = sum(bas) / 3
    std = math.sqrt(sum((b - mean) ** 2 for b in bas) / 2)
    assert float(r["ba_mean"]) == pytest.approx(mean, abs=1e-6) and float(r["ba_std"]) == pytest.approx(
        std, abs=1e-6
    )


def test_docs_list_the_tasks_whose_outcome_varies_between_runs(tmp_path):
    store = _three_runs(tmp_path)
    out = tmp_path / "res"
    export(store, out, commit="abc")
    text = render(out)
    assert "### Run-to-run spread: ilasp at 60s, 3 runs per task" in text
    assert "1 of 1 tasks are perfect in some runs and not in others: g/next (2/3)" in text
    assert "| g/next | 91.7% | 0.1443 | 2/3 |" in text  # mean of 1, 0.75, 1; sample std
    assert "| 0.7 [0.0, 1.0] |" in text  # the perfect count: mean 2/3 over runs, its interval cut to [0, 1]


def test_docs_list_the_unsolved_tasks_of_a_learner_with_fallbacks_by_why(tmp_path):
    """At the learner's largest budget only, and not for a learner without fallback models."""
    store = ResultStore(tmp_path / "s")
    store.write(
        [
            _row("cut", "next_a", game="cut", status="timeout", fallback=True, counts=(1, 1, 2, 0)),
            _row("partial", "next_a", game="partial", fallback=True, counts=(1, 0, 3, 1)),
            _row("wrong", "next_a", game="wrong", fallback=False, counts=(1, 1, 2, 0)),
            _row("none", "next_a", game="none", status="error", counts=None),
            _row("solved", "next_a", game="solved", fallback=False, counts=(1, 0, 3, 0)),
            _row("short", "next_a", game="short", fallback=True, counts=(1, 1, 2, 0), budget_s=10.0),
            _row("knn", "next_a", game="knn", learner="knn5", counts=(1, 1, 2, 0)),
        ]
    )
    out = tmp_path / "res"
    export(store, out, commit="abc")
    text = render(out)
    assert "### Tasks not solved: ilasp at 60s" in text and "4 of 5 tasks are not perfect" in text
    for why, task in [
        ("cut by the budget", "cut/next 0.833"),
        ("no complete program", "partial/next 0.750"),
        ("complete on train, wrong on test", "wrong/next 0.833"),
        ("no model before the budget", "none/next 0.500"),
    ]:
        (line,) = [x for x in text.splitlines() if x.startswith(f"- **{why}** (1): ")]
        assert line.endswith(f". {task}"), line
    assert "Tasks not solved: ilasp at 10s" not in text and "Tasks not solved: knn5" not in text
    assert "solved/next" not in text


def test_perfect_count_interval_by_hand():
    # p = 1, 0, 2/3, 1/3: mean 2; variance 0 + 0 + 2/9 + 2/9 = 4/9; half-width 1.96 * 2/3
    mean, lo, hi = perfect_count_ci([(3, 3), (0, 3), (2, 3), (1, 3)])
    assert mean == pytest.approx(2.0)
    assert (lo, hi) == (pytest.approx(2 - 1.96 * 2 / 3), pytest.approx(2 + 1.96 * 2 / 3))
    assert perfect_count_ci([(1, 1), (0, 1)]) == (1.0, 1.0, 1.0)  # one run measures no noise


def test_stale_rows_fail_until_marked_and_the_docs_show_them(tmp_path):
    store = ResultStore(tmp_path / "s")
    store.write([_row("a", "next_a", learner="knn5", fallback=None)])
    out = tmp_path / "res"
    (path,) = export(store, out, commit="abc")
    assert read_rows(path)[0]["source_hash"] == source_hash("knn5") and not stale_rows(path)
    text = path.read_text().replace(source_hash("knn5"), "0123456789abcdef")
    path.write_text(text)
    assert [s[1:3] for s in stale_rows(path)] == [("knn5", "0123456789abcdef")]
    assert "STALE (unmarked)" in render(out)
    assert mark_stale(path) == 1 and not stale_rows(path)
    assert "**STALE**: sources now" in render(out)
    assert mark_stale(path) == 0  # marked with the hash of now: nothing to do
    rows = read_rows(path)
    rows[0]["stale"] = "sources now fedcba9876543210"  # marked at an earlier change of the sources
    write_rows(path, rows)
    assert mark_stale(path) == 1 and read_rows(path)[0]["stale"] == f"sources now {source_hash('knn5')}"


def test_source_files_cover_the_learner_family_and_the_scoring():
    ilasp = set(source_files("ilasp"))  # the modules of learners/ilp it imports, and the scoring
    assert {"learners/ilp/ilasp.py", "learners/ilp/search.py", "learners/ilp/evaluate.py"} <= ilasp
    assert "learners/metrics.py" in ilasp
    # other learners of its package: changing them leaves ilasp's committed figures current
    assert not {"learners/ilp/aspal.py", "learners/ilp/reference.py", "learners/ilp/__init__.py"} & ilasp
    assert {"learners/ilp/reference.py", "learners/ilp/evaluate.py"} <= set(source_files("reference"))
    assert source_files("knn1") == ["learners/knn.py", "learners/metrics.py"]
    assert source_hash("knn1") == source_hash("knn5") != source_hash("mean")
    gnn = source_files("gnn-iggp")  # a learner registered by a package's __init__: the whole package
    assert {"learners/gnn/__init__.py", "learners/gnn/iggp.py", "learners/metrics.py"} <= set(gnn)


def test_summary_counts_trivial_tasks_and_perfect_without_them():
    base = dict.fromkeys(COLUMNS, "0")
    rows = [
        {**base, "balanced_accuracy": "1.0", "ba_fallback_failed": "1.0", "perfect": "1", "trivial": "1",
         "predicates": "1", "runs": "1", "perfect_runs": "1", "ba_std": "0"},
        {**base, "balanced_accuracy": "0.5", "ba_fallback_failed": "0.5", "perfect": "0", "trivial": "0",
         "predicates": "2", "runs": "1", "perfect_runs": "0", "ba_std": "0"},
    ]  # fmt: skip
    s = summarise(rows)
    assert (s["tasks"], s["perfect"], s["trivial"], s["nontrivial"], s["perfect_nontrivial"]) == (
        2,
        1,
        1,
        1,
        0,
    )
    assert s["balanced_accuracy"] == 0.75 and s["predicates"] == 3


# --- anchors ---------------------------------------------------------------------------------------


def test_anchor_comparison_counts_wins_losses_and_ties(tmp_path):
    f = tmp_path / "pub.csv"
    f.write_text("game,target,x_test_ba,perfect\ng,goal,1.0,1\ng,next,0.5,0\ng,legal,0.8,0\nh,goal,0.9,0\n")
    anchor = read_anchor(f)
    ours = {
        ("g", "goal"): (1.0, True),
        ("g", "next"): (0.75, False),
        ("g", "legal"): (0.6, False),
        ("z", "goal"): (1, True),
    }
    c = compare_to_anchor("me", ours, anchor).summary()
    assert (c["tasks"], c["wins"], c["losses"], c["ties"]) == (3, 1, 1, 1)
    assert (c["only_learner"], c["only_anchor"], c["anchor_perfect"]) == (1, 1, 1)
    assert c["anchor_ba"] == pytest.approx((1.0 + 0.5 + 0.8) / 3)
    assert anchor.on({("g", "goal"), ("h", "goal"), ("q", "next")}) == {
        "tasks": 2, "balanced_accuracy": pytest.approx(0.95), "perfect": 1,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("game,target,perfect\n", r"pub.csv:1: an anchor file needs"),
        ("game,target,balanced_accuracy\ng,goal,high\n", r"pub.csv:2: not a number in 'balanced_accuracy'"),
        ("game,target,balanced_accuracy\ng,goal,1.5\n", r"pub.csv:2: balanced accuracy 1.5"),
        ("game,target,balanced_accuracy\ng,goal,1\ng,goal,1\n", r"pub.csv:3: task g/goal appears twice"),
        ("world,model\n", r"pub.csv:1: a GraphLog anchor file needs columns world, model, test_accuracy"),
        ("world,model,test_accuracy\nrule_0,gat-egat,x\n", r"pub.csv:2: not a number in 'test_accuracy'"),
        ("world,model,test_accuracy\nrule_0,gat-egat,61.9\n", r"pub.csv:2: test accuracy 61.9 is outside"),
        ("world,model,test_accuracy\nw,m,1\nw,m,1\n", r"pub.csv:3: model m on world w appears twice"),
    ],
)
def test_bad_anchor_files_are_one_line_errors_naming_the_line(tmp_path, text, message):
    f = tmp_path / "pub.csv"
    f.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_anchor(f)


def test_graphlog_anchor_is_read_by_its_columns_and_refused_where_tasks_are_needed(tmp_path):
    f = tmp_path / "paper.csv"
    f.write_text("world,model,test_accuracy\nrule_0,gat-egat,0.5\nrule_1,gat-egat,0.75\n")
    anchor = read_anchor(f)
    assert isinstance(anchor, GraphLogAnchor)
    assert anchor.on("gat-egat", ["rule_0", "rule_1"]) == 0.625
    assert anchor.on("gat-egat", ["rule_0", "rule_2"]) is None and anchor.on("gcn-egat", ["rule_0"]) is None
    with pytest.raises(ValueError, match=r"paper.csv:1: a GraphLog anchor \(per world\)"):
        read_iggp_anchor(f)


def test_bench_docs_and_stale_commands(tmp_path):
    from typer.testing import CliRunner

    from orchestrator.cli import app

    store = ResultStore(tmp_path / "s")
    store.write([_row("a", "next_a", learner="mean")])
    out = tmp_path / "res"
    (path,) = export(store, out, commit="abc")
    doc = tmp_path / "b.md"
    doc.write_text("# figures\n\nhand-written text stays\n")
    anchor = tmp_path / "pub.csv"
    anchor.write_text("game,target,balanced_accuracy\ng,next,0.5\n")
    ggp_doc = tmp_path / "ggp.md"
    ggp_doc.write_text("# datasheet\n")
    common = ["--results", str(out), "--doc", str(doc), "--anchor", str(anchor), "--ggp-results",
              str(tmp_path / "no-ggp"), "--ggp-doc", str(ggp_doc)]  # fmt: skip
    runner = CliRunner()
    assert runner.invoke(app, ["bench", "docs", *common, "--check"]).exit_code == 1
    assert runner.invoke(app, ["bench", "docs", *common]).exit_code == 0
    text = doc.read_text()
    assert (
        "hand-written text stays" in text and "`mean_60s.csv`" in text and "| mean | 60s | as scored" in text
    )
    assert runner.invoke(app, ["bench", "docs", *common, "--check"]).exit_code == 0
    path.write_text(path.read_text().replace(source_hash("mean"), "feedfeedfeedfeed"))
    assert runner.invoke(app, ["bench", "docs", *common, "--check"]).exit_code == 1  # now shows STALE
    result = runner.invoke(app, ["bench", "stale", str(path)])
    assert result.exit_code == 0 and "1 row(s) marked stale" in result.output
    assert not stale_rows(path)


def test_the_ggp_datasheet_tables_match_the_results_files():
    from orchestrator.analysis import ggp_docs

    text = ggp_docs.DOC.read_text()
    assert ggp_docs.current_section(text) == ggp_docs.render(), (
        "docs/ggp-benchmark.md is stale: run `orch bench docs`"
    )


def test_ggp_datasheet_tables_from_a_manifest_and_results(tmp_path):
    """Statistics per game from the manifest; difficulty per learner beside IGGP, never pooled."""
    from orchestrator.analysis import ggp_docs

    ggp, iggp = tmp_path / "ggp", tmp_path / "iggp"
    game = {"game": "g", "status": "ok", "error": None, "engine": "compiled", "roles": ["a"], "fluents": 3,
            "distinct_states": 40, "distinct_transitions": 90, "terminal_episodes": 10,
            "targets": {"next": {"kept": True, "excluded": []},
                        "goal": {"kept": False, "excluded": ["no-negative: every split"]}}}  # fmt: skip
    failed = {"game": "h", "status": "error", "error": "h.kif:3: bad", "targets": {}}
    ggp.mkdir()
    (ggp / "manifest.json").write_text(json.dumps({"games": [game, failed]}))
    store = ResultStore(tmp_path / "s")
    store.write([_row("g", "next_a", learner="mean")])
    export(store, ggp, commit="abc")
    store2 = ResultStore(tmp_path / "s2")
    store2.write([_row("a", "next_a", learner="mean")])
    export(store2, iggp, commit="abc")
    text = ggp_docs.render(ggp, iggp)
    assert "2 rulesheets; 1 generated, 1 failed; 1 targets kept, 1 excluded (no-negative: 1)" in text
    assert "| mean | 60s | GGP | 1 |" in text and "| mean | 60s | IGGP | 1 |" in text
    assert "solves any kept target perfectly (0 of 1): none." in text
    assert f"](results/ggp/{ggp_docs.FIGURE})" in text
    figure = ggp_docs.write_figure(ggp, iggp)
    assert figure == ggp / ggp_docs.FIGURE and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    first = figure.read_bytes()
    assert ggp_docs.write_figure(ggp, iggp).read_bytes() == first  # a rerun writes the same bytes
    assert ggp_docs.write_figure(tmp_path / "none", iggp) is None


def test_the_oracle_never_counts_as_solving_a_ggp_game(tmp_path):
    """The reference reads the game's rules: its 100% checks the data, it solves nothing."""
    from orchestrator.analysis import ggp_docs

    ggp = tmp_path / "ggp"
    ggp.mkdir()
    game = {"game": "g", "status": "ok", "error": None, "engine": "compiled", "roles": ["a"], "fluents": 3,
            "distinct_states": 40, "distinct_transitions": 90, "terminal_episodes": 10,
            "targets": {"next": {"kept": True, "excluded": []}}}  # fmt: skip
    (ggp / "manifest.json").write_text(json.dumps({"games": [game]}))
    store = ResultStore(tmp_path / "s")
    store.write(
        [_row("o", "next_a", learner="reference"), _row("m", "next_a", learner="mean", counts=(0, 0, 3, 1))]
    )
    export(store, ggp, commit="abc")
    text = ggp_docs.render(ggp, tmp_path / "no-iggp")
    assert "| reference | 60s | GGP | 1 | 100.0% | 1/1 |" in text and "| reference | 60s | IGGP |" not in text
    assert "solves any kept target perfectly (1 of 1): g." in text


def test_a_sampled_ggp_file_is_marked_and_compared_on_its_own_games(tmp_path):
    """`ilasp` at 60 s on a sample beside 10 s on every game: the 10 s file is also given on the sample."""
    from orchestrator.analysis import ggp_docs

    ggp = tmp_path / "ggp"
    ggp.mkdir()
    games = [{"game": g, "status": "ok", "error": None, "engine": "compiled", "roles": ["a"], "fluents": 3,
              "distinct_states": 40, "distinct_transitions": 90, "terminal_episodes": 10,
              "targets": {"next": {"kept": True, "excluded": []}}} for g in ("g", "h")]  # fmt: skip
    (ggp / "manifest.json").write_text(json.dumps({"games": games}))
    store = ResultStore(tmp_path / "s")

    def job(game: str, budget: float, counts: tuple) -> object:
        extra = {"all_false": {"test_tp": 0, "test_fp": 0, "test_tn": 3, "test_fn": 1}}
        tp, fp, tn, fn = counts
        return row(f"{game}{budget}", game=game, target="next", predicate="next_a", learner="ilasp",
                   budget_s=budget, extra=extra, test_tp=tp, test_fp=fp, test_tn=tn, test_fn=fn)  # fmt: skip

    perfect, half = (1, 0, 3, 0), (0, 0, 3, 1)
    store.write([job("g", 10.0, half), job("h", 10.0, perfect), job("g", 60.0, perfect)])
    export(store, ggp, commit="abc")
    text = ggp_docs.render(ggp, tmp_path / "no-iggp")
    assert "| ilasp | 10s | GGP | 2 | 75.0% | 1/2 |" in text
    assert "| ilasp | 10s | GGP, the 60s sample | 1 | 50.0% | 0/1 |" in text
    assert "| ilasp | 60s | GGP, 1-game sample | 1 | 100.0% | 1/1 |" in text
    assert "the 10s sample" not in text  # a file on every game has no sample of its own
    sixty = ggp / "ilasp_60s.csv"  # measured with other sources, then marked (`orch bench stale`)
    sixty.write_text(sixty.read_text().replace(source_hash("ilasp"), "0123456789abcdef"))
    assert mark_stale(sixty) == 1
    text = ggp_docs.render(ggp, tmp_path / "no-iggp")
    assert "| ilasp | 60s | GGP, 1-game sample (stale) | 1 | 100.0% | 1/1 |" in text
    assert "| ilasp | 10s | GGP | 2 |" in text


def test_the_commit_stamp_is_dirty_for_code_changes_not_for_results_files(tmp_path):
    """A bench run after another in one checkout (which wrote a results file) ran the committed code."""
    import subprocess

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "docs" / "results" / "iggp").mkdir(parents=True)
    results_file, code = tmp_path / "docs" / "results" / "iggp" / "x_60s.csv", tmp_path / "code.py"
    results_file.write_text("a\n")
    code.write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    clean = git_commit(tmp_path)
    assert clean and not clean.endswith("+dirty")
    results_file.write_text("b\n")
    assert git_commit(tmp_path) == clean
    code.write_text("x = 2\n")
    assert git_commit(tmp_path) == clean + "+dirty"


def test_an_export_of_some_tasks_keeps_or_refuses_to_drop_a_files_other_rows(tmp_path):
    """A partial rerun (`--games`) written over a whole file: by default refused, nothing written;
    merged, its tasks replace theirs and the rest stay; replaced, only its tasks remain."""
    from orchestrator.analysis.results import ExportRefused

    out = tmp_path / "res"
    whole = ResultStore(tmp_path / "whole")
    whole.write([_row(f"w{g}", "next_a", game=g, counts=(1, 0, 3, 1)) for g in ("g", "h", "k")])
    (path,) = export(whole, out, commit="old")
    before = path.read_text()
    again = ResultStore(tmp_path / "again")
    again.write([_row("h2", "next_a", game="h", counts=(2, 0, 3, 0))])
    with pytest.raises(
        ExportRefused, match=r"holds 2 task\(s\) this export does not cover \(g/next, k/next\)"
    ):
        export(again, out, commit="new", tasks={("h", "next")}, existing="refuse")
    assert path.read_text() == before
    export(again, out, commit="new", tasks={("h", "next")}, existing="merge")
    rows = read_rows(path)
    assert [(r["game"], r["commit"], r["tp"]) for r in rows] == [
        ("g", "old", "1"),
        ("h", "new", "2"),
        ("k", "old", "1"),
    ]
    export(whole, out, commit="old", existing="refuse")  # the whole set again: nothing is dropped
    export(again, out, commit="new", tasks={("h", "next")}, existing="replace")
    assert [r["game"] for r in read_rows(path)] == ["h"]
