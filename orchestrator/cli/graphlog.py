"""`orch graphlog`: generate GraphLog suites, show their statistics, train and evaluate the GNNs.

    orch graphlog generate DIR [--worlds 0,1,2] [--train 5000 ...]   # Parquet suite (Table 6 stats)
    orch graphlog stats DIR [--similarity] [--json]
    orch graphlog train DIR --setup supervised|multitask|kshot|continual --model gat-egat \
        [--worlds rule_0,rule_1] [--heldout rule_55] [--epochs N] [--out results.parquet] [--json]
    orch graphlog sweep DIR --setups supervised,continual --models gat-egat,param-rgcn --seeds 0,1,2 \
        [--worlds ...] [--heldout ...] [--shots ...] [--budget DURATION] [--store PATH] [--rerun] [--json]
    orch graphlog results [--store PATH] [--json]

`train` is the quick path (one setup, one local process); `sweep` runs setups x models x seeds
as Ray tasks into the results store and resumes (orchestrator/graphlog/jobs.py).

DIR may also be a released GraphLog directory (WORLD/train.jsonl); see docs/graphlog.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.cli.errors import OrchError
from orchestrator.cli.gpuflags import (
    gpu_memory_estimate_option,
    gpu_memory_per_job_option,
    gpus_per_job_option,
    mps_option,
)
from orchestrator.cli.output import console as pipe_console
from orchestrator.durations import budget_option
from orchestrator.storage import DEFAULT_STORE

graphlog_app = typer.Typer(
    help="GraphLog: generate worlds, statistics, train/evaluate GNN setups.", no_args_is_help=True
)
console = pipe_console()  # full width off a terminal: nothing cut in a pipe
errors = pipe_console(stderr=True)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the `orch` app."""
    app.add_typer(graphlog_app, name="graphlog")


def _ints(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise OrchError(f"--worlds expects world indices like 0,1,2, got {text!r}") from None


def _names(text: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))


def _numbers(text: str, option: str) -> tuple[int, ...]:
    try:
        return tuple(dict.fromkeys(int(n) for n in _names(text)))
    except ValueError:
        raise OrchError(f"{option} expects integers like 0,1,2, got {text!r}") from None


@graphlog_app.command()
def generate(
    directory: Path = typer.Argument(..., help="Where to write the suite (created)."),
    relations: int = typer.Option(20, help="K, the number of relations."),
    rules: int = typer.Option(76, help="Rules kept after the consistency checks (0: all of them)."),
    width: int = typer.Option(20, help="Rules per world (sliding-window width w)."),
    stride: int = typer.Option(1, help="Sliding-window stride s."),
    train: int = typer.Option(5000, help="Training graphs per world."),
    valid: int = typer.Option(1000, help="Validation graphs per world."),
    test: int = typer.Option(1000, help="Test graphs per world."),
    worlds: str = typer.Option("", help="Only these world indices, e.g. 0,1,2 (default: all)."),
    seed: int = typer.Option(0, help="Seed: the same seed gives the same suite."),
) -> None:
    """Generate a GraphLog suite (rules, worlds, query graphs) as Parquet."""
    from tasks.graphlog.generator import GeneratorConfig, generate_suite
    from tasks.graphlog.rules import generate_rules
    from tasks.graphlog.suite_files import write_suite

    cfg = GeneratorConfig(
        n_relations=relations, n_rules=rules or None, world_width=width, world_stride=stride,
        n_train=train, n_valid=valid, n_test=test, seed=seed,
    )  # fmt: skip
    try:
        suite = generate_suite(cfg, _ints(worlds))
    except ValueError as e:
        raise OrchError(str(e)) from None
    write_suite(directory, suite, generate_rules(cfg.n_relations, cfg.n_rules, cfg.seed), cfg)
    console.print(f"wrote {len(suite)} worlds to {directory}")


