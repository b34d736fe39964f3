"""The per-state engine (`tasks.gdl.perstate`): the fallback where the whole grounding is too big.

The strong test is agreement with the compiled engine on games both can play: every query
(legal, goal, terminal, next) on every state the compiled engine's playouts visit. The fallback
itself is forced with a tiny whole-grounding bound.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from lifetime_helpers import assert_children_die_with_parent

from tasks.gdl import Game, GDLError
from tasks.gdl.errors import GroundingLimit
from tasks.gdl.perstate import PerStateEngine
from tasks.gdl.probe import probe_game

# Tic-tac-toe on 3x3 with negation, a helper relation and a 0-ary terminal: small both ways.
GRID = """
(role x) (role o)
(init (control x))
(index 1) (index 2) (index 3)
(<= (legal ?p (mark ?i ?j)) (true (control ?p)) (index ?i) (index ?j) (not (taken ?i ?j)))
(<= (legal ?p noop) (role ?p) (not (true (control ?p))))
(<= (taken ?i ?j) (true (cell ?i ?j ?p)))
(<= (next (cell ?i ?j ?p)) (does ?p (mark ?i ?j)))
(<= (next (cell ?i ?j ?p)) (true (cell ?i ?j ?p)))
(<= (next (control o)) (true (control x)))
(<= (next (control x)) (true (control o)))
(<= (row ?i ?p) (true (cell ?i 1 ?p)) (true (cell ?i 2 ?p)) (true (cell ?i 3 ?p)))
(<= (col ?j ?p) (true (cell 1 ?j ?p)) (true (cell 2 ?j ?p)) (true (cell 3 ?j ?p)))
(<= (line ?p) (row ?i ?p))
(<= (line ?p) (col ?j ?p))
(<= (goal ?p 100) (line ?p))
(<= (goal ?p 0) (role ?p) (not (line ?p)))
(<= open (index ?i) (index ?j) (not (taken ?i ?j)))
(<= terminal (line ?p))
(<= terminal (not open))
"""

TINY = 0.001
"""A whole-grounding bound no grounding meets (forking the grounding child alone takes longer)."""


@pytest.fixture(scope="module")
def grid():
    game = Game.from_text(GRID, "grid.kif")
    engine = game.engine()
    per_state = PerStateEngine(game)
    yield game, engine, per_state
    per_state.close()


def test_per_state_engine_agrees_with_compiled_on_every_visited_state(grid):
    game, eng, ps = grid
    assert ps.roles == eng.roles == ["x", "o"]
    assert ps.state_fluents(ps.initial()) == eng.state_fluents(eng.initial()) == ["control(x)"]
    checked = 0
    for tr in eng.playouts(8, max_steps=9, seed=3):
        for t, s in enumerate(tr.states):
            fluents = eng.state_fluents(s)
            does = None
            if t < len(tr.moves):
                does = {eng.roles[r]: eng.moves[r][m] for r, m in enumerate(tr.moves[t])}
            assert ps.evaluate(fluents, does) == eng.evaluate(fluents, does), (fluents, does)
            mine = ps.state_of(fluents)
            assert ps.terminal(mine) == eng.terminal(s)
            assert ps.goals(mine) == eng.goals(s)
            legal_ps = [sorted(ps.moves[r][i] for i in ids) for r, ids in enumerate(ps.legal(mine))]
            legal_c = [sorted(eng.moves[r][i] for i in ids) for r, ids in enumerate(eng.legal(s))]
            assert legal_ps == legal_c
            checked += 1
    assert checked > 40
    assert any(eng.terminal(tr.states[-1]) for tr in eng.playouts(8, max_steps=9, seed=3))


def test_per_state_playouts_are_legal_reproducible_and_reach_the_end(grid):
    game, eng, _ = grid
    ps = PerStateEngine(game)
    try:
        a = ps.playouts(5, max_steps=9, seed=1)
        b = ps.playouts(5, max_steps=9, seed=1)
        assert [t.moves.tolist() for t in a] == [t.moves.tolist() for t in b]
        assert all(t.terminal for t in a)  # tic-tac-toe ends within 9 moves
        for tr in a:
            assert tr.states.shape[1] == len(ps.fluents)  # padded to the fluents met so far
            for t, joint in enumerate(tr.moves):
                s = tr.states[t]
                legal = ps.legal(s)
                assert all(m in legal[r] for r, m in enumerate(joint))
                # the compiled engine agrees with each transition
                c = eng.state_of(ps.state_fluents(s))
                cj = [
                    eng.move_id(role, ps.moves[r][m])
                    for r, (role, m) in enumerate(zip(ps.roles, joint, strict=True))
                ]
                assert eng.state_fluents(eng.next(c, cj)) == sorted(ps.state_fluents(tr.states[t + 1]))
    finally:
        ps.close()


def test_a_tiny_whole_grounding_bound_falls_back_to_the_per_state_engine():
    game = Game.from_text(GRID, "grid.kif")
    with pytest.raises(GroundingLimit, match="grounding did not finish"):
        game.engine(ground_seconds=TINY)
    eng = game.play_engine(ground_seconds=TINY)
    assert isinstance(eng, PerStateEngine) and "grounding did not finish" in eng.why
    assert game.play_engine(ground_seconds=TINY) is eng  # cached: no second whole grounding
    eng.close()
    assert Game.from_text(GRID, "grid.kif").play_engine().kind != "per-state"  # fits: compiled


def test_probe_reports_the_per_state_engine_and_its_agreement(tmp_path):
    path = tmp_path / "grid.kif"
    path.write_text(GRID)
    r = probe_game(path, playouts=3, max_steps=9, ground_seconds=TINY, check_states=30, time_limit=60)
    assert (r.status, r.engine, r.roles) == ("plays", "per-state", 2), r.reason
    assert r.agreement == 1.0 and r.checked >= 10
    assert "per-state engine" in r.reason
    r = probe_game(path, playouts=3, max_steps=9, ground_seconds=60, check_states=30)
    assert (r.status, r.engine) == ("plays", "compiled")


def test_a_state_too_big_to_ground_names_the_relation():
    numbers = " ".join(f"(n {i})" for i in range(60))
    text = f"""
    (role r) (init on) {numbers}
    (<= (big ?a ?b ?c ?d) (true on) (n ?a) (n ?b) (n ?c) (n ?d))
    (<= (legal r go) (big ?a ?b ?c ?d))
    (<= (next on) (true on))
    (<= terminal (not (true on)))
    (goal r 100)
    """
    game = Game.from_text(text, "big.kif")
    eng = game.play_engine(ground_seconds=0.3, state_seconds=0.3)
    assert isinstance(eng, PerStateEngine)
    with pytest.raises(
        GDLError, match=r"big.kif.*per-state grounding of a state .* within 0.3 s; most likely big"
    ):
        eng.legal(eng.initial())
    with pytest.raises(GDLError, match="stopped after an earlier error"):
        eng.legal(eng.initial())


def test_generate_without_typ_on_the_per_state_engine(tmp_path):
    from tasks.generate import generate_game

    path = tmp_path / "grid.kif"
    path.write_text(GRID)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done = generate_game(path, None, tmp_path / "out", episodes=6, steps=9, seed=0, ground_seconds=TINY)
    assert done.distinct_states > 10
    assert all(n > 0 for n in done.counts["legal"].values())
    typ = (tmp_path / "out" / "types" / "grid.typ").read_text()
    assert "mark" in typ and "control" in typ
    legal = (tmp_path / "out" / "data" / "train" / "grid_legal_train.dat").read_text()
    assert "legal_mark(x, " in legal


def test_state_vectors_of_different_lengths_key_alike():
    from tasks.generate import state_key

    short = np.array([True, False, True])
    long = np.concatenate([short, np.zeros(20, dtype=bool)])
    assert state_key(short) == state_key(long)
    assert state_key(short) != state_key(np.array([True, True, False]))


def test_a_rulesheet_too_big_to_ground_whole_plays_per_state_and_agrees(rulesheets):
    """racer's whole grounding has millions of rules (over 60 s); one state grounds in ~0.1 s."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = probe_game(rulesheets / "racer.kif", playouts=2, max_steps=8, ground_seconds=1, check_states=10)
    assert (r.status, r.engine) == ("plays", "per-state"), r.reason
    assert r.agreement == 1.0 and r.checked == 10


def test_a_killed_parent_leaves_no_per_state_worker(tmp_path):
    """The worker that grounds states is tied to its parent like the whole grounding's child."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    psutil = pytest.importorskip("psutil")
    (tmp_path / "grid.kif").write_text(GRID)
    script = (
        "import time\nfrom tasks.gdl import Game\nfrom tasks.gdl.perstate import PerStateEngine\n"
        f"e = PerStateEngine(Game.from_file({str(tmp_path / 'grid.kif')!r}))\n"
        "print('ready', flush=True)\ntime.sleep(600)\n"
    )
    root = Path(__file__).resolve().parents[3]
    parent = subprocess.Popen(
        [sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(root)}, stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline().strip() == b"ready"
        assert_children_die_with_parent(parent, psutil.Process(parent.pid).children(), "per-state worker")
    finally:
        if parent.poll() is None:
            parent.kill()
