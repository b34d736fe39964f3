"""Semantics on a hand-written game, the compiled engine against clingo, playouts, flattening."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tasks.gdl import Game, GDLError, GDLWarning, flatten, unflatten
from tasks.gdl.clingo_engine import solve_once

# Recursion (less/2 is the transitive closure of succ/2), or, not, distinct, compound moves.
COUNTER = """
(role p)
(role q)
(succ 0 1) (succ 1 2) (succ 2 3)
(<= (less ?x ?y) (succ ?x ?y))
(<= (less ?x ?z) (succ ?x ?y) (less ?y ?z))
(init (count 0))
(init (lamp off))
(<= (legal p inc) (true (count ?x)) (less ?x 3))
(legal p wait)
(<= (legal q (toggle ?x)) (true (count ?x)) (or (succ ?x 2) (succ 2 ?x)))
(legal q noop)
(<= (next (count ?y)) (does p inc) (true (count ?x)) (succ ?x ?y))
(<= (next (count ?x)) (does p wait) (true (count ?x)))
(<= (next (lamp on)) (does q (toggle ?x)) (true (lamp off)))
(<= (next (lamp off)) (does q (toggle ?x)) (true (lamp on)))
(<= (next (lamp ?s)) (does q noop) (true (lamp ?s)))
(<= (goal p 100) (true (lamp on)))
(<= (goal p 0) (not (true (lamp on))))
(<= (goal q ?v) (true (count ?v)) (distinct ?v 0))
(<= (goal q 0) (true (count 0)))
(<= terminal (true (count 3)) (true (lamp on)))
"""


@pytest.fixture(scope="module")
def counter():
    return Game.from_text(COUNTER, "counter.kif").engine()


def _step(eng, state, p_move, q_move):
    return eng.next(state, [eng.move_id("p", p_move), eng.move_id("q", q_move)])


def _legal(eng, state):
    return {
        r: sorted(eng.moves[i][j] for j in ids)
        for i, (r, ids) in enumerate(zip(eng.roles, eng.legal(state), strict=True))
    }


def test_hand_written_game_semantics(counter):
    eng = counter
    assert eng.roles == ["p", "q"]
    s0 = eng.initial()
    assert eng.state_fluents(s0) == ["count(0)", "lamp(off)"]
    assert _legal(eng, s0) == {"p": ["inc", "wait"], "q": ["noop"]}  # less(0,3) needs recursion
    assert eng.goals(s0) == {"p": 0, "q": 0} and not eng.terminal(s0)
    s1 = _step(eng, s0, "inc", "noop")
    assert eng.state_fluents(s1) == ["count(1)", "lamp(off)"]
    assert _legal(eng, s1) == {"p": ["inc", "wait"], "q": ["noop", "toggle(1)"]}  # or: succ(1,2)
    s2 = _step(eng, s1, "inc", "toggle(1)")
    assert eng.state_fluents(s2) == ["count(2)", "lamp(on)"]
    assert eng.goals(s2) == {"p": 100, "q": 2}  # distinct ?v 0
    s3 = _step(eng, s2, "inc", "noop")
    assert eng.state_fluents(s3) == ["count(3)", "lamp(on)"]
    assert _legal(eng, s3) == {"p": ["wait"], "q": ["noop", "toggle(3)"]}  # or: succ(2,3)
    assert eng.terminal(s3)
    s4 = _step(eng, s3, "wait", "toggle(3)")
    assert eng.state_fluents(s4) == ["count(3)", "lamp(off)"] and not eng.terminal(s4)


def test_evaluate_and_fallback(counter):
    eng = counter
    got = eng.evaluate(["count(2)", "lamp(on)"], {"p": "inc", "q": "noop"})
    assert got == {
        "legal": ["legal(p,inc)", "legal(p,wait)", "legal(q,noop)"],
        "goal": ["goal(p,100)", "goal(q,2)"],
        "terminal": [],
        "next": ["next(count(3))", "next(lamp(on))"],
    }
    before = eng.fallbacks
    odd = eng.evaluate(["count(7)", "lamp(on)", "lamp(off)"], {"p": "wait", "q": "noop"})  # count(7) unseen
    assert eng.fallbacks == before + 1
    assert odd["next"] == ["next(count(7))", "next(lamp(off))", "next(lamp(on))"]
    assert odd["goal"] == ["goal(p,100)", "goal(q,7)"]


def test_evaluate_batch_is_evaluate_per_example(counter):
    """In batches (of 3, so several), with moves or none, one role's move only, an unseen fluent
    and an unknown move (those two fall back to clingo alone): the same atoms as `evaluate`."""
    eng = counter
    examples = [
        (["count(2)", "lamp(on)"], {"p": "inc", "q": "noop"}),
        (["count(0)", "lamp(off)"], None),
        (["count(1)", "lamp(off)"], {"q": "toggle(1)"}),
        (["count(7)", "lamp(on)"], {"p": "wait", "q": "noop"}),
        (["count(3)", "lamp(on)"], {"p": "wait", "q": "toggle(3)"}),
        (["count(1)"], {"p": "jump", "q": "noop"}),
        ([], None),
    ]
    before = eng.fallbacks
    assert eng.evaluate_batch(examples, batch=3) == [eng.evaluate(f, d) for f, d in examples]
    assert eng.fallbacks == before + 4  # two fall back in the batch, two in the per-example run


def test_game_evaluate_solves_one_state_without_the_engine(counter):
    game = Game.from_text(COUNTER, "counter.kif")
    for fluents, does in [
        (["count(2)", "lamp(on)"], {"p": "inc", "q": "noop"}),
        (["count(1)", "lamp(off)"], {"p": "wait", "q": "toggle(1)"}),
        (["count(9)"], None),
    ]:
        assert game.evaluate(fluents, does) == counter.evaluate(fluents, does)
    assert not game._engines  # no grounding of the whole game happened


# Recursion through the state: reach/1 follows a cycle 1-2-3-4-1 (one ground SCC) unless walled.
MAZE = """
(role r)
(edge 1 2) (edge 2 3) (edge 3 4) (edge 4 1) (edge 2 5)
(init (at 1))
(<= (reach ?x) (true (at ?x)))
(<= (reach ?y) (reach ?x) (edge ?x ?y) (not (true (wall ?y))))
(<= (legal r (go ?y)) (reach ?y) (true (at ?x)) (distinct ?x ?y))
(legal r (build 2))
(legal r (build 5))
(<= (next (wall ?y)) (does r (build ?y)))
(<= (next (wall ?y)) (true (wall ?y)))
(<= (next (at ?y)) (does r (go ?y)))
(<= (next (at ?x)) (true (at ?x)) (does r (build ?y)))
(<= (goal r 100) (reach 5))
(<= (goal r 0) (not (reach 5)))
(<= terminal (true (at 5)))
"""


def test_recursion_over_the_state_matches_clingo_on_every_state():
    game = Game.from_text(MAZE, "maze.kif")
    eng, ref = game.engine(), game.clingo_engine()
    assert any(layer.recursive for phase in eng.circuit.phases for layer in phase)
    s0 = eng.initial()
    assert [eng.moves[0][m] for m in eng.legal(s0)[0]] == [
        "build(2)",
        "build(5)",
        "go(2)",
        "go(3)",
        "go(4)",
        "go(5)",
    ]
    walled = eng.next(s0, [eng.move_id("r", "build(2)")])
    assert eng.state_fluents(walled) == ["at(1)", "wall(2)"]
    assert [eng.moves[0][m] for m in eng.legal(walled)[0]] == ["build(2)", "build(5)"]
    assert eng.goals(walled) == {"r": 0} and eng.goals(s0) == {"r": 100}
    n = len(eng.fluents)
    states = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
    legal = eng.legal_batch(states)[0]
    terminal = eng.terminal_batch(states)
    for i, state in enumerate(states):
        assert [int(m) for m in np.flatnonzero(legal[i])] == list(ref.legal(state)[0])
        assert terminal[i] == ref.terminal(state)
        joint = [i % len(eng.moves[0])]
        assert np.array_equal(eng.next(state, joint), ref.next(state, joint))


def test_playouts_are_seeded_and_valid(counter):
    eng = counter
    a = eng.playouts(50, max_steps=10, seed=7, batch=16)
    b = eng.playouts(50, max_steps=10, seed=7, batch=16)
    c = eng.playouts(50, max_steps=10, seed=8, batch=16)
    assert all(
        np.array_equal(x.states, y.states) and np.array_equal(x.moves, y.moves)
        for x, y in zip(a, b, strict=True)
    )
    assert any(not np.array_equal(x.moves, y.moves) for x, y in zip(a, c, strict=True))
    for tr in a:
        assert len(tr.states) == len(tr.moves) + 1 <= 11
        assert np.array_equal(tr.states[0], eng.initial())
        for t, joint in enumerate(tr.moves):
            legal = eng.legal(tr.states[t])
            assert all(m in ids for m, ids in zip(joint, legal, strict=True))
            assert not eng.terminal(tr.states[t])
            assert np.array_equal(eng.next(tr.states[t], joint), tr.states[t + 1])
        assert tr.terminal == eng.terminal(tr.states[-1])
        assert tr.terminal or len(tr.moves) == 10


def test_grounding_bound_stops_unrestricted_recursion():
    game = Game.from_text(
        "(role a)\n(num 0)\n(<= (num (s ?x)) (num ?x))\n(<= (legal a go) (num ?y))\n", "inf.kif"
    )
    assert not game.grounding_bounded
    with pytest.raises(GDLError, match=r"inf.kif:0:0: grounding did not finish within 1 s"):
        game.engine(ground_seconds=1)


def test_flatten_matches_the_dataset_convention():
    cases = {
        "true(cell(1,2,x))": "true_cell(1, 2, x)",
        "legal(white,mark(1,2))": "legal_mark(white, 1, 2)",
        "legal(black,noop)": "legal(black, noop)",
        "terminal": "terminal()",
        "goal(white,100)": "goal(white, 100)",
        "does(white,mark(1,2))": "does_mark(white, 1, 2)",
        "next(control(black))": "next_control(black)",
        "true(p)": "true(p)",
    }
    for gdl, flat in cases.items():
        assert flatten(gdl) == flat
        assert unflatten(flat) == gdl
    with pytest.raises(ValueError, match="not the last argument"):
        flatten("next(at(pos(1,2),k))")


def test_zero_arity_compounds_flatten_into_the_predicate_as_iggp_did():
    """``(next (gameOver))`` is ``next(gameOver)`` to GDL; IGGP wrote ``next_gameOver()``."""
    nullary = frozenset({"gameOver", "noop"})
    cases = {
        "next(gameOver)": "next_gameOver()",
        "true(gameOver)": "true_gameOver()",
        "legal(black,noop)": "legal_noop(black)",
        "does(black,noop)": "does_noop(black)",
        "goal(black,gameOver)": "goal(black, gameOver)",  # not a flattened position
        "next(cell(1,gameOver))": "next_cell(1, gameOver)",  # an argument, not the fluent
        "true(p)": "true(p)",
    }
    for gdl, flat in cases.items():
        assert flatten(gdl, nullary) == flat
        assert unflatten(flat) == gdl
    assert unflatten("next_to(a, b)", relations={"next_to"}) == "next_to(a,b)"


def _random_states(eng, rng, n_random):
    states = [t.states[rng.integers(len(t.states))] for t in eng.playouts(12, max_steps=40, seed=3)]
    states += [rng.random(len(eng.fluents)) < 0.3 for _ in range(n_random)]  # arbitrary, unreachable
    return states


@pytest.mark.parametrize("name", ["tictactoe", "connect4", "tiny2", "sokoban_map1", "buttons_and_lights"])
def test_compiled_engine_agrees_with_clingo(iggp_dir, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GDLWarning)
        game = Game.from_file(iggp_dir / "games" / f"{name}.txt")
    eng, ref = game.engine(), game.clingo_engine()
    assert (eng.roles, eng.fluents, eng.moves) == (ref.roles, ref.fluents, ref.moves)
    rng = np.random.default_rng(0)
    for state in _random_states(eng, rng, 8):
        joint = [int(rng.integers(len(m))) for m in eng.moves]
        ours = eng.evaluate(
            eng.state_fluents(state),
            {r: eng.moves[i][j] for i, (r, j) in enumerate(zip(eng.roles, joint, strict=True))},
        )
        assert {a for atoms in ours.values() for a in atoms} == ref.derived(state, joint)
        assert eng.terminal(state) == ref.terminal(state)
        assert [list(x) for x in eng.legal(state)] == [list(x) for x in ref.legal(state)]
        assert np.array_equal(eng.next(state, joint), ref.next(state, joint))


def test_extra_fluents_widen_the_compiled_engine(counter):
    game = Game.from_text(COUNTER, "counter.kif")
    wide = game.engine(extra_fluents=["count(7)", "lamp(on)"])
    assert "count(7)" in wide.fluents and "count(7)" not in counter.fluents
    assert np.array_equal(wide.state_fluents(wide.initial()), counter.state_fluents(counter.initial()))
    got = wide.evaluate(["count(7)", "lamp(on)"], {"p": "wait", "q": "noop"})
    assert wide.fallbacks == 0
    assert got == game.evaluate(["count(7)", "lamp(on)"], {"p": "wait", "q": "noop"})
    assert game.engine() is not wide and game.engine() is game.engine()


def test_evaluate_outside_the_compiled_fluents_uses_clingo(iggp_dir):
    eng = Game.from_file(iggp_dir / "games" / "connect4.txt").engine()
    fluents = [*eng.state_fluents(eng.initial()), "cell(9,9,red)"]
    got = eng.evaluate(fluents, None)
    assert eng.fallbacks == 1
    expected = solve_once(eng.game.to_asp(), [f"true({f})" for f in fluents])
    assert {a for atoms in got.values() for a in atoms} == expected


def test_roles_are_inferred_from_legal_when_no_role_is_declared():
    text = "(player b)\n(player a)\n(<= (legal ?p go) (player ?p))\n(init (t 0))\n(<= (next (t 1)) (does a go))\n"
    game = Game.from_text(text, "noroles.kif")
    with pytest.warns(
        GDLWarning, match=r"no \(role \.\.\.\) facts; roles taken from the legal moves: \['a', 'b'\]"
    ):
        eng = game.engine()
    assert eng.roles == ["a", "b"]
    assert eng.state_fluents(eng.next(eng.initial(), [0, 0])) == ["t(1)"]
    with pytest.raises(GDLError, match="declares no role"):
        Game.from_text("(init (t 0))\n", "empty.kif").engine()
