"""The .typ parser, ground(Σ, p), the .dat reader/writer and the lazy Dataset, on hand-made and real data."""

from __future__ import annotations

import filecmp
import os
from pathlib import Path

import numpy as np
import pytest

from tasks.iggp import (
    Dataset,
    DatError,
    DatFile,
    UnknownGame,
    background_atoms,
    read_dat,
    task_from_dats,
    write_dat,
)
from tasks.signature import SignatureError, parse_typ
from tasks.task import SPLITS, TARGETS, parse_atom

TYP = """
true, next :: prop -> bool.
legal, input, does :: agent -> action -> bool.
goal :: agent -> score -> bool.
terminal :: bool.
white, black :: agent.
1, 2 :: pos.
pos :> num.
0, 7 :: num.
x, b :: mark.
0, 100 :: score.
cell :: pos -> pos -> mark -> prop.
control :: agent -> prop.
mark :: pos -> pos -> action.
noop :: action.
succ :: num -> num -> bool.
"""


def test_signature_ground_flattens_like_the_dataset():
    sig = parse_typ(TYP, name="mini.typ")
    legal = sig.ground("legal")
    assert "legal_mark(white, 1, 2)" in legal and "legal(black, noop)" in legal
    assert len(legal) == 2 * 2 * 2 + 2
    nxt = sig.ground("next")
    assert nxt[:2] == ["next_cell(1, 1, b)", "next_cell(2, 1, b)"]  # first argument varies fastest
    assert "next_control(black)" in nxt and len(nxt) == 2 * 2 * 2 + 2
    assert sig.ground("terminal") == ["terminal()"]
    assert sig.ground("goal") == ["goal(black, 0)", "goal(white, 0)", "goal(black, 100)", "goal(white, 100)"]


def test_signature_subtypes_and_arg_types():
    sig = parse_typ(TYP)
    assert sig.constants("num") == ["1", "2", "0", "7"]  # subtype's constants first
    assert sig.arg_types("true_cell") == ("pos", "pos", "mark")
    assert sig.arg_types("legal") == ("agent", "action")
    assert sig.arg_types("succ") == ("num", "num")
    with pytest.raises(KeyError, match="no flattened predicate"):
        sig.arg_types("nope")


def test_signature_errors_name_file_and_line():
    with pytest.raises(SignatureError, match=r"bad.typ:3: expected"):
        parse_typ("a :: b.\n\nthis is not a declaration.\n", name="bad.typ")
    with pytest.raises(SignatureError, match="cannot read"):
        parse_typ(Path("/nonexistent/x.typ"))


def _mini_dat() -> DatFile:
    return DatFile(
        atoms=["next_p(a)", "next_p(b)", "terminal()"],
        statics=["succ(0, 1)"],
        examples=[(["true_p(a)", "does(r, go)"], ["next_p(b)"]), (["true_p(b)"], [])],
    )


def test_dat_round_trip_and_task(tmp_path):
    path = tmp_path / "g_next_train.dat"
    write_dat(path, _mini_dat())
    assert read_dat(path) == _mini_dat()
    task = task_from_dats("g", "next", {"train": read_dat(path)})
    split = task.split("train")
    assert task.predicates == ["next_p", "terminal"]
    assert [task.background_atoms[i] for i in split.background_of(0)] == ["true_p(a)", "does(r, go)"]
    assert [task.target_atoms[i] for i in split.positives_of(0)] == ["next_p(b)"]
    assert split.positives_of(1).size == 0
    assert task.static_atoms() == ["succ(0, 1)"]
    sub = task.for_predicate("next_p")
    assert sub.target_atoms.names == ["next_p(a)", "next_p(b)"]
    assert sub.split("train").positives.toarray().tolist() == [[False, True], [False, False]]
    with pytest.raises(KeyError, match="no validate split"):
        task.split("validate")


def test_dat_errors_name_the_file(tmp_path):
    path = tmp_path / "g_next_train.dat"
    write_dat(path, _mini_dat())
    text = path.read_text()
    (tmp_path / "cut.dat").write_text(text[: text.rindex("positives:")])
    with pytest.raises(DatError, match=r"cut.dat.*truncated"):
        read_dat(tmp_path / "cut.dat")
    (tmp_path / "bad.dat").write_text(text.replace("statics:", "statix:"))
    with pytest.raises(DatError, match=r"bad.dat:\d+: expected section 'statics:'"):
        read_dat(tmp_path / "bad.dat")
    with pytest.raises(DatError, match="file not found"):
        read_dat(tmp_path / "absent.dat")
    dat = _mini_dat()
    dat.examples[0][1].append("next_p(zz)")
    with pytest.raises(DatError, match=r"example 0: positive next_p\(zz\) is not listed"):
        task_from_dats("g", "next", {"train": dat})


