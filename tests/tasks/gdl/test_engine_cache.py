"""The on-disk cache of compiled engines (tasks.gdl.engine_cache): same engine, stale never read."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.gdl import Game, GDLWarning
from tasks.gdl import engine_cache as ec
from tests.tasks.gdl.test_gdl_engine import COUNTER


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache that keeps every engine (however fast its build)."""
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path))
    monkeypatch.delenv("ORCH_ENGINE_CACHE", raising=False)
    monkeypatch.setattr(ec, "CACHE_SECONDS", 0.0)
    return tmp_path / "engines"


def _entries(root):
    return sorted(root.glob("*.pickle")) if root.exists() else []


def _plays(engine):
    traces = engine.playouts(20, 8, seed=3)
    return [(t.states.tobytes(), t.moves.tobytes(), t.terminal) for t in traces]


def test_a_second_build_reads_the_stored_engine_and_plays_the_same(cache):
    first = Game.from_text(COUNTER, "counter.kif").engine()
    assert len(_entries(cache)) == 1
    game = Game.from_text(COUNTER, "counter.kif")
    again = game.engine()
    assert again.ground_seconds == first.ground_seconds  # read, not rebuilt (a build measures anew)
    assert again.game is game
    assert _plays(again) == _plays(first)
    state = again.state_of(["count(2)", "lamp(off)"])
    assert np.array_equal(again.legal_batch(state[None])[1], first.legal_batch(state[None])[1])
    assert again.evaluate(["count(7)"], None) == first.evaluate(["count(7)"], None)  # clingo fallback


def test_an_edited_rulesheet_or_other_extra_fluents_is_another_entry(cache):
    Game.from_text(COUNTER, "counter.kif").engine()
    edited = Game.from_text(COUNTER.replace("(succ 2 3)", "(succ 2 3) (succ 3 4)"), "counter.kif").engine()
    assert len(_entries(cache)) == 2
    assert "count(4)" in edited.fluents  # a real build of the new rules
    Game.from_text(COUNTER, "counter.kif").engine(extra_fluents=["count(9)"])
    assert len(_entries(cache)) == 3


def test_an_engine_that_grounded_slower_than_the_bound_is_not_used(cache):
    game = Game.from_text(COUNTER, "counter.kif")
    built = game.engine()
    (path,) = _entries(cache)
    assert ec._read(path, game, built.ground_seconds) is not None
    assert ec._read(path, game, built.ground_seconds / 2) is None  # the build decides GroundingLimit


def test_a_corrupt_entry_is_rebuilt_and_replaced(cache):
    first = Game.from_text(COUNTER, "counter.kif").engine()
    (path,) = _entries(cache)
    path.write_bytes(b"not a pickle")
    again = Game.from_text(COUNTER, "counter.kif").engine()
    assert _plays(again) == _plays(first)
    assert ec._read(path, again.game, 1e9) is not None


def test_an_unwritable_cache_or_off_only_costs_the_build(tmp_path, monkeypatch):
    monkeypatch.setattr(ec, "CACHE_SECONDS", 0.0)
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("ORCH_CACHE", str(blocked))
    assert Game.from_text(COUNTER, "counter.kif").engine().fluents
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("ORCH_ENGINE_CACHE", "off")
    assert Game.from_text(COUNTER, "counter.kif").engine().fluents
    assert not (tmp_path / "c").exists()


def test_fast_builds_are_not_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path))
    monkeypatch.setattr(ec, "CACHE_SECONDS", 1e9)
    Game.from_text(COUNTER, "counter.kif").engine()
    assert not (tmp_path / "engines").exists()


def test_a_read_engine_still_says_its_roles_were_inferred(cache):
    text = "(player b)\n(player a)\n(<= (legal ?p go) (player ?p))\n(init (t 0))\n(<= (next (t 1)) (does a go))\n"
    with pytest.warns(GDLWarning, match="roles taken from the legal moves"):
        Game.from_text(text, "noroles.kif").engine()
    with pytest.warns(GDLWarning, match="roles taken from the legal moves"):
        eng = Game.from_text(text, "noroles.kif").engine()
    assert len(_entries(cache)) == 1 and eng.roles == ["a", "b"]


def test_the_least_recently_used_entries_go_past_the_size_kept(cache, monkeypatch):
    Game.from_text(COUNTER, "counter.kif").engine()
    (old,) = _entries(cache)
    monkeypatch.setattr(ec, "CACHE_KEEP_BYTES", old.stat().st_size + 1)
    newer = Game.from_text(COUNTER, "counter.kif").engine(extra_fluents=["count(9)"])
    assert newer.fluents and len(_entries(cache)) == 1 and not old.exists()


def test_a_grounding_past_its_bound_is_remembered_for_that_bound_only(cache):
    import time

    from tasks.gdl.errors import GroundingLimit

    text = "(role a)\n(num 0)\n(<= (num (s ?x)) (num ?x))\n(<= (legal a go) (num ?y))\n"
    with pytest.raises(GroundingLimit, match="did not finish within 1 s"):
        Game.from_text(text, "inf.kif").engine(ground_seconds=1)
    assert len(_entries(cache)) == 1
    t0 = time.monotonic()
    with pytest.raises(
        GroundingLimit, match=r"inf.kif:0:0: grounding did not finish within 1 s.*an earlier attempt"
    ):
        Game.from_text(text, "inf.kif").engine(ground_seconds=1)
    assert time.monotonic() - t0 < 0.9  # not tried again
    t0 = time.monotonic()
    with pytest.raises(GroundingLimit, match="did not finish within 2 s") as e:
        Game.from_text(text, "inf.kif").engine(ground_seconds=2)  # a longer bound tries again
    assert time.monotonic() - t0 >= 2 and "earlier" not in str(e.value)
