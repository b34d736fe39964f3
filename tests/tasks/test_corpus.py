"""A GGP corpus in one command (`orch games generate DIR --out OUT --all`): layout, manifest, quality
rules, and byte-identical output for the same seed (tasks/corpus.py, tasks/quality.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from tasks.corpus import MANIFEST, MANIFEST_PARQUET, RECORDS, RUN
from tasks.iggp import DatFile
from tasks.quality import MIN_DISTINCT_STATES, target_verdict

SMALL = ("buttons", "nim1")
"""Two small rulesheets of ../shared/ggp/rulesheets (one excluded by rules, one mostly kept)."""


def _corpus(rulesheets: Path, tmp: Path, out: str, *extra: str) -> Path:
    folder = tmp / "sheets"
    folder.mkdir(exist_ok=True)
    for g in SMALL:
        link = folder / f"{g}.kif"
        if not link.exists():
            link.symlink_to(rulesheets / f"{g}.kif")
    result = CliRunner().invoke(
        app,
        ["games", "generate", str(folder), "--out", str(tmp / out), "--all", "--episodes", "40", "--steps", "20",
         "--seed", "3", *extra],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return tmp / out


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_gives_byte_identical_corpus_and_a_manifest_row_per_game(rulesheets, tmp_path):
    first = _corpus(rulesheets, tmp_path, "a", "--local")
    second = _corpus(rulesheets, tmp_path, "b", "--local")
    a, b = _files(first), _files(second)
    timed = {MANIFEST_PARQUET, RUN}  # generation time and commit live only there
    assert set(a) == set(b)
    assert {k for k in a if a[k] != b[k] and not k.startswith(RECORDS)} <= timed  # records: for resuming
    assert any(k.startswith("data/") for k in a) and "types/buttons.typ" in a and "games/nim1.txt" in a
    rows = json.loads(a[MANIFEST])["games"]
    assert [r["game"] for r in rows] == sorted(SMALL)
    for r in rows:
        assert r["status"] == "ok" and r["seed"] == 3 and r["episodes"] == 40 and r["steps"] == 20
        assert len(r["sha256"]) == 64 and r["rulesheet"] == f"{r['game']}.kif"
        assert r["engine"] == "compiled" and r["roles"] and r["fluents"] > 0
        assert set(r["targets"]) == {"goal", "legal", "next", "terminal"}
        for t in r["targets"].values():
            assert t["kept"] == (not t["excluded"])
            assert set(t["splits"]) == {"train", "validate", "test"}
    table = pq.read_table(first / MANIFEST_PARQUET).to_pylist()
    assert [r["game"] for r in table] == sorted(SMALL) and all(r["seconds"] is not None for r in table)
    assert all("commit" in r for r in table)
    assert "commit" in json.loads(a[RUN])


def test_different_seed_changes_the_data(rulesheets, tmp_path):
    first = _corpus(rulesheets, tmp_path, "a", "--local")
    result = CliRunner().invoke(
        app,
        ["games", "generate", str(tmp_path / "sheets"), "--out", str(tmp_path / "c"), "--all", "--local",
         "--episodes", "40", "--steps", "20", "--seed", "4"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert _files(first) != _files(tmp_path / "c")


def test_a_broken_rulesheet_fails_alone_with_its_reason(rulesheets, tmp_path):
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "nim1.kif").symlink_to(rulesheets / "nim1.kif")
    (folder / "broken.kif").write_text("(role a)\n(<= (legal a x)\n")
    result = CliRunner().invoke(
        app, ["games", "generate", str(folder), "--out", str(tmp_path / "o"), "--all", "--episodes", "5",
              "--steps", "5", "--num-cpus", "2", "--time-limit", "60"],
    )  # fmt: skip
    assert result.exit_code == 1
    rows = {r["game"]: r for r in json.loads((tmp_path / "o" / MANIFEST).read_text())["games"]}
    assert rows["nim1"]["status"] == "ok"
    assert rows["broken"]["status"] == "error" and "broken.kif" in rows["broken"]["error"]
    # each game recorded its end on the Ray worker; a rerun resumes from the records
    assert {p.name for p in (tmp_path / "o" / RECORDS).iterdir()} == {"nim1.json", "broken.json"}
    again = CliRunner().invoke(
        app, ["games", "generate", str(folder), "--out", str(tmp_path / "o"), "--all", "--episodes", "5",
              "--steps", "5", "--num-cpus", "2", "--time-limit", "60"],
    )  # fmt: skip
    assert again.exit_code == 1 and "reusing 2 of 2 games" in again.output
    assert json.loads((tmp_path / "o" / MANIFEST).read_text())["games"] == sorted(
        rows.values(), key=lambda r: r["game"]
    )


def test_a_rerun_resumes_generating_only_what_is_missing(rulesheets, tmp_path):
    first = _files(_corpus(rulesheets, tmp_path, "a", "--local"))
    out = tmp_path / "a"
    for dat in (out / "data").rglob("nim1_*.dat"):  # one game's output lost, as by a crash mid-write
        dat.unlink()
    (out / RECORDS / "buttons.json").write_text("{")  # a record cut short is not trusted either
    folder = tmp_path / "sheets"
    args = ["games", "generate", str(folder), "--out", str(out), "--all", "--local", "--episodes", "40",
            "--steps", "20", "--seed", "3"]  # fmt: skip
    (folder / "extra.kif").symlink_to(rulesheets / "nim1.kif")  # a game added since: generated too
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0 and "reusing" not in result.output, result.output
    second = _files(out)
    assert {k for k in first if first[k] != second.get(k)} <= {MANIFEST, MANIFEST_PARQUET, RUN} | {
        k for k in first if k.startswith(RECORDS)
    }
    assert any(k.startswith("data/") and "extra_" in k for k in second)
    resumed = CliRunner().invoke(app, args)
    assert resumed.exit_code == 0 and "reusing 3 of 3 games" in resumed.output, resumed.output
    assert _files(out)[MANIFEST] == second[MANIFEST]
    fresh = CliRunner().invoke(app, [*args, "--fresh"])
    assert fresh.exit_code == 0 and "reusing" not in fresh.output
    other_seed = CliRunner().invoke(app, [*args[:-1], "4"])  # other settings: nothing reused
    assert other_seed.exit_code == 0 and "reusing" not in other_seed.output


def _dat(examples: list[tuple[list[str], list[str]]], atoms: tuple[str, ...] = ("p(a)", "p(b)")) -> DatFile:
    return DatFile(list(atoms), [], examples)


@pytest.mark.parametrize(
    ("splits", "states", "ends", "rules"),
    [
        ({s: _dat([([f"{s}1"], ["p(a)"])]) for s in ("train", "validate", "test")}, MIN_DISTINCT_STATES, 1, []),
        ({s: _dat([([f"{s}1"], [])]) for s in ("train", "validate", "test")}, MIN_DISTINCT_STATES, 1, ["no-positive"]),
        ({s: _dat([([f"{s}1"], ["p(a)", "p(b)"])]) for s in ("train", "validate", "test")}, 99, 1, ["no-negative"]),
        ({s: _dat([([f"{s}1"], ["p(a)"])]) for s in ("train", "validate", "test")}, MIN_DISTINCT_STATES - 1, 1,
         ["few-states"]),
        ({s: _dat([(["x"], ["p(a)"])]) for s in ("train", "validate", "test")}, 99, 1, ["test-seen-in-train"]),
        ({s: _dat([([f"{s}1"], ["p(a)"])]) for s in ("train", "validate", "test")}, 99, 0, ["never-ends"]),
        ({"train": _dat([(["a"], ["p(a)"])]), "test": _dat([(["b"], ["p(b)"])])}, 99, 1,
         ["no-positive", "no-negative"]),  # validate has no example at all
    ],
)  # fmt: skip
def test_quality_rules(splits, states, ends, rules):
    stats, reasons = target_verdict(splits, states, ends)
    assert [r.partition(":")[0] for r in reasons] == rules
    assert stats["train"].examples == len(splits["train"].examples)


def test_a_slot_shared_by_roles_and_other_constants_gets_a_wider_type(rulesheets, tmp_path):
    # sum15: (true (num ?n ?p)) with (does ?p (take ?n)) puts roles and `available` in one slot;
    # before, the inferred signature kept only the roles there and generation failed
    from tasks.generate import generate_game
    from tasks.signature import parse_typ

    generate_game(rulesheets / "sum15.kif", None, tmp_path, episodes=10, steps=10, seed=0)
    sig = parse_typ(tmp_path / "types" / "sum15.typ")
    assert sig.subtypes == {"num_2": ["agent"]}
    assert "true_num(1, available)" in sig.ground("true") and "true_num(1, white)" in sig.ground("true")
    assert sig.constants("agent") == ["black", "white"]


def test_bench_ggp_runs_the_kept_targets_only_and_keeps_the_manifest(rulesheets, tmp_path):
    """`orch bench ggp` runs learners on every target the quality rules keep, says why each other
    is left out, and writes results files plus the manifest the datasheet tables read."""
    corpus = _corpus(rulesheets, tmp_path, "corpus", "--local")
    games = json.loads((corpus / MANIFEST).read_text())["games"]
    kept = {(g["game"], t) for g in games for t, info in g["targets"].items() if info["kept"]}
    assert kept, "the fixture corpus must keep some target"
    out = tmp_path / "results"
    result = CliRunner().invoke(
        app,
        ["bench", "ggp", "--corpus", str(corpus), "--learners", "true", "--budget", "5s", "--store",
         str(tmp_path / "store"), "--out", str(out), "--num-cpus", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "excluded (" in result.output  # buttons' targets break the rules (SMALL's docstring)
    (csv,) = out.glob("true_*.csv")
    lines = csv.read_text().splitlines()
    header = lines[0].split(",")
    ran = {
        (row[header.index("game")], row[header.index("target")]) for row in (x.split(",") for x in lines[1:])
    }
    assert ran == kept
    assert (out / MANIFEST).read_bytes() == (corpus / MANIFEST).read_bytes()


def test_the_fixed_sample_depends_on_the_names_alone():
    """`orch bench ggp --sample N`: the same games whatever else the corpus holds, or its order."""
    from orchestrator.cli.bench import fixed_sample

    names = [f"game{i}" for i in range(40)]
    sample = fixed_sample(names, 30)
    assert len(sample) == 30 and sample == sorted(sample) and set(sample) <= set(names)
    assert fixed_sample(list(reversed(names)), 30) == sample
    grown = fixed_sample([*names, *(f"other{i}" for i in range(10))], 30)  # games added: none of
    assert set(grown) & set(names) <= set(sample)  # the old games enters the sample in their place
    assert set(fixed_sample(names, 10)) <= set(sample)


def test_a_game_over_its_memory_cap_fails_alone_as_oom(rulesheets, tmp_path):
    """A game whose playouts outgrow --memory-per-job is stopped by its own watchdog and recorded as
    ``oom`` with its reason, instead of taking the node (where Ray's own OOM killer would kill and
    retry the games beside it without end)."""
    folder = tmp_path / "sheets"
    folder.mkdir()
    (folder / "nim1.kif").symlink_to(rulesheets / "nim1.kif")
    result = CliRunner().invoke(
        app,
        ["games", "generate", str(folder), "--out", str(tmp_path / "out"), "--all", "--episodes", "40",
         "--steps", "20", "--num-cpus", "1", "--memory-per-job", "20MiB"],
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    (game,) = json.loads((tmp_path / "out" / MANIFEST).read_text())["games"]
    assert game["status"] == "oom" and game["error"], game


def test_a_per_state_game_is_byte_identical_across_processes(rulesheets, tmp_path):
    """String hashing is seeded per process: whatever passes through a set must be ordered before it
    reaches a file. A game on the per-state engine (forced by a grounding bound of ~0 s) infers its
    ``.typ`` from the atoms play met; two processes with other hash seeds write the same bytes."""
    import os
    import subprocess
    import sys

    code = (
        "import sys; from tasks.generate import generate_game; "
        "generate_game(sys.argv[1], None, sys.argv[2], episodes=30, steps=20, seed=0, ground_seconds=1e-6)"
    )
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / hash_seed
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(
            [sys.executable, "-c", code, str(rulesheets / "nim1.kif"), str(out)], check=True, env=env
        )
        outs.append(_files(out))
    assert outs[0] == outs[1]
    assert "types/nim1.typ" in outs[0] and any(k.startswith("data/") for k in outs[0])


def test_bench_ggp_passes_the_memory_cap_and_retry_failed_to_its_sweep(rulesheets, tmp_path, monkeypatch):
    """`orch bench ggp --memory-per-job` reaches the sweep's jobs (a reference evaluation of a big
    game can take gigabytes; without a cap two such jobs can take the node), and so does
    `--retry-failed` (stored errors re-run after a fix)."""
    import orchestrator.cli.run as run_module

    corpus = _corpus(rulesheets, tmp_path, "corpus", "--local")
    seen = []

    def record(request):
        seen.append(request)
        raise SystemExit(3)  # stop before running anything

    monkeypatch.setattr(run_module, "launch", record)
    result = CliRunner().invoke(
        app,
        ["bench", "ggp", "--corpus", str(corpus), "--learners", "true", "--store", str(tmp_path / "store"),
         "--memory-per-job", "3GiB"],
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert [(r.memory_per_job, r.retry_failed) for r in seen] == [("3GiB", False)]
    result = CliRunner().invoke(
        app,
        ["bench", "ggp", "--corpus", str(corpus), "--learners", "true", "--store", str(tmp_path / "store"),
         "--retry-failed"],
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert [r.retry_failed for r in seen] == [False, True]
