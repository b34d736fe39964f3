"""Algorithm 1: the split, the extracted examples, reproducibility, and signature errors.

The games here are hand-written (a two-role counter game), never excerpts of the shared data.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.generate import GenerationError, generate_game, split_states
from tasks.iggp import Dataset, read_dat
from tasks.oracle import AGREE, check_game
from tasks.task import SPLITS, TARGETS

# Two players alternately bump a counter by one or two, starting at 0; reaching 4 or more ends it.
COUNTER_GDL = """
(role alice)
(role bob)
(init (count 0))
(init (turn alice))
(<= (legal ?p (bump ?k)) (true (turn ?p)) (true (count ?n)) (plus ?n ?k ?m))
(<= (legal ?p pass) (role ?p) (not (true (turn ?p))))
(<= (next (count ?m)) (does ?p (bump ?k)) (true (count ?n)) (plus ?n ?k ?m))
(<= (next (turn ?q)) (true (turn ?p)) (role ?q) (distinct ?p ?q))
(<= terminal (or (true (count 4)) (true (count 5))))
(<= (goal ?p 100) (role ?p) terminal (true (turn ?q)) (distinct ?p ?q))
(<= (goal ?p 0) (role ?p) terminal (true (turn ?p)))
(plus 0 1 1) (plus 0 2 2) (plus 1 1 2) (plus 1 2 3) (plus 2 1 3) (plus 2 2 4)
(plus 3 1 4) (plus 3 2 5)
"""

COUNTER_TYP = """true, next :: prop -> bool.
legal, does :: agent -> action -> bool.
goal :: agent -> int -> bool.
terminal :: bool.
role :: agent -> bool.
alice, bob :: agent.
bump :: int -> action.
pass :: action.
0, 1, 2, 3, 4, 5, 100 :: int.
count :: int -> prop.
turn :: agent -> prop.
plus :: int -> int -> int -> bool.
"""


@pytest.fixture
def counter(tmp_path: Path) -> tuple[Path, Path]:
    gdl, typ = tmp_path / "counter.txt", tmp_path / "counter.typ"
    gdl.write_text(COUNTER_GDL)
    typ.write_text(COUNTER_TYP)
    return gdl, typ


def test_split_is_4_1_1_disjoint_and_seeded() -> None:
    states = [frozenset({f"s{i}"}) for i in range(600)]
    a = split_states(states, seed=3)
    assert a == split_states(states, seed=3)
    assert a != split_states(states, seed=4)
    sizes = {s: sum(v == s for v in a.values()) for s in SPLITS}
    assert sizes == {"train": 400, "validate": 100, "test": 100}


def _examples(out: Path, game: str, target: str, split: str) -> list[tuple[list[str], list[str]]]:
    return read_dat(out / "data" / split / f"{game}_{target}_{split}.dat").examples


def test_generate_writes_the_published_layout_and_agrees_with_the_gdl(counter, tmp_path: Path) -> None:
    out = tmp_path / "out"
    summary = generate_game(*counter, out, episodes=60, steps=20, seed=0)
    assert (out / "games" / "counter.txt").read_text() == COUNTER_GDL
    assert (out / "types" / "counter.typ").read_text() == COUNTER_TYP
    # States: counts 0..5 with either player to move, reachable ones only (count 0 only with alice).
    assert 6 <= summary.distinct_states <= 11
    legal = read_dat(out / "data" / "test" / "counter_legal_test.dat")
    assert "legal_bump(alice, 2)" in legal.atoms and "legal(bob, pass)" in legal.atoms
    assert legal.statics == sorted(legal.statics) and "plus(0, 1, 1)" in legal.statics
    for target in TARGETS:
        assert summary.counts[target]["train"] > 0 and summary.counts[target]["test"] > 0
    nxt = _examples(out, "counter", "next", "train") + _examples(out, "counter", "next", "test")
    assert any(any(a.startswith("does_bump(") for a in b) for b, _ in nxt)
    # The generated data must satisfy the oracle check against its own GDL.
    result = check_game(Dataset(out), "counter")
    assert result.status == AGREE, result.summary()


def test_no_background_is_shared_between_splits(counter, tmp_path: Path) -> None:
    out = tmp_path / "out"
    generate_game(*counter, out, episodes=80, steps=20, seed=1)
    held_out_states: set[tuple[str, ...]] = set()
    train_states: set[tuple[str, ...]] = set()
    for target in TARGETS:
        seen: dict[tuple[str, ...], str] = {}
        for split in SPLITS:
            for b, _ in _examples(out, "counter", target, split):
                key = tuple(b)
                assert seen.setdefault(key, split) == split, f"{target}: {key} in {seen[key]} and {split}"
                state = tuple(a for a in b if a.startswith("true"))
                (train_states if split == "train" else held_out_states).add(state)
    # One partition of states for every target: a held-out state is never a training background.
    assert not (train_states & held_out_states)


def test_generation_is_reproducible_from_the_seed(counter, tmp_path: Path) -> None:
    def files(out: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((out / "data").rglob("*.dat"))}

    generate_game(*counter, tmp_path / "a", episodes=40, steps=20, seed=7)
    generate_game(*counter, tmp_path / "b", episodes=40, steps=20, seed=7)
    generate_game(*counter, tmp_path / "c", episodes=40, steps=20, seed=8)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    assert files(tmp_path / "a") != files(tmp_path / "c")


def test_a_signature_missing_a_symbol_is_an_error_naming_the_typ(counter, tmp_path: Path) -> None:
    gdl, typ = counter
    typ.write_text(COUNTER_TYP.replace("0, 1, 2, 3, 4, 5, 100 :: int.", "0, 1, 2, 3, 100 :: int."))
    with pytest.raises(GenerationError, match=r"counter\.typ.*cannot produce"):
        generate_game(gdl, typ, tmp_path / "out", episodes=20, steps=20, seed=0)


def test_missing_files_are_clear_errors(counter, tmp_path: Path) -> None:
    gdl, typ = counter
    with pytest.raises(FileNotFoundError, match="nope.typ"):
        generate_game(gdl, tmp_path / "nope.typ", tmp_path / "out", episodes=1, steps=1)


def test_cli_generates_every_bundled_game_and_reports_them(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from orchestrator.cli import app
    from tasks.iggp import Dataset

    result = CliRunner().invoke(
        app, ["games", "generate", "--all", "--local", "--episodes", "20", "--out", str(tmp_path), "--json"]
    )
    assert result.exit_code == 0, result.output
    summaries = json.loads(result.stdout)
    assert {s["status"] for s in summaries} == {"ok"} and len(summaries) >= 6
    assert set(Dataset(tmp_path).games()) == {s["game"] for s in summaries}


def test_a_target_with_too_many_candidate_atoms_is_excluded_and_never_written(counter, tmp_path, monkeypatch):
    import tasks.quality

    gdl, typ = counter
    monkeypatch.setattr(tasks.quality, "MAX_CANDIDATE_ATOMS", 12)  # goal has 14 candidates, legal 16
    game = generate_game(gdl, typ, tmp_path / "out", episodes=20, steps=20, seed=0)
    written = {p.name.split("_")[1] for p in (tmp_path / "out" / "data").rglob("*.dat")}
    assert written == {"next", "terminal"} and set(game.counts) == {"next", "terminal"}
    for target, size in (("goal", 14), ("legal", 16)):
        assert game.targets[target]["excluded"] == [
            f"too-many-atoms: {size:,} candidate atoms (> 12); not written"
        ]
    assert not game.targets["next"]["excluded"] or "too-many" not in game.targets["next"]["excluded"][0]
    # the oracle check knows the rule: the targets left out are not missing files
    from tasks.iggp import Dataset
    from tasks.oracle import AGREE, check_game

    result = check_game(Dataset(tmp_path / "out"), Dataset(tmp_path / "out").games()[0])
    assert result.status == AGREE, result.summary()
    assert sorted(n.split()[0] for n in result.notes if "not generated (too-many-atoms" in n) == [
        "goal",
        "legal",
    ]
    assert set(result.counts()) == {"next", "terminal"}


def test_the_signature_tests_membership_without_enumerating(counter) -> None:
    from tasks.signature import parse_typ

    signature = parse_typ(counter[1])
    for relation in ("true", "does", "legal", "goal", "next", "terminal"):
        ground = signature.ground(relation)
        assert signature.ground_size(relation) == len(ground)
        produces = signature.produces(relation)
        assert all(produces(a) for a in ground)
    assert not signature.produces("does")("does_bump(alice, 7)")  # 7 is no int of the signature
    assert not signature.produces("does")("does_bump(alice)")  # wrong arity
    assert not signature.produces("true")("true_score(1)")  # no such shape


# The counter game with a proposition written as a zero-arity compound, as some GGP authors do:
# ``(over)`` is the constant ``over`` in GDL; IGGP's generator wrote it ``true_over()``/``next_over()``.
# ``marked``, a fluent of the same type written as a plain constant, stays ``next(marked)``.
OVER_GDL = (
    COUNTER_GDL
    + """
