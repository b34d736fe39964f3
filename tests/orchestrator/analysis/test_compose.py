"""orch analyse compose: stored GraphLog rule programs joined per run and applied recursively."""

from __future__ import annotations

import json

import pytest
from store_rows import row
from typer.testing import CliRunner

from orchestrator.analysis.compose import score_composed
from orchestrator.analysis.htmlreport import write_html
from orchestrator.cli import app
from orchestrator.storage.store import ResultStore
from tasks.graphlog.as_task import target_predicate
from tasks.graphlog.generator import GeneratorConfig, generate_suite
from tasks.graphlog.rules import generate_rules
from tasks.graphlog.suite_files import write_suite

CFG = GeneratorConfig(n_train=30, n_valid=10, n_test=40, seed=0)


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite")
    worlds = generate_suite(CFG, [0])
    write_suite(root, worlds, generate_rules(seed=CFG.seed), CFG)
    return root, worlds[0]


def _row(dataset: str, learner: str, predicate: str, program: str | None, description: str = "") -> dict:
    return row(f"{learner}-{predicate}", dataset=dataset, game="rule_0", target="relation",
               predicate=predicate, learner=learner, program=program, description=description)  # fmt: skip


def _rows(dataset: str, learner: str, rules, drop: int | None = None) -> list[dict]:
    """One row per class: the world's rules with that head, as a learner would store them."""
    heads = sorted({r.head for r in rules})
    out = []
    for h in heads:
        text = "\n".join(
            f"{target_predicate(h)}(X,Y) :- r{r.body1}(X,Z), r{r.body2}(Z,Y)."
            for i, r in enumerate(rules)
            if r.head == h and i != drop
        )
        out.append(_row(dataset, learner, target_predicate(h), text))
    return out


def test_true_rules_compose_exactly_and_a_missing_rule_shows(suite, tmp_path):
    root, world = suite
    dataset = f"graphlog:{root}"
    store = ResultStore(tmp_path / "store")
    store.write(
        _rows(dataset, "truth", world.rules)
        + _rows(dataset, "missing", world.rules, drop=0)
        + [_row(dataset, "knn5", target_predicate(world.rules[0].head), None, "knn over 30 examples (k=5)")]
    )
    rows = {r["learner"]: r for r in score_composed(store)}
    assert set(rows) == {"truth", "missing"}  # knn5's model is a description, not a program: skipped
    assert rows["truth"]["exact"] == 1.0 and rows["truth"]["graphs"] == 40
    assert rows["truth"]["predicates"] == rows["truth"]["classes"]
    assert rows["missing"]["resolved"] < 1.0  # some test path needs rule 0 ...
    assert rows["missing"]["exact"] == rows["missing"]["resolved"]  # ... and nothing else changes
    page = write_html(store, tmp_path / "report.html").read_text()
    assert "learned rules applied recursively" in page and "missing" in page


def test_html_report_says_when_the_suite_is_gone(suite, tmp_path):
    root, world = suite
    store = ResultStore(tmp_path / "store")
    store.write(_rows(f"graphlog:{tmp_path / 'moved'}", "truth", world.rules))
    page = write_html(store, tmp_path / "report.html").read_text()
    assert "Composed scores unavailable" in page and "moved" in page


def test_cli_json(suite, tmp_path):
    root, world = suite
    store = tmp_path / "store"
    ResultStore(store).write(_rows(f"graphlog:{root}", "truth", world.rules))
    res = CliRunner().invoke(app, ["analyse", "compose", "--store", str(store), "--format", "json"])
    assert res.exit_code == 0, res.output
    [row] = json.loads(res.output)["rules applied recursively"]
    assert row["exact"] == 1.0 and row["split"] == "test"
