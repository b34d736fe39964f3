"""GDL as people write it: the GGP community rulesheets play, or are rejected for a spec reason.

A fast sample of about 20 diverse rulesheets runs in the CI suite; the whole corpus is
``slow``. Each game is probed (`tasks.gdl.probe`): parsed, checked, grounded, played, and the
compiled engine cross-checked against a direct clingo solve on every visited state and move.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
from lifetime_helpers import assert_children_die_with_parent
from typer.testing import CliRunner

from orchestrator.cli import app
from tasks.gdl.probe import PLAYS, probe_game

ROOT = Path(__file__).resolve().parents[3]  # the project root (tests/tasks/gdl/ is three down)

SAMPLE = [
    # symbols clingo cannot spell as they are: lightson-1, goalBlocker1-100, ++
    "SimultaneousWin2", "blockerParallel", "beatMania",
    # a query-bound head variable (plays anyway, bound by the universe domain)
    "colonelBlotto",
    # small boards, puzzles, simultaneous moves, several roles, arithmetic by successor
    "blocks", "chickentoetictac", "blocker", "blocks2player", "onestep", "hodgepodge", "maze",
    "haystack", "buttons", "bunk_t", "aipsrovers01", "checkLines", "circlesolitaire", "nim1",
    "bidding-tictactoe", "coins", "3pttc",
]  # fmt: skip


def _probe(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return probe_game(path, playouts=3, max_steps=30, check_states=30, ground_seconds=60)


@pytest.mark.parametrize("name", SAMPLE)
def test_sample_rulesheet_plays_and_agrees_with_clingo(rulesheets, name):
    r = _probe(rulesheets / f"{name}.kif")
    assert r.status in PLAYS, r.reason
    assert r.agreement == 1.0 and r.checked > 0


def _corpus() -> list[str]:
    d = Path(os.environ.get("ORCH_SHARED", ROOT.parent / "shared")) / "ggp" / "rulesheets"
    return sorted(p.stem for p in d.glob("*.kif")) if d.is_dir() else []


@pytest.mark.slow
@pytest.mark.parametrize("name", _corpus())
def test_every_rulesheet_plays_or_is_rejected_for_a_spec_reason(rulesheets, name):
    from tasks.gdl.probe import probe_isolated

    r = probe_isolated(rulesheets / f"{name}.kif", 120, playouts=5, max_steps=40, check_states=60)
    assert r.status in (*PLAYS, "rejected"), r.reason
    if r.status == "rejected":
        assert "breaks the" in r.reason or "grounding" in r.reason, r.reason
    else:
        assert r.agreement == 1.0


def test_probe_cli_table_json_and_exit_code(rulesheets, tmp_path):
    bad = tmp_path / "bad.kif"
    bad.write_text("(role a)\n(<= (legal a ?m) (true (p ?x)))\n(init (p 1))\n")
    runner = CliRunner()
    ok = runner.invoke(app, ["games", "probe", str(rulesheets / "blocks.kif"), "--json", "-n", "2"])
    assert ok.exit_code == 0, ok.output
    report = json.loads(ok.stdout)
    assert report["summary"]["plays"] == 1 and report["games"][0]["agreement"] == 1.0
    res = runner.invoke(app, ["games", "probe", str(rulesheets / "blocks.kif"), str(bad), "--strict"])
    assert res.exit_code == 1
    assert "blocks" in res.stdout and "rejected" in res.stdout
    missing = runner.invoke(app, ["games", "probe", str(tmp_path / "nope.kif")])
    assert missing.exit_code == 2 and "no such game file" in missing.output  # bad input: exit 2


_INFINITE = (
    "from tasks.gdl.ground import ground_game\n"
    "ground_game('n(0). n(s(X)) :- n(X). role(a). legal(a,x).', 'inf', set(), False, ['a'], 300)\n"
)


def test_a_killed_parent_leaves_no_grounding_child():
    import psutil

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", _INFINITE], env=env)
    try:
        deadline = time.monotonic() + 60
        kids: list[psutil.Process] = []
        while not kids and time.monotonic() < deadline:
            time.sleep(0.2)
            kids = psutil.Process(parent.pid).children()
        assert_children_die_with_parent(parent, kids, "grounding child")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_generate_needs_no_typ_file(rulesheets, tmp_path):
    from tasks.generate import generate_game
    from tasks.iggp import read_dat
    from tasks.signature import parse_typ

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generate_game(rulesheets / "beatMania.kif", None, tmp_path, episodes=4, steps=10, seed=0)
    sig = parse_typ(tmp_path / "types" / "beatMania.typ")  # the inferred signature is a valid .typ
    assert sig.constants("agent") == ["dropper", "player"]
    dat = read_dat(tmp_path / "data" / "train" / "beatMania_legal_train.dat")
    assert dat.examples and all(p in set(dat.atoms) for _, pos in dat.examples for p in pos)
    from tasks.task import parse_atom

    assert ("++", ("0", "1")) in {parse_atom(a) for a in dat.statics}  # a KIF symbol as it is written