(<= (next (over)) (true (count 3)))
(<= (next (over)) (true (over)))
(<= (next marked) (true (count 2)))
"""
)


@pytest.mark.parametrize("typed", [True, False], ids=["given .typ", "inferred .typ"])
def test_zero_arity_compounds_are_spelled_as_iggp(tmp_path: Path, typed: bool) -> None:
    gdl, typ = tmp_path / "over.txt", tmp_path / "over.typ"
    gdl.write_text(OVER_GDL)
    typ.write_text(COUNTER_TYP + "over, marked :: prop.\n")
    out = tmp_path / "out"
    generate_game(gdl, typ if typed else None, out, episodes=60, steps=20, seed=0)
    nxt = read_dat(out / "data" / "train" / "over_next_train.dat")
    assert "next_over()" in nxt.atoms and "next(marked)" in nxt.atoms
    assert "next(over)" not in nxt.atoms  # one spelling per fluent: never a second, always-false one
    terminal = read_dat(out / "data" / "train" / "over_terminal_train.dat")  # over holds at the end only
    backgrounds = {a for dat in (nxt, terminal) for b, _ in dat.examples for a in b}
    positives = {a for _, p in nxt.examples for a in p}
    assert "true_over()" in backgrounds and "next_over()" in positives
    assert not {"true(over)", "next(over)"} & (backgrounds | positives)
    result = check_game(Dataset(out), "over")  # atoms sections included
    assert result.status == AGREE, result.summary()


# Whose turn it is, set by rules that name the roles as constants: no variable links ``control``
# to a role position, yet it holds exactly the roles. ``winner`` holds one of them: its own type.
CONTROL_GDL = """
(role alice)
(role bob)
(init (control alice))
(init (count 0))
(<= (next (control bob)) (true (control alice)))
(<= (next (control alice)) (true (control bob)))
(<= (next (count ?m)) (does ?p bump) (true (count ?n)) (succ ?n ?m))
(<= (next (count ?n)) (does alice wait) (true (count ?n)))
(<= (next (count ?n)) (does bob wait) (true (count ?n)))
(<= (legal alice bump) (true (control alice)))
(<= (legal bob bump) (true (control bob)))
(<= (legal alice wait) (true (control bob)))
(<= (legal bob wait) (true (control alice)))
(<= terminal (true (count 3)))
(<= (goal alice 100) (true (control alice)))
(<= (goal alice 0) (true (control bob)))
(<= (goal bob 50) (role bob))
(<= (next (winner alice)) (true (count 2)))
(succ 0 1) (succ 1 2) (succ 2 3)
"""


def test_a_slot_of_exactly_the_roles_is_inferred_as_agent(tmp_path: Path) -> None:
    gdl = tmp_path / "control.txt"
    gdl.write_text(CONTROL_GDL)
    out = tmp_path / "out"
    generate_game(gdl, None, out, episodes=20, steps=10, seed=0)
    typ = (out / "types" / "control.typ").read_text()
    assert "control :: agent -> prop." in typ, typ  # as the published signatures write it
    assert typ.count("alice, bob ::") == 1 and "control_1" not in typ  # the roles declared once
    assert "count :: count_1 -> prop." in typ and "winner :: winner_1 -> prop." in typ
    assert check_game(Dataset(out), "control").status == AGREE


def test_a_game_whose_rules_never_read_a_move_still_gets_does_declared(tmp_path: Path) -> None:
    gdl = tmp_path / "clock.txt"  # the counter counts on, whatever is played
    gdl.write_text(
        CONTROL_GDL.replace("(does ?p bump) ", "")
        .replace("(<= (next (count ?n)) (does alice wait) (true (count ?n)))\n", "")
        .replace("(<= (next (count ?n)) (does bob wait) (true (count ?n)))\n", "")
    )
    assert "does" not in gdl.read_text()
    out = tmp_path / "out"
    generate_game(gdl, None, out, episodes=10, steps=10, seed=0)
    assert "does :: agent -> action -> bool." in (out / "types" / "clock.typ").read_text()
    assert check_game(Dataset(out), "clock").status == AGREE
