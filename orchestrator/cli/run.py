"""`orch run` (a sweep on Ray), `orch status` (how far a store got), `orch report`, `orch store compact`.

``orch run`` validates every name before Ray starts, so a typo costs a second, not a cluster start.
Rerunning the same command resumes: stored jobs are skipped (see :func:`orchestrator.scheduling.scheduler.plan`).
"""

from __future__ import annotations

import datetime
import json
import signal
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import typer

from orchestrator.cli.analysis import register_report
from orchestrator.cli.errors import OrchError
from orchestrator.cli.gpuflags import (
    gpu_memory_estimate_option,
    gpu_memory_per_job_option,
    gpu_options,
    gpus_per_job_option,
    mps_option,
)
from orchestrator.cli.preflight import check_applicability, check_requirements, runnable_tasks
from orchestrator.cli.sweeps import (
    dataset_changes,
    failed_line,
    gc_command,
    resolve_sweep,
    stored_before,
    stored_by_others,
    sweeps_command,
)
from orchestrator.durations import budget_option
from orchestrator.storage import DEFAULT_STORE

if TYPE_CHECKING:  # the store (pyarrow) is imported inside the commands: `orch --help` stays fast
    from orchestrator.scheduling.scheduler import SweepOptions, SweepResult
    from orchestrator.scheduling.sweep import Job
    from orchestrator.storage.store import ResultStore

store_app = typer.Typer(help="Maintain a results store.", no_args_is_help=True)

SHOWN_FAILURES = 20


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def memory_per_job_option() -> Any:
    """``--memory-per-job``, shared by ``orch run`` and the ``orch bench`` runs."""
    return typer.Option(
        None,
        "--memory-per-job",
        help="Resident-memory cap per job (e.g. 4GiB): oom beyond it, with the peak.",
    )


def run(
    games: str | None = typer.Option(None, "--games", "-g", help="Comma-separated games."),
    all_games: bool = typer.Option(False, "--all-games", help="Every game of the dataset."),
    learners: str = typer.Option(
        ..., "--learners", "-l", help="Comma-separated learner names (orch learners list)."
    ),
    targets: str | None = typer.Option(
        None, "--targets", help="Only these targets (goal,legal,next,terminal)."
    ),
    dataset: str | None = typer.Option(
        None, "--dataset", "-d", help="A dataset dir, graphlog:DIR, or bundled (default)."
    ),
    seed: int = typer.Option(
        0, "--seed", help="Seed of every job: seeds its RNGs and is part of the job id."
    ),
    repeats: int = typer.Option(
        1,
        "--repeats",
        min=1,
        help="Repeat each job N times; repeat r > 0 learns from a seeded 80% subsample of train.",
    ),
    budget: float | None = budget_option(
        "30m", "Hard wall-clock limit per predicate (e.g. 30m, 90s): each job is stopped at it."
    ),
    max_retries: int = typer.Option(
        2, "--max-retries", min=0, help="Retries of a job whose worker died (memory monitor, lost node)."
    ),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="Also re-run the learners' own errors (oom/lost jobs always re-run)."
    ),
    retry_timeouts: bool = typer.Option(False, "--retry-timeouts", help="Also re-run stored timeouts."),
    memory_per_job: str | None = memory_per_job_option(),
    memory_estimate: str = typer.Option(
        "512MiB",
        "--memory-estimate",
        help="Memory each worker reserves on its node unless the store has peaks for its learners ('none': no reservation).",
    ),
    gpus_per_job: str | None = gpus_per_job_option(),
    gpu_memory_per_job: str | None = gpu_memory_per_job_option(),
    gpu_memory_estimate: str = gpu_memory_estimate_option(),
    mps: bool = mps_option(),
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Store directory or URI."),
    sweep: str | None = typer.Option(None, "--sweep", help="Sweep name (default: derived from the job ids)."),
    address: str | None = typer.Option(
        None, "--address", help="A Ray cluster (default: a private local Ray on 127.0.0.1)."
    ),
    num_cpus: int | None = typer.Option(
        None, "--num-cpus", min=1, help="CPUs of the local Ray (default: all)."
    ),
    max_actors: int | None = typer.Option(
        None, "--max-actors", min=1, help="Workers to ask for beyond the cluster's CPUs now (autoscaling)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary instead of progress."),
) -> None:
    """Run learners on every (game, predicate) of a dataset on Ray; results go to the store."""
    launch(RunRequest(**locals()))


