"""Sweeps: deterministic job ids, name validation before Ray starts, option parsing."""

from __future__ import annotations

import dataclasses

import pytest
from sweep_helpers import write_tiny_dataset

from orchestrator.scheduling.sweep import (
    SweepError,
    build_jobs,
    job_id,
    parse_bytes,
    parse_duration,
    split_names,
    sweep_name,
)
from tasks.iggp import Dataset, read_dat, write_dat

BASE = dict(
    game="alpha", target="next", predicate="next_p", learner="knn5", params='{"k": "5"}',
    dataset_fingerprint="f" * 32, seed=0, repeat=0, budget_s=1800.0,
)  # fmt: skip


def test_job_id_is_deterministic_and_short():
    assert job_id(**BASE) == job_id(**dict(BASE))
    assert len(job_id(**BASE)) == 16


@pytest.mark.parametrize(
    "field, value",
    [
        ("game", "beta"), ("target", "goal"), ("predicate", "next_q"), ("learner", "knn1"),
        ("params", '{"k": "1"}'), ("dataset_fingerprint", "e" * 32), ("seed", 1), ("repeat", 1),
        ("budget_s", 60.0),
    ],
)  # fmt: skip
def test_job_id_changes_with_each_component(field, value):
    assert job_id(**{**BASE, field: value}) != job_id(**BASE)


@pytest.fixture
def tiny(tmp_path):
    return write_tiny_dataset(tmp_path / "ds")


def test_build_jobs_is_games_x_predicates_x_learners_x_repeats(tiny):
    source = Dataset(tiny)
    jobs = build_jobs(source, str(tiny), ["alpha", "beta"], ["noop", "sleep1"], repeats=2, budget_s=5)
    # per game: next_p, next_q, goal = 3 predicates
    assert len(jobs) == 2 * 3 * 2 * 2
    assert len({j.job_id for j in jobs}) == len(jobs)
    again = build_jobs(Dataset(tiny), str(tiny), ["alpha", "beta"], ["noop", "sleep1"], repeats=2, budget_s=5)
    assert [j.job_id for j in again] == [j.job_id for j in jobs]
    assert sweep_name(again) == sweep_name(jobs)
    assert {j.params for j in jobs if j.learner == "sleep1"} == {'{"seconds": "1"}'}


def test_targets_narrow_the_sweep(tiny):
    jobs = build_jobs(Dataset(tiny), str(tiny), None, ["noop"], targets=["goal"])
    assert {(j.game, j.predicate) for j in jobs} == {(g, "goal") for g in ("alpha", "beta", "gamma")}


def test_dataset_content_is_in_the_id_but_not_its_path(tiny, tmp_path):
    before = build_jobs(Dataset(tiny), str(tiny), ["alpha"], ["noop"])
    moved = tmp_path / "elsewhere"
    tiny.rename(moved)
    assert [j.job_id for j in build_jobs(Dataset(moved), str(moved), ["alpha"], ["noop"])] == [
        j.job_id for j in before
    ]
    path = moved / "data" / "test" / "alpha_goal_test.dat"
    dat = read_dat(path)
    write_dat(path, dataclasses.replace(dat, examples=dat.examples[:-1]))
    changed = build_jobs(Dataset(moved), str(moved), ["alpha"], ["noop"])
    assert not {j.job_id for j in changed} & {j.job_id for j in before}


def test_unknown_learner_lists_the_known_ones(tiny):
    with pytest.raises(SweepError, match="unknown learner 'knnx'.*knn5"):
        build_jobs(Dataset(tiny), str(tiny), ["alpha"], ["noop", "knnx"])


def test_unknown_game_suggests_close_matches(tiny):
    with pytest.raises(SweepError, match="no game 'alpah'.*did you mean alpha"):
        build_jobs(Dataset(tiny), str(tiny), ["alpah"], ["noop"])


def test_durations_sizes_and_lists():
    assert parse_duration("30m") == 1800 and parse_duration("90s") == 90 and parse_duration("2") == 2
    assert parse_duration("1.5h") == 5400 and parse_duration("250ms") == 0.25
    assert parse_bytes("4GiB") == 4 << 30 and parse_bytes("512MiB") == 512 << 20
    assert (
        parse_bytes("2G") == 2 << 30 and parse_bytes("500MB") == 500_000_000 and parse_bytes("1024") == 1024
    )
    for bad in ("soon", "-1m", "3 weeks"):
        with pytest.raises(SweepError):
            parse_duration(bad)
    with pytest.raises(SweepError):
        parse_bytes("lots")
    assert split_names("a, b,,a ,c") == ["a", "b", "c"]