def _suite(directory: Path):
    from tasks.graphlog import GraphLogSource

    try:
        return GraphLogSource(directory).suite
    except (FileNotFoundError, ValueError) as e:
        raise OrchError(str(e)) from None


STAT_COLUMNS = ("world", "role", "classes", "descriptors", "avg_resolution_length", "avg_nodes", "avg_edges")


@graphlog_app.command()
def stats(
    directory: Path = typer.Argument(..., help="A generated suite directory."),
    similarity: bool = typer.Option(False, help="Also print the world similarity (shared rules) matrix."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Per-world statistics as in the paper's Table 6 (NC, ND, ARL, AN, AE)."""
    suite = _suite(directory)
    if not hasattr(suite, "stats"):
        raise OrchError(f"{directory}: statistics are stored only for generated suites")
    rows = suite.stats()
    sim = None
    if similarity:
        sets = {w: set(suite.meta(w)["rule_ids"]) for w in suite.worlds()}
        sim = {a: {b: len(sets[a] & sets[b]) for b in sets} for a in sets}
    if as_json:
        typer.echo(json.dumps({"worlds": rows, "similarity": sim}, indent=2))
        return
    console.print(_table(f"GraphLog suite {directory}", STAT_COLUMNS, rows, digits=2))
    if sim:
        names = list(sim)
        t = Table(title="similarity |R_i ∩ R_j|")
        t.add_column("")
        for n in names:
            t.add_column(n)
        for a in names:
            t.add_row(a, *(str(sim[a][b]) for b in names))
        console.print(t)


def _load(directory: Path, names: str) -> list:
    from learners.gnn.data import WorldData

    suite = _suite(directory)
    chosen = [n for n in names.split(",") if n] if names else suite.worlds()
    try:
        return [WorldData.of_world(suite.load(n)) for n in chosen]
    except KeyError as e:
        raise OrchError(str(e.args[0])) from None


@graphlog_app.command("train")
def train_cmd(
    directory: Path = typer.Argument(..., help="A generated or released GraphLog directory."),
    setup: str = typer.Option("supervised", help="supervised | multitask | kshot | continual."),
    model: str = typer.Option(
        "gat-egat",
        help="<rep>-<comp>[-bi][-rand]: rep in param|gcn|gat, comp in rgcn|egat; -bi also passes "
        "messages against edges (ours), -rand starts nodes from random features (the paper's).",
    ),
    worlds: str = typer.Option(
        "", help="Comma-separated world names (default: all); the sequence for continual."
    ),
    heldout: str = typer.Option(
        "", help="kshot: held-out worlds to adapt to (default: the suite's test worlds)."
    ),
    shots: str = typer.Option("0,5,10,20,40", help="kshot: adaptation steps at which to score."),
    epochs: int = typer.Option(
        50, help="Epochs (supervised: per world; multitask/kshot: total; continual: per world)."
    ),
    dim: int = typer.Option(64, help="Embedding size (the paper uses 200)."),
    batch_size: int = typer.Option(32, help="Graphs per batch."),
    budget: float | None = budget_option(
        "none", "Wall-clock limit per training run (e.g. 10m, or none); the best model so far is kept."
    ),
    dropout: float = typer.Option(
        0.4, help="GAT and E-GAT dropout (the paper's 0.4; 0 trains faster on short runs)."
    ),
    seed: int = typer.Option(0, help="Seed for initialisation and batching."),
    out: Path = typer.Option(None, help="Write the result rows here (.parquet or .json)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result rows as JSON."),
) -> None:
    """Train and evaluate a GNN in one of the paper's setups; results as a table, JSON or Parquet."""
    from learners.gnn import setups
    from learners.gnn.modules import net_config
    from learners.gnn.train import TrainConfig

    try:
        cfg = net_config(model, dim=dim, seed=seed, dropout=dropout)
    except ValueError as e:
        raise OrchError(f"--model: {e}") from None
    if setup not in setups.SETUPS:
        raise OrchError(f"--setup {setup!r}: expected one of {', '.join(setups.SETUPS)}")
    tcfg = TrainConfig(epochs=epochs, batch_size=batch_size, seed=seed)
    if setup == "kshot":
        from orchestrator.graphlog.kshot import KShotError, kshot_worlds

        suite = _suite(directory)
        try:
            pretrain, held_worlds = kshot_worlds(
                _names(worlds) or suite.worlds(), _names(heldout), suite.with_role("test")
            )
        except KShotError as e:
            raise OrchError(str(e)) from None
        data, held = _load(directory, ",".join(pretrain)), _load(directory, ",".join(held_worlds))
    else:
        data, held = _load(directory, worlds), []
    steps = list(_numbers(shots, "--shots")) if setup == "kshot" else []
    rows = _run_setup_hard(setup, data, cfg, tcfg, budget, held, steps)
    if out is not None:
        _write(rows, out, errors if as_json else console)
    if as_json:
        extra = {"forgetting": setups.forgetting_curve(rows)} if setup == "continual" else {}
        typer.echo(
            json.dumps(_finite({"rows": rows, **extra}), indent=2, default=_json_default, allow_nan=False)
        )
        return
    _print(rows, setup)
    if setup == "continual":
        for step in setups.forgetting_curve(rows):
            console.print(
                f"after world {step['after']}: current {step['current_acc']:.3f}, past mean {step['past_mean_acc']:.3f}"
            )


SCORING_ALLOWANCE_S = 600.0
"""Seconds past the budget for the setup to score its best model before it is killed (as a sweep job)."""


@dataclass(frozen=True)
class SetupRun:
    """The work of ``train``'s child: ``setups.run`` reporting each row as it is made.

    Picklable (not a closure): the child is spawned, as every GPU job's is, so this process never
    touches the GPU; the loaded worlds travel to it pickled.
    """

    setup: str
    data: list
    cfg: Any
    tcfg: Any
    budget: float | None
    held: list
    steps: list

    def __call__(self, i: int, send: Any) -> tuple[str, Any]:
        from learners.gnn import setups
        from orchestrator.graphlog.runner import RowReport

        report = lambda row: send(RowReport(i, row))  # noqa: E731
        rows = setups.run(
            self.setup, self.data, self.cfg, self.tcfg, self.budget, self.held, self.steps, report=report
        )
        return "ok", rows


def _run_setup_hard(setup: str, data, cfg, tcfg, budget: float | None, held, steps) -> list[dict]:  # noqa: ANN001
    """``setups.run`` in a supervised (spawned) child, killed at budget + scoring allowance: a hard limit.

    The setup stops itself at the budget and scores its best model; a setup still running at the
    deadline is killed, keeping the rows it had reported (each is sent out as soon as it is made).
    """
    from orchestrator.graphlog.runner import RowReport
    from procs.supervise import run_one

    reported: list[dict] = []

    def keep(message: Any) -> None:
        if isinstance(message, RowReport):
            reported.append(message.row)

    deadline = math.inf if budget is None else budget + SCORING_ALLOWANCE_S
    work = SetupRun(setup, data, cfg, tcfg, budget, held, steps)
    out = run_one(work, deadline, None, keep, start_method="spawn")
    if out.kind == "ok":
        return out.payload
    if out.kind == "timeout":
        errors.print(
            f"[yellow]killed at the hard deadline ({budget:g}s budget + {SCORING_ALLOWANCE_S:g}s to score); "
            f"{len(reported)} row(s) reported before[/yellow]"
        )
        return reported
    why = out.last_line() if out.kind in ("error", "oom") else out.died()[1]
    raise OrchError(f"the {setup} setup failed: {why}")


def _json_default(x: object) -> object:
    return x.isoformat() if hasattr(x, "isoformat") else str(x)


def _finite(x: object) -> object:
    """NaN (e.g. "past accuracy" before any past world) as JSON null, so the output is strict JSON."""
    if isinstance(x, float) and math.isnan(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def _write(rows: list[dict], out: Path, say: Console) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".json":
        out.write_text(json.dumps(_finite(rows), indent=2, default=_json_default, allow_nan=False) + "\n")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), out)
    say.print(f"wrote {len(rows)} rows to {out}")


def _print(rows: list[dict], setup: str) -> None:
    if not rows:
        console.print("no results")
        return
    keys = [k for k in rows[0] if k not in ("loss_curve", "setup", "dim", "seed", "epochs")]
    console.print(_table(f"GraphLog {setup}", keys, rows, digits=3))


def _table(title: str, columns: Sequence[str], rows: list[dict], digits: int) -> Table:
    """``rows`` as a rich table of ``columns``, floats to ``digits`` decimals."""
    table = Table(title=title)
    for c in columns:
        table.add_column(c)
    for r in rows:
        table.add_row(*(f"{r[c]:.{digits}f}" if isinstance(r[c], float) else str(r[c]) for c in columns))
    return table


# --- sweeps on Ray (orchestrator/graphlog/jobs.py) -----------------------------------------------------


@graphlog_app.command("sweep")
def sweep_cmd(
    directory: Path = typer.Argument(..., help="A generated or released GraphLog directory."),
    setups: str = typer.Option(
        ..., "--setups", help="Comma-separated: supervised,multitask,kshot,continual."
    ),
    models: str = typer.Option(
        "gat-egat",
        "--models",
        help="Comma-separated <rep>-<comp>[-bi][-rand] (see train --help), e.g. gat-egat,param-rgcn,gat-egat-rand.",
    ),
    seeds: str = typer.Option("0", "--seeds", help="Comma-separated seeds: one job per seed."),
    worlds: str = typer.Option("", help="World names (default: all); the sequence for continual."),
    heldout: str = typer.Option("", help="kshot: held-out worlds (default: the suite's test worlds)."),
    shots: str = typer.Option("0,5,10,20,40", help="kshot: adaptation steps at which to score."),
    epochs: int = typer.Option(
        50, help="Epochs (supervised: per world; multitask/kshot: total; continual: per world)."
    ),
    dim: int = typer.Option(64, help="Embedding size (the paper uses 200)."),
    dropout: float = typer.Option(0.4, help="GAT and E-GAT dropout."),
    batch_size: int = typer.Option(32, help="Graphs per batch."),
    budget: float | None = budget_option(
        "none",
        "Hard wall-clock limit per job (e.g. 10m, or none): at the budget the setup scores its "
        "best-validation model (status timeout); a job still running 600 s later is killed.",
    ),
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Results store (one row per job, as orch run)."),
    address: str | None = typer.Option(
        None, "--address", help="A Ray cluster (default: a private local Ray)."
    ),
    num_cpus: int | None = typer.Option(
        None, "--num-cpus", min=1, help="CPUs of the local Ray (default: all)."
    ),
    max_retries: int = typer.Option(2, "--max-retries", min=0, help="Retries of a job whose worker died."),
    gpus_per_job: str | None = gpus_per_job_option(),
    gpu_memory_per_job: str | None = gpu_memory_per_job_option(),
    gpu_memory_estimate: str = gpu_memory_estimate_option(),
    mps: bool = mps_option(),
    rerun: bool = typer.Option(False, "--rerun", help="Run stored jobs again (newer rows supersede older)."),
    as_json: bool = typer.Option(False, "--json", help="Print rows and summary as JSON, no progress."),
) -> None:
    """Run GraphLog setups x models x seeds as Ray jobs into the store; rerunning resumes."""
    from orchestrator.cli.gpuflags import gpu_options
    from orchestrator.cli.preflight import check_requirements
    from orchestrator.graphlog.jobs import SweepSpec, planned_ids, stored_rows, summarize
    from orchestrator.graphlog.runner import run_graphlog_sweep
    from orchestrator.scheduling.progress import make_progress
    from orchestrator.scheduling.raysession import SchedulerError
    from orchestrator.scheduling.sweep import SweepError
    from orchestrator.storage.store import ResultStore, StoreError

    check_requirements(["gnn-gat-egat"])  # the GraphLog GNNs' registration: torch, torch_geometric (exit 2)
    spec = SweepSpec(
        str(directory), _names(setups), _names(models), _numbers(seeds, "--seeds"), _names(worlds),
        _names(heldout), _numbers(shots, "--shots"), epochs, dim, dropout, batch_size,
        budget or 0.0,  # the sweep's spec (and job ids) spell "no limit" as 0.0
    )  # fmt: skip
    try:
        gpu = gpu_options(gpus_per_job, gpu_memory_per_job, gpu_memory_estimate, mps)
        results = ResultStore(store)
        jobs, result = run_graphlog_sweep(spec, results, rerun=rerun, address=address, num_cpus=num_cpus,
                                          max_retries=max_retries, progress=make_progress(as_json), **gpu)  # fmt: skip
        rows = stored_rows(results, planned_ids(jobs))
    except (SweepError, SchedulerError, StoreError) as e:
        raise OrchError(str(e)) from None
    summary = summarize(rows)
    if as_json:
        sweep = {"planned": result.planned, "skipped": result.skipped, "statuses": result.statuses,
                 "wall_s": round(result.wall_s, 3), "interrupted": result.interrupted}  # fmt: skip
        _echo_json({"sweep": sweep, "summary": summary, "rows": rows})
    else:
        _print_summary(summary)
    if result.interrupted:
        raise typer.Exit(130)


@graphlog_app.command("results")
def results_cmd(
    store: str = typer.Option(
        DEFAULT_STORE, "--store", help="Results store written by `orch graphlog sweep`."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print rows and summary as JSON."),
) -> None:
    """Summarise the stored GraphLog sweep rows (each job's latest run): mean ± std over seeds."""
    from orchestrator.graphlog.jobs import stored_rows, summarize
    from orchestrator.storage.store import ResultStore, StoreError

    try:
        rows = stored_rows(ResultStore(store, must_exist=True))
    except StoreError as e:
        raise OrchError(str(e)) from None
    summary = summarize(rows)
    if as_json:
        _echo_json({"summary": summary, "rows": rows})
    else:
        _print_summary(summary)


def _echo_json(obj: dict) -> None:
    typer.echo(json.dumps(_finite(obj), indent=2, default=_json_default, allow_nan=False))


def _acc(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _print_summary(summary: dict) -> None:
    from orchestrator.graphlog.jobs import display_rows

    if not summary["table"]:
        console.print("no GraphLog sweep results")
        return
    rows = display_rows(summary)
    groups = [(r["setup"], r["model"], r["k"]) for r in rows]
    several = len(set(groups)) < len(groups)  # some setup x model ran with several settings
    table = Table(title="GraphLog sweep: test accuracy, mean ± std over seeds")
    columns = ["setup", "model", "k", "seeds", "test acc", "jobs"] + (["settings"] if several else [])
    for c in columns:
        table.add_column(c)
    for r in rows:
        table.add_row(*(r[c] for c in columns))
    console.print(table)
    for curve in summary["forgetting"]:
        console.print(f"forgetting curve, continual {curve['model']} ({curve['settings']}):")
        for s in curve["steps"]:
            console.print(f"  after {s['world']}: current {_acc(s['current_acc'])}, "
                          f"past mean {_acc(s['past_mean_acc'])} ({s['seeds']} seed(s))")  # fmt: skip
    for f in summary["failures"]:
        first = (f["error"] or "").splitlines()[0] if f["error"] else ""
        errors.print(f"[red]{f['status']}[/red] {first}", highlight=False)
