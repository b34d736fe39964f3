"""`orch learners list`, `orch learn` and the duration parser they share with `orch run`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from learners.base import Budget, make_learner
from learners.metrics import Counts, count, pool
from orchestrator.cli import app
from orchestrator.durations import format_duration, parse_duration
from tasks.iggp import Dataset

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, list(args))


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("60s", 60), ("30m", 1800), ("1h", 3600), ("1h30m", 5400), ("90", 90), ("2.5m", 150), ("500ms", 0.5)],
)
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5x", "m", "1h 30", "-5s", "0", "h1", "inf5"])
def test_parse_duration_rejects_nonsense(text):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_unlimited_and_formatting():
    assert parse_duration("none") is None and parse_duration(None) is None
    assert [format_duration(s) for s in (5400, 42.5, 60, None)] == ["1h30m", "42.5s", "1m", "none"]


def test_learners_list_json_has_every_baseline():
    result = invoke("learners", "list", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.output)}
    for name in ("true", "inertia", "mean", "knn5"):
        assert rows[name]["description"] and rows[name]["resources"]["num_cpus"] >= 1
    assert rows["knn5"]["pattern"] == r"knn(?P<k>\d+)"


def test_learners_list_table():
    result = invoke("learners", "list")
    assert result.exit_code == 0, result.output
    assert "inertia" in result.output and "knn5" in result.output


def test_learn_json_matches_a_direct_fit(iggp_dir):
    result = invoke(
        "learn", "--dataset", str(iggp_dir), "--game", "gt_centipede", "--target", "next",
        "--learner", "knn1", "--budget", "30s", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    task = Dataset(iggp_dir).load_task("gt_centipede", "next")
    model = make_learner("knn1").fit(task, Budget(30))
    for split in ("validate", "test"):
        counts = count(task, task.split(split), model.predict(task, task.split(split)))
        pooled = pool(counts.values())
        assert doc["splits"][split]["pooled"] == {
            **pooled.as_dict(),
            "balanced_accuracy": pooled.balanced_accuracy,
            "perfect": pooled.perfect,
        }
        assert set(doc["splits"][split]["predicates"]) == set(task.predicates)
    assert doc["budget_s"] == 30 and doc["rules"] is None and "knn1 over" in doc["model"]


def test_learn_one_predicate_table(iggp_dir):
    result = invoke(
        "learn", "-d", str(iggp_dir), "-g", "gt_centipede", "-t", "next", "-l", "mean", "-p", "next_control"
    )
    assert result.exit_code == 0, result.output
    assert "next_control" in result.output and "next_gameOver" not in result.output
    assert "pooled" in result.output


def test_learn_errors_are_clear(iggp_dir):
    d = str(iggp_dir)
    bad_learner = invoke("learn", "-d", d, "-g", "gt_centipede", "-t", "next", "-l", "knnx")
    assert bad_learner.exit_code == 2 and "known learners: " in bad_learner.output
    assert "knn5" in bad_learner.output
    bad_game = invoke("learn", "-d", d, "-g", "gt_centipde", "-t", "next")
    assert bad_game.exit_code == 2 and "did you mean gt_centipede" in bad_game.output
    bad_target = invoke("learn", "-d", d, "-g", "gt_centipede", "-t", "nxt")
    assert bad_target.exit_code == 2 and "goal, legal, next, terminal" in bad_target.output
    bad_predicate = invoke("learn", "-d", d, "-g", "gt_centipede", "-t", "next", "-p", "next_nothing")
    assert bad_predicate.exit_code == 2 and "next_control" in bad_predicate.output
    bad_budget = invoke("learn", "-d", d, "-g", "gt_centipede", "-t", "next", "-b", "soon")
    assert bad_budget.exit_code == 2 and "cannot read duration 'soon'" in bad_budget.output
    no_train = invoke("learn", "-d", d, "-g", "ttcc4", "-t", "legal", "-l", "knn5")
    assert no_train.exit_code == 2 and "ttcc4_legal_train.dat: file not found" in no_train.output


def test_learn_says_when_the_learner_does_not_apply():
    """Bad input (exit 2), found from the learner's registration before any data is read (issue 28)."""
    res = invoke(
        "learn", "--game", "lights", "--target", "next", "--learner", "gnn-gat-egat", "--budget", "5s"
    )
    assert res.exit_code == 2
    assert "gnn-gat-egat does not apply to the bundled games" in res.output and "graphlog:DIR" in res.output


def test_learn_a_whole_target_learns_each_predicate_and_pools_them():
    """`orch learn` on a target with several sub-predicates (bundled race/next: control, mover,
    total) with an ILP learner, which takes one predicate at a time: each is learned, the counts
    are pooled as in a sweep, and the whole program is printed."""
    result = invoke("learn", "-g", "Race", "-t", "next", "-l", "ILASP", "-b", "20s", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["learner"] == "ilasp" and doc["game"] == "race"
    assert set(doc["learned"]) == {"next_control", "next_mover", "next_total"}
    for split in ("validate", "test"):
        per = doc["splits"][split]["predicates"]
        assert set(per) == set(doc["learned"])
        pooled = pool(Counts(*(c[k] for k in ("tp", "fp", "tn", "fn"))) for c in per.values())
        assert (
            doc["splits"][split]["pooled"]["tp"] == pooled.tp
            and doc["splits"][split]["pooled"]["fn"] == pooled.fn
        )
        assert doc["splits"][split]["pooled"]["balanced_accuracy"] == pytest.approx(pooled.balanced_accuracy)
    for p, fit in doc["learned"].items():
        assert f"% {p}\n" in doc["rules"] and fit["rules"].strip() in doc["rules"]
    table = invoke("learn", "-g", "race", "-t", "next", "-l", "ilasp", "-b", "20s")
    assert table.exit_code == 0, table.output
    assert "pooled (task)" in table.output and "% next_total" in table.output
    assert "3 predicates, budget 20s each" in table.output


def test_learned_rules_print_in_the_games_own_spelling(tmp_path):
    """A game whose names are not ASP identifiers (``++``, ``north-speed``): the rules are learned
    on escaped names, and ``orch learn`` prints them, as text and as ``rules_gdl``, as GDL spells them."""
    from tasks.generate import generate_game

    gdl = tmp_path / "odd.txt"
    gdl.write_text(
        "(role r) (init (north-speed 1)) (++ 1 2) (++ 2 3)\n"
        "(<= (legal r (go ?x)) (true (north-speed ?x)) (++ ?x ?y))\n"
        "(<= (legal r noop) (true (north-speed ?x)))\n"
        "(<= (next (north-speed ?y)) (does r (go ?x)) (++ ?x ?y))\n"
        "(<= (next (north-speed ?x)) (does r noop) (true (north-speed ?x)))\n"
        "(<= terminal (true (north-speed 3))) (<= (goal r 100) (true (north-speed 3)))\n"
        "(<= (goal r 0) (not (true (north-speed 3))))\n"
    )
    generate_game(gdl, None, tmp_path / "ds", episodes=20, steps=4, seed=0)
    args = ("learn", "-d", str(tmp_path / "ds"), "-g", "odd", "-t", "next", "-l", "ilasp", "-b", "10s")
    doc = json.loads(invoke(*args, "--json").output)
    assert "k0x" in doc["rules"]  # stored escaped: it runs on the task's files
    assert "next_north-speed(" in doc["rules_gdl"] and "k0x" not in doc["rules_gdl"], doc["rules_gdl"]
    text = invoke(*args).output
    assert "north-speed" in text and "k0x" not in text