def test_published_dataset_loads_lazily(iggp_dir):
    ds = Dataset(iggp_dir)
    assert len(ds.games()) == 40
    assert ds.targets("tictactoe") == list(TARGETS)
    assert ds.predicates("tictactoe", "legal") == ["legal_mark", "legal"]
    task = ds.load_task("tictactoe", "next")
    assert set(task.splits) == set(SPLITS)
    assert task.signature is not None and task.signature.arg_types("true_cell") == ("pos", "pos", "mark")
    for split in task.splits.values():
        assert split.background.shape == (split.n_examples, len(task.background_atoms))
        assert split.positives.shape == (split.n_examples, len(task.target_atoms))
    for atom in task.target_atoms.names:
        parse_atom(atom)
    with pytest.raises(UnknownGame, match="did you mean tictactoe"):
        ds.load_task("tictactoo", "next")


def test_published_missing_file_is_reported(iggp_dir):
    ds = Dataset(iggp_dir)
    task = ds.load_task("ttcc4", "legal")
    assert "train" not in task.splits and "ttcc4_legal_train.dat" in task.missing["train"]
    with pytest.raises(KeyError, match="ttcc4_legal_train.dat: file not found"):
        task.split("train")


@pytest.mark.parametrize("name", ["tictactoe_next_train.dat", "lightboard_goal_train.dat"])
def test_published_files_round_trip(iggp_dir, tmp_path, name):
    src = iggp_dir / "data" / "train" / name
    write_dat(tmp_path / name, read_dat(src))
    if src.read_bytes().endswith(b"\n"):
        assert filecmp.cmp(src, tmp_path / name, shallow=False)
    assert read_dat(tmp_path / name) == read_dat(src)


@pytest.mark.parametrize("name", ["tictactoe_next_train.dat", "lightboard_goal_train.dat"])
def test_background_atoms_are_those_read_dat_reads_in_backgrounds(iggp_dir, tmp_path, name):
    src = iggp_dir / "data" / "train" / name
    dat = read_dat(src)
    assert background_atoms(src) == {a for b, _ in dat.examples for a in b}
    assert not background_atoms(src) & (set(dat.atoms) | set(dat.statics)) - {
        a for b, _ in dat.examples for a in b
    }
    broken = tmp_path / name  # lenient: a truncated file gives what it has, read_dat names the error
    broken.write_text(src.read_text()[: len(src.read_text()) // 2])
    assert background_atoms(broken) <= background_atoms(src)
    assert background_atoms(tmp_path / "missing.dat") == set()


def test_signature_regenerates_published_atoms(iggp_dir):
    """ground(Σ, target) equals the published atoms: section wherever the types match the data."""
    ds = Dataset(iggp_dir)
    for game in ("tictactoe", "scissors_paper_stone", "farming", "buttons_and_lights"):
        sig = ds.signature(game)
        for target in ds.targets(game):
            atoms = ds.read(game, target, "test").atoms
            assert set(sig.ground(target)) == set(atoms), (game, target)


def test_fingerprint_changes_with_content(tmp_path):
    root = tmp_path / "ds"
    for split in SPLITS:
        (root / "data" / split).mkdir(parents=True)
        write_dat(root / "data" / split / f"g_next_{split}.dat", _mini_dat())
    a = Dataset(root).fingerprint("g")
    assert Dataset(root).fingerprint("g") == a
    dat = _mini_dat()
    dat.examples.pop()
    write_dat(root / "data" / "test" / "g_next_test.dat", dat)
    assert Dataset(root).fingerprint("g") != a
    assert np.array_equal(Dataset(root).load_task("g", "next").split("test").candidates, [0, 1, 2])
    assert os.listdir(root / "data" / "test") == ["g_next_test.dat"]  # no temp file left behind


def test_a_sampled_split_keeps_n_whole_examples_in_file_order_the_rest_shared():
    from tests.learners.ilp.test_ilasp import lights_task

    task = lights_task("legal", n_train=50)
    sample = task.sampled("train", 20, seed=3)
    train, kept = task.split("train"), sample.split("train")
    assert kept.n_examples == 20 and sample.split("validate") is task.split("validate")
    i = 0  # the kept examples are a subsequence of train's: each found after the one before
    for k in range(20):
        while (train.background[i] != kept.background[k]).nnz or (
            train.positives[i] != kept.positives[k]
        ).nnz:
            i += 1
        i += 1
    assert (task.sampled("train", 20, seed=3).split("train").background != kept.background).nnz == 0
    assert task.sampled("train", 10**6, seed=3).split("train").n_examples == 50
    assert task.sampled("train", 0, seed=3).split("train").n_examples == 1