@dataclass
class RunRequest:
    """What ``orch run`` was asked for (its options), for the commands that run a sweep too: ``orch
    bench iggp`` passes ``only_tasks``, the (game, target) pairs it will score, so that it plans no
    job for a task it leaves out."""

    learners: str
    games: str | None = None
    all_games: bool = False
    targets: str | None = None
    dataset: str | None = None
    seed: int = 0
    repeats: int = 1
    budget: float | None = None
    max_retries: int = 2
    retry_failed: bool = False
    retry_timeouts: bool = False
    memory_per_job: str | None = None
    memory_estimate: str = "512MiB"
    gpus_per_job: str | None = None
    gpu_memory_per_job: str | None = None
    gpu_memory_estimate: str = "4GiB"
    mps: bool = False
    store: str = DEFAULT_STORE
    sweep: str | None = None
    address: str | None = None
    num_cpus: int | None = None
    max_actors: int | None = None
    as_json: bool = False
    only_tasks: set[tuple[str, str]] | None = None


@dataclass
class _Plan:
    """A sweep ready to run: its jobs, its store, its options, and what the store held before."""

    jobs: list[Job]
    results: ResultStore
    options: SweepOptions
    before: int


def launch(req: RunRequest) -> None:
    """``orch run``'s body: check and plan everything that can fail on names or data before Ray
    starts (exit 2), run the sweep, then report and exit by the README's contract."""
    from orchestrator.scheduling.progress import make_progress, next_steps
    from orchestrator.scheduling.scheduler import SchedulerError, run_sweep
    from orchestrator.storage.store import StoreError

    plan = _plan(req)
    progress = make_progress(req.as_json)
    previous = signal.signal(signal.SIGTERM, _interrupt)  # `kill PID` stops as cleanly as Ctrl-C
    began = datetime.datetime.now(datetime.UTC)
    try:
        result = run_sweep(plan.jobs, plan.results, plan.options, progress)
        # another driver on this store took part: its rows of this sweep since we began, beyond ours
        result.elsewhere = max(
            result.elsewhere, stored_by_others(plan.results, plan.jobs, began, result.finished)
        )
    except (SchedulerError, StoreError) as e:
        raise OrchError(str(e)) from e
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not req.as_json:
        typer.echo(next_steps(req.store, result, stored_before=plan.before, sweep=plan.options.sweep))
    _summarise(req, plan, result)


def _plan(req: RunRequest) -> _Plan:
    """Names, requirements, applicability, the dataset and the jobs, all before Ray starts."""
    from orchestrator.scheduling.scheduler import SweepOptions
    from orchestrator.scheduling.sweep import (
        SweepError,
        build_jobs,
        parse_bytes,
        require_limit,
        split_names,
        sweep_name,
        validate_games,
        validate_learners,
    )
    from orchestrator.storage.store import ResultStore, StoreError
    from orchestrator.suggest import UnknownName, open_dataset, source_label

    if req.all_games == bool(req.games):
        raise OrchError("give either --games a,b or --all-games")
    dataset = req.dataset
    spec = dataset if dataset is not None else "bundled"
    try:
        budget_s = require_limit(req.budget)
        memory = parse_bytes(req.memory_per_job) if req.memory_per_job else None
        estimate = None if req.memory_estimate.strip().lower() == "none" else parse_bytes(req.memory_estimate)
        gpu = gpu_options(req.gpus_per_job, req.gpu_memory_per_job, req.gpu_memory_estimate, req.mps)
        # cheap, so before a dataset that may be slow to open; names come back in canonical case
        learner_names = list(validate_learners(split_names(req.learners)))
    except SweepError as e:
        raise OrchError(str(e)) from e
    # before the dataset opens and Ray starts: what the registrations alone tell (exit 2)
    check_requirements(learner_names)
    check_applicability(learner_names, dataset, source_label(dataset))
    try:
        source = open_dataset(dataset)
    except UnknownName as e:
        raise OrchError(str(e)) from e
    except Exception as e:  # a broken dataset is a clear one-line error, never a traceback
        raise OrchError(f"cannot open the dataset {spec}: {type(e).__name__}: {e}") from e
    try:
        target_list = split_names(req.targets) or None
        chosen = validate_games(
            source, None if req.all_games else split_names(req.games), source_label(dataset)
        )
        runnable, left_out = runnable_tasks(source, chosen, target_list, not req.all_games, req.only_tasks)
        for line in left_out:
            typer.echo(f"note: {line}", err=True)
        jobs = build_jobs(
            source, spec if spec == "bundled" or ":" in spec else source.root, chosen, learner_names,
            targets=target_list, seed=req.seed, repeats=req.repeats, budget_s=budget_s, only_tasks=runnable,
        )  # fmt: skip
        results = ResultStore(req.store)
    except (SweepError, ValueError, KeyError, StoreError, OSError) as e:
        raise OrchError(str(e)) from e
    name = req.sweep or sweep_name(jobs)
    settings = {"learners": learner_names, "seed": req.seed, "repeats": req.repeats, "budget_s": budget_s,
                "targets": target_list, "dataset": jobs[0].dataset}  # fmt: skip
    options = SweepOptions(
        name, max_retries=req.max_retries, memory_per_job=memory, memory_estimate=estimate,
        retry_failed=req.retry_failed, retry_timeouts=req.retry_timeouts, address=req.address,
        num_cpus=req.num_cpus, max_actors=req.max_actors, spec=settings, **gpu,
    )  # fmt: skip
    try:
        before = stored_before(results, jobs)
        for line in dataset_changes(results, jobs, name):  # a rerun after a data fix: say what is current
            typer.echo(f"note: {line}", err=req.as_json)
    except StoreError as e:
        raise OrchError(str(e)) from e
    return _Plan(jobs, results, options, before)


