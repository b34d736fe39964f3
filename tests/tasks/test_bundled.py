"""The bundled games: they parse, cover the features they claim, generate cleanly, and cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks import bundled
from tasks.gdl import Game
from tasks.gdl.ast import Not, Or
from tasks.gdl.checks import dependency_graph, strongly_connected
from tasks.generate import generate_game
from tasks.iggp import Dataset
from tasks.oracle import AGREE, check_game
from tasks.task import TARGETS


def _literals(game: Game):
    for rule in game.rules:
        for lit in rule.body:
            yield lit
            if isinstance(lit, Or):
                yield from lit.lits


def _recursive(game: Game) -> bool:
    g = dependency_graph(game.rules)
    scc = strongly_connected(g)
    return any(scc[h] == scc[b] for h, edges in g.items() for b, _, _ in edges)


def test_there_are_at_least_six_games_each_with_a_signature() -> None:
    names = bundled.games()
    assert len(names) >= 6
    for n in names:
        assert bundled.types_file(n).exists()


def test_together_the_games_cover_the_required_features() -> None:
    games = {n: Game.from_file(bundled.game_file(n)) for n in bundled.games()}
    simultaneous, one_player, turn_taking, succ, uses_or, uses_not, recursive = (set() for _ in range(7))
    for name, game in games.items():
        eng = game.engine()
        state = eng.initial()
        choices = [len(m) for m in eng.legal(state)]
        if len(eng.roles) == 1:
            one_player.add(name)
        elif all(c > 1 for c in choices):
            simultaneous.add(name)
        elif sorted(choices)[0] == 1:
            turn_taking.add(name)
        if "succ" in game.static_relations:
            succ.add(name)
        lits = list(_literals(game))
        if any(isinstance(x, Or) for x in lits):
            uses_or.add(name)
        if any(isinstance(x, Not) for x in lits):
            uses_not.add(name)
        if _recursive(game):
            recursive.add(name)
    for feature, which in dict(
        simultaneous=simultaneous,
        one_player=one_player,
        turn_taking=turn_taking,
        succ=succ,
        uses_or=uses_or,
        uses_not=uses_not,
        recursive=recursive,
    ).items():
        assert which, f"no bundled game covers {feature}"
    assert {"pennies", "tag"} <= simultaneous and {"hanoi", "lights"} <= one_player
    assert {"race", "bridge"} <= turn_taking and {"hanoi", "bridge", "pennies"} <= recursive


@pytest.mark.parametrize("name", bundled.games())
def test_each_game_generates_data_that_its_gdl_reproduces(name: str, tmp_path: Path) -> None:
    summary = generate_game(
        bundled.game_file(name), bundled.types_file(name), tmp_path, episodes=30, steps=100, seed=0
    )
    for target in TARGETS:
        assert summary.counts[target]["train"] > 0, f"{name}_{target}: no training examples"
    result = check_game(Dataset(tmp_path), name)
    assert result.status == AGREE, result.summary()


def test_unknown_bundled_game_suggests_close_names() -> None:
    with pytest.raises(KeyError, match="did you mean hanoi"):
        bundled.game_file("hanio")


def test_dataset_is_generated_once_into_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORCH_CACHE", str(tmp_path))
    ds = bundled.dataset(episodes=10, steps=30, seed=0)
    assert Path(ds.root).parent == tmp_path / "bundled"
    assert ds.games() == bundled.games()
    task = ds.load_task("race", "legal")
    assert task.splits["train"].n_examples > 0
    stamp = (Path(ds.root) / "data" / "train" / "race_legal_train.dat").stat().st_mtime_ns
    again = bundled.dataset(episodes=10, steps=30, seed=0)
    assert again.root == ds.root
    assert (Path(ds.root) / "data" / "train" / "race_legal_train.dat").stat().st_mtime_ns == stamp
    assert not [p for p in (tmp_path / "bundled").iterdir() if p.name.startswith(".tmp")]
    other = bundled.dataset(episodes=11, steps=30, seed=0)
    assert other.root != ds.root
