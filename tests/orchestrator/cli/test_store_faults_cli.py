"""Issue 27's smaller items: corrupt ``.dat`` files in ``orch games list``, a store that cannot be
read, runnable end-of-run hints for a store URI with credentials, Ray's worker-death text."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from sweep_helpers import write_tiny_dataset
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.storage.store import ResultStore, runnable_uri


@pytest.mark.parametrize(
    "corrupt",
    [
        pytest.param(lambda p: p.write_bytes(os.urandom(2048)), id="binary"),
        pytest.param(lambda p: p.write_bytes(b""), id="empty"),
        pytest.param(lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]), id="truncated"),
    ],
)
def test_games_list_names_a_corrupt_dat_file_and_exits_2(tmp_path, corrupt):
    dataset = write_tiny_dataset(tmp_path / "ds", games=("alpha",))
    bad = dataset / "data" / "train" / "alpha_goal_train.dat"
    corrupt(bad)
    res = CliRunner().invoke(app, ["games", "list", "--dataset", str(dataset)])
    assert res.exit_code == 2, res.output
    assert str(bad) in res.output and len(res.output.strip().splitlines()) == 1


def test_games_list_on_good_data_still_counts_examples(tmp_path):
    dataset = write_tiny_dataset(tmp_path / "ds", games=("alpha",))
    res = CliRunner().invoke(app, ["games", "list", "--dataset", str(dataset), "--json"])
    assert res.exit_code == 0, res.output
    from tasks.iggp import count_examples, read_dat

    listed = json.loads(res.output)["games"][0]["targets"]
    for split in ("train", "validate", "test"):
        path = dataset / "data" / split / f"alpha_goal_{split}.dat"
        assert listed["goal"][split] == count_examples(path) == len(read_dat(path).examples) > 0


def _invoke_as_nobody(args: list[str], warm_up: list[str]) -> tuple[int, str]:
    """Run ``orch ARGS`` in a forked child that dropped root for ``nobody`` (root reads any
    directory, and the interpreter may not be reachable by nobody, so no exec): (exit code, output).
    ``warm_up`` runs first, as root, so that the modules the command imports lazily are loaded."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code, out = 70, ""
        try:
            os.close(read)
            CliRunner().invoke(app, warm_up)
            os.setgid(65534)
            os.setuid(65534)
            res = CliRunner().invoke(app, args)
            code, out = res.exit_code, res.output + (repr(res.exception) if res.exit_code == 1 else "")
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            out = f"child failed: {e!r}"
        finally:
            os.write(write, json.dumps([code, out]).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        data = f.read()
    os.waitpid(pid, 0)
    code, out = json.loads(data)
    return code, out


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to drop to another user (nobody)")
@pytest.mark.parametrize("command", [["status"], ["report"], ["store", "compact"]])
def test_a_store_that_cannot_be_read_says_so_not_that_there_is_none(tmp_path, command):
    base = Path(tempfile.mkdtemp(prefix="orch-unreadable-"))  # pytest's tmp_path is root's alone (0700)
    base.chmod(0o755)
    store = base / "store"
    ResultStore(store).write([{"job_id": "j", "status": "ok"}])
    readable = tmp_path / "readable"
    ResultStore(readable).write([{"job_id": "j", "status": "ok"}])
    store.chmod(0)
    try:
        code, out = _invoke_as_nobody([*command, "--store", str(store)], [*command, "--store", str(readable)])
    finally:
        store.chmod(0o755)
        shutil.rmtree(base)
    assert code == 2, out
    assert f"cannot read the store at {store}" in out and "no results store" not in out


def test_end_of_run_hints_are_runnable_and_keep_credentials_out():
    where, had = runnable_uri("s3://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI@bucket/x?region=us-east-1")
    assert (where, had) == ("s3://bucket/x?region=us-east-1", True)
    where, had = runnable_uri("s3://bucket/x?secret_key=abc&endpoint_override=127.0.0.1:9000")
    assert (where, had) == ("s3://bucket/x?endpoint_override=127.0.0.1:9000", True)
    assert runnable_uri("./orch-results") == ("./orch-results", False)


def test_next_steps_print_a_runnable_store_and_say_where_credentials_come_from():
    from orchestrator.scheduling.progress import next_steps
    from orchestrator.scheduling.scheduler import SweepResult

    text = next_steps("s3://KEY:SECRET@bucket/x", SweepResult(1, 0, {"ok": 1}, 1.0, 1.0))
    assert "orch status --store s3://bucket/x " in text and "***" not in text and "SECRET" not in text
    assert "environment" in text


def test_rays_worker_death_text_becomes_one_line_of_orchs(capfd):
    pytest.importorskip("ray")
    from ray._private import worker as ray_worker

    from orchestrator.scheduling.raysession import WORKER_DEATH_LINE, worker_deaths_in_one_line

    text = (
        "A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
        "the problem, check the logs for the dead worker.\nWorker exit type: SYSTEM_ERROR\nWorker exit detail: ..."
    )
    with worker_deaths_in_one_line():
        ray_worker.print_to_stdstream(
            {"lines": [text], "pid": "raylet", "is_err": False}, ignore_prefix=False
        )
    out, err = capfd.readouterr()
    assert "A worker died" not in out + err
    assert err.strip().splitlines() == [f"orch: {WORKER_DEATH_LINE}"]
    assert ray_worker.print_to_stdstream.__name__ == "print_to_stdstream"  # restored afterwards