def _summarise(req: RunRequest, plan: _Plan, result: SweepResult) -> None:
    """The end of ``orch run``: the summary (JSON or lines), then the exit code (README "Exit codes")."""
    from orchestrator.storage.store import scrub

    if req.as_json:
        out = {"sweep": plan.options.sweep, "store": scrub(req.store), "planned": result.planned,
               "skipped": result.skipped, "finished": result.finished, "statuses": result.statuses,
               "wall_s": round(result.wall_s, 3), "job_seconds": round(result.job_seconds, 3),
               "retried": result.retried, "lost_actors": result.lost_actors, "interrupted": result.interrupted,
               "not_applicable": result.not_applicable, "elsewhere": result.elsewhere,
               "failures": [f.__dict__ for f in result.failures]}  # fmt: skip
        typer.echo(json.dumps(out, indent=2))
    else:
        for learner, seen in sorted(result.not_applicable.items()):
            typer.echo(f"{learner}: {seen['jobs']} job(s) not applicable (e.g. {seen['reason']})")
        _print_failures(result)
    if result.interrupted:
        raise typer.Exit(130)
    # exit 1 when any job of the sweep (this run's or stored) ended error, oom or lost: README "Exit codes"
    failed = failed_line(plan.results, plan.jobs, result)
    if failed:
        typer.echo(failed, err=req.as_json)  # the last line of the terminal
        raise typer.Exit(1)


def _print_failures(result) -> None:  # noqa: ANN001
    """One line per failed job of this run (the first few), with its reason."""
    from orchestrator.storage.store import scrub

    for f in result.failures[:SHOWN_FAILURES]:
        typer.echo(f"{f.status}: {f.label}: {scrub(f.reason)}")
    if len(result.failures) > SHOWN_FAILURES:
        typer.echo(
            f"... and {len(result.failures) - SHOWN_FAILURES} more failed job(s): orch status --store ..."
        )


STATUS_COLUMNS = ("done", "not_applicable", "running", "failed", "remaining")
"""The columns of ``orch status``: each planned job is in exactly one."""


def status_table(store: ResultStore, sweep: str | None = None) -> dict[str, dict[str, int]]:
    """Per learner: done (ok/timeout), not applicable, failed (error/oom/lost/killed), running, remaining.

    Planned jobs come from the sweep manifests; a planned job without a row is *remaining*, or
    *running* when the sweep's live file (written by the driver while it runs) lists it.
    """
    from orchestrator.storage.schema import INFRA_STATUSES, NOT_APPLICABLE

    failed = INFRA_STATUSES | {"error"}  # the schema's statuses: nothing kept here to drift from them
    import pyarrow.compute as pc

    manifest = store.manifests()
    if sweep is not None:
        manifest = manifest.filter(pc.equal(manifest["sweep"], sweep)) if manifest.num_rows else manifest
    planned = dict(zip(manifest["job_id"].to_pylist(), manifest["learner"].to_pylist(), strict=True))
    latest = store.latest(["job_id", "learner", "status", "sweep"])
    status = dict(zip(latest["job_id"].to_pylist(), latest["status"].to_pylist(), strict=True))
    learner_of = dict(zip(latest["job_id"].to_pylist(), latest["learner"].to_pylist(), strict=True))
    if sweep is not None:
        keep = {
            j
            for j, s in zip(latest["job_id"].to_pylist(), latest["sweep"].to_pylist(), strict=True)
            if s == sweep
        }
        status = {j: s for j, s in status.items() if j in keep or j in planned}
    running = _running_jobs(store)
    table: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(STATUS_COLUMNS, 0))
    for job, learner in {**learner_of, **planned}.items():
        if job not in status and job not in planned:
            continue
        s = status.get(job)
        if s is None:
            table[learner]["running" if job in running else "remaining"] += 1
        elif s in failed:
            table[learner]["failed"] += 1
        elif s == NOT_APPLICABLE:  # settled (resume skips it), but nothing was learned: not "done"
            table[learner]["not_applicable"] += 1
        else:
            table[learner]["done"] += 1
    return dict(sorted(table.items()))


