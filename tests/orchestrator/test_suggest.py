"""Names a person types: case-insensitive, with close matches, in their parametrised forms, and
errors that say what to do (never an internal cache path); help that shows flags as flags."""

from __future__ import annotations

import pytest
from sweep_helpers import write_tiny_dataset
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.scheduling.sweep import SweepError, build_jobs
from orchestrator.suggest import UnknownName, pattern_form, resolve_game, resolve_learner
from tasks.iggp import Dataset

runner = CliRunner()


@pytest.mark.parametrize(
    ("pattern", "form"),
    [
        (r"knn(?P<k>\d+)", "knnK"),
        (r"ilasp(?:_b(?P<max_body>\d+))?", "ilasp[_bN]"),
        (r"aspal(?P<max_body>\d)?(?P<soft>_soft)?", "aspal[N][_soft]"),
        (
            r"gnn-(?P<model>(?:param|gcn)-(?:rgcn|egat)(?:-bi)?)(?:-d(?P<dim>\d+))?",
            "gnn-{param,gcn}-{rgcn,egat}[-bi][-dN]",
        ),
        (r"true", "true"),
        (r"odd[a-z]+", None),  # outside the subset: the caller shows the example name instead
    ],
)
def test_pattern_forms(pattern, form):
    assert pattern_form(pattern) == form


def test_learner_names_are_case_insensitive_and_unknown_ones_get_suggestions_and_forms():
    assert resolve_learner("KNN5") == "knn5" and resolve_learner("Ilasp_B3") == "ilasp_b3"
    with pytest.raises(UnknownName) as e:
        resolve_learner("ilsap")
    message = str(e.value)
    assert "did you mean ilasp?" in message and "\n" not in message
    for form in ("knnK", "ilasp[_bN]", "aspal[N][_soft]", "gnn-{param,gcn,gat}-{rgcn,egat}"):
        assert form in message


def test_game_names_are_case_insensitive_and_suggest_close_matches():
    known = ["pennies", "race", "tag"]
    assert resolve_game("PENNIES", known, "x") == "pennies"
    with pytest.raises(UnknownName, match=r"no game 'penies' in the bundled games; did you mean pennies\?"):
        resolve_game("penies", known, "the bundled games")
    with pytest.raises(UnknownName, match="games: pennies, race, tag"):
        resolve_game("chess", known, "the bundled games")


def test_a_sweep_of_upper_case_names_has_the_ids_of_the_canonical_names(tmp_path):
    ds = write_tiny_dataset(tmp_path / "ds")
    upper = build_jobs(Dataset(ds), str(ds), ["ALPHA"], ["NOOP", "noop"], budget_s=5)
    lower = build_jobs(Dataset(ds), str(ds), ["alpha"], ["noop"], budget_s=5)
    assert [j.job_id for j in upper] == [j.job_id for j in lower]
    assert {j.learner for j in upper} == {"noop"} and {j.game for j in upper} == {"alpha"}
    with pytest.raises(SweepError, match="the bundled games; did you mean alpha"):
        build_jobs(Dataset(ds), "bundled", ["alpah"], ["noop"], budget_s=5)


def test_unknown_bundled_game_names_no_cache_path():
    result = runner.invoke(
        app, ["run", "--games", "pennys", "--learners", "knn5", "--store", "/nonexistent/s"]
    )
    assert result.exit_code == 2
    assert "no game 'pennys' in the bundled games; did you mean pennies?" in result.output
    assert ".cache" not in result.output and "bundled/" not in result.output
    learn = runner.invoke(app, ["learn", "--game", "pennys", "--target", "legal"])
    assert learn.exit_code == 2 and "did you mean pennies?" in learn.output and ".cache" not in learn.output


def test_the_packed_iggp_folder_says_to_unpack_it_first(tmp_path):
    packed = tmp_path / "iggp"
    packed.mkdir()
    (packed / "iggp40.tar.xz").write_bytes(b"")
    (packed / "unpack").write_text("#!/bin/sh\n")
    for args in (
        [
            "run",
            "--all-games",
            "--learners",
            "knn5",
            "--dataset",
            str(packed),
            "--store",
            str(tmp_path / "s"),
        ],
        ["learn", "--dataset", str(packed), "--game", "minimal_decay", "--target", "next"],
        ["games", "list", "--dataset", str(packed)],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code != 0, args
        assert f"run `{packed / 'unpack'} DIR` first, then use --dataset DIR" in " ".join(
            result.output.split()
        )


@pytest.mark.parametrize("command", [["--help"], ["run", "--help"], ["games", "check", "--help"]])
def test_help_shows_flags_as_flags(command):
    result = runner.invoke(app, command, env={"COLUMNS": "200"}, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output and "--help" in result.output
    if command == ["run", "--help"]:
        assert "--all-games" in result.output
        assert "<str>" in result.output  # options that take a value still say so


@pytest.mark.parametrize(
    ("command", "usage"),
    [(["bench", "stale"], "FILE..."), (["games", "probe"], "PATH..."), (["compare"], "A [B]")],
)
def test_help_shows_arguments_as_people_write_them(command, usage):
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert f"[OPTIONS] {usage}" in result.output
    assert "{" not in result.output.splitlines()[1] and "<list[" not in result.output


def test_targets_are_checked_case_insensitively_with_suggestions(tmp_path):
    ds = write_tiny_dataset(tmp_path / "ds")
    jobs = build_jobs(Dataset(ds), str(ds), ["alpha"], ["noop"], targets=["GOAL"], budget_s=5)
    assert {j.target for j in jobs} == {"goal"}
    with pytest.raises(
        SweepError,
        match=r"no target 'nxt' in the chosen games; did you mean next\? their targets: goal, next",
    ):
        build_jobs(Dataset(ds), str(ds), ["alpha"], ["noop"], targets=["nxt"], budget_s=5)


def test_games_commands_name_the_bundled_games_not_their_cache():
    listed = runner.invoke(app, ["games", "list"], terminal_width=200)
    assert listed.exit_code == 0 and "bundled games" in listed.output and ".cache" not in listed.output
    typo = runner.invoke(app, ["games", "check", "--games", "RAC"])
    assert typo.exit_code == 2 and "no game 'RAC' in the bundled games; did you mean race?" in typo.output