def _running_jobs(store: ResultStore) -> set[str]:
    from orchestrator.storage.live import read_live_jobs

    return read_live_jobs(store)


def status(
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Store directory or URI."),
    sweep: str | None = typer.Option(None, "--sweep", help="Only this sweep (orch sweeps lists them)."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, tsv, md, csv or json."),
) -> None:
    """How far the sweeps in a store got: done, running, failed and remaining jobs per learner."""
    from orchestrator.storage.store import ResultStore, StoreError, scrub

    try:
        opened = ResultStore(store, must_exist=True)
        sweep = resolve_sweep(opened, sweep)  # exit 2 with close matches for an unknown name
        table = status_table(opened, sweep)
    except StoreError as e:
        raise OrchError(str(e)) from e
    total = dict.fromkeys(STATUS_COLUMNS, 0)
    for counts in table.values():
        for k, v in counts.items():
            total[k] += v
    failed = _failed_line(table, store)
    if as_json or fmt == "json":
        typer.echo(
            json.dumps({"store": scrub(store), "sweep": sweep, "learners": table, "total": total}, indent=2)
        )
        if failed:
            typer.echo(failed, err=True)
            raise typer.Exit(1)
        return
    if not table:
        typer.echo(f"{scrub(store)}: no sweeps recorded")
        return
    if fmt != "table":
        from orchestrator.cli.output import print_rows

        print_rows([{"learner": k, **v} for k, v in [*table.items(), ("total", total)]], fmt)
        if failed:
            typer.echo(failed, err=True)
            raise typer.Exit(1)
        return
    from rich.table import Table

    from orchestrator.cli.output import console

    out = Table(title=f"{scrub(store)}" + (f" (sweep {sweep})" if sweep else ""))
    out.add_column("learner")
    for col in total:
        out.add_column(col.replace("_", " "), justify="right")
    for learner, counts in table.items():
        out.add_row(learner, *(str(counts[c]) for c in total))
    out.add_row("total", *(str(total[c]) for c in total), style="bold")
    console().print(out)
    if failed:
        typer.echo(failed)
        raise typer.Exit(1)


def _failed_line(table: dict[str, dict[str, int]], store: str) -> str | None:
    """The last line of ``orch status`` when some job ended error, oom or lost (exit 1), else None."""
    from orchestrator.storage.store import scrub

    counts = {learner: c["failed"] for learner, c in table.items() if c["failed"]}
    if not counts:
        return None
    each = ", ".join(f"{learner} {n}" for learner, n in counts.items())
    return (
        f"failed: {sum(counts.values())} job(s) ended error, oom or lost ({each}): orch report --store "
        f"{scrub(store)} shows them; orch run ... --retry-failed re-runs errors"
    )


def compact_command(
    store: str = typer.Option(
        DEFAULT_STORE, "--store", help="Store directory or URI (e.g. s3://bucket/prefix)."
    ),
) -> None:
    """Merge the store's small result files into one (safe to run while a sweep writes); remove the
    claims and heartbeat files that dead drivers left behind (never a live driver's)."""
    from orchestrator.storage.claims import remove_stale
    from orchestrator.storage.store import ResultStore, StoreError, scrub

    try:
        opened = ResultStore(store, must_exist=True)
        before, after = opened.compact()
        claims, drivers = remove_stale(opened)
    except StoreError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from e
    typer.echo(f"{scrub(store)}: {before} result file(s) -> {after}")
    if claims or drivers:
        typer.echo(f"removed {claims} stale claim(s) and {drivers} heartbeat file(s) of dead drivers")


def register(app: typer.Typer) -> None:
    """Add ``run``, ``status``, ``report`` and ``store compact`` to the `orch` app."""
    app.command("run")(run)
    app.command("status")(status)
    register_report(app)
    app.command("sweeps")(sweeps_command)
    app.command("gc")(gc_command)
    store_app.command("compact")(compact_command)
    app.add_typer(store_app, name="store")
