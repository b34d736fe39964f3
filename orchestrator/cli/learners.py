"""`orch learners list` and `orch learn`: what can learn, and one learning job run in-process.

``orch learn`` is the debugging path around the scheduler: it loads one task, fits one learner
on the train split within a (cooperative) budget, and scores the validate and test splits with the
same metrics the orchestrator stores, so a surprising number in a sweep can be reproduced
with a single command.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table

from orchestrator.cli.errors import EXIT_FAILED, OrchError
from orchestrator.durations import budget_option, format_duration
from orchestrator.suggest import (
    UnknownName,
    did_you_mean,
    open_dataset,
    resolve_game,
    resolve_learner,
    source_label,
)

if TYPE_CHECKING:  # learners and tasks are imported inside the commands: `orch --help` stays fast
    from learners.base import Model
    from learners.metrics import Counts
    from tasks.task import Task

learners_app = typer.Typer(help="The registered learners.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    """Add this module's commands to the `orch` app."""
    app.add_typer(learners_app, name="learners")
    app.command("learn")(learn)


# --- orch learners list ---------------------------------------------------------------------------


@learners_app.command("list")
def list_learners(
    as_json: bool = typer.Option(False, "--json", help="One JSON document instead of a table."),
    all_learners: bool = typer.Option(
        False, "--all", help="Also the test learners (noop, sleep, crash, ...)."
    ),
):
    """Every registered learner family: name, description, parameters and resources."""
    from learners.base import registered

    specs = registered(include_testing=all_learners)
    if as_json:
        rows = [
            {
                "name": s.example,
                "pattern": s.pattern,
                "description": s.description,
                "params": s.params,
                "resources": s.resources,
            }
            for s in specs
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="registered learners (name patterns: orch learners list --json)")
    table.add_column("name", no_wrap=True)
    for col in ("description", "params", "resources"):
        table.add_column(col, overflow="fold")
    for s in specs:
        resources = ", ".join(f"{k}={v:g}" for k, v in s.resources.items())
        table.add_row(s.example, s.description, s.params, resources)
    Console().print(table)


# --- orch learn -----------------------------------------------------------------------------------


def _open(dataset: Path | None):
    try:
        return open_dataset(dataset)
    except UnknownName as e:
        raise OrchError(str(e)) from None


def _load_task(dataset: Path | None, game: str, target: str, predicate: str | None) -> Task:
    source = _open(dataset)
    try:
        game = resolve_game(game, source.games(), source_label(dataset))
    except UnknownName as e:
        raise OrchError(str(e)) from None
    targets = source.targets(game)
    if target.lower() in targets:
        target = target.lower()
    if target not in targets:
        close = did_you_mean(target, targets)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise OrchError(f"game {game} has no target {target!r}; {hint}its targets are {', '.join(targets)}")
    task = source.load_task(game, target)
    if predicate is not None:
        try:
            task = task.for_predicate(predicate)
        except KeyError as e:
            raise OrchError(str(e.args[0])) from None
    return task


def _fit_supervised(learner: str, task: Task, seconds: float | None) -> tuple[Model, str, int, float]:
    """Fit in a supervised child killed at the deadline (orch run's worker): model, status, reports, seconds.

    Each reported model is shipped out of the child as it is reported, so a learner stopped at the
    budget (status ``timeout``) still yields its best model; without one that is an error.
    """
    import pickle

    from orchestrator.scheduling.supervise import run_one
    from orchestrator.scheduling.worker import ModelReport

    shipped: list[bytes] = []

    def work(i: int, send: Callable[[Any], None]) -> tuple[str, Any]:
        from learners.base import Budget, make_learner

        def ship(model: Model) -> None:
            blob = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
            send(ModelReport(i, blob, model.describe(), model.rules()))

        try:
            model = make_learner(learner).fit(task.learning_view(), Budget(seconds), report=ship)
        except KeyError as e:  # bad input, e.g. the published ttcc4_legal has no train file
            return "input", str(e.args[0])
        return "ok", pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)

    def keep(message: Any) -> None:
        if isinstance(message, ModelReport):
            shipped.append(message.blob)

    out = run_one(work, math.inf if seconds is None else seconds, None, keep)
    where = f"{learner} on {task.name}"
    if out.kind == "ok":
        return pickle.loads(out.payload), "ok", len(shipped), out.seconds
    if out.kind == "timeout":
        if not shipped:
            raise OrchError(f"{where}: the budget ran out before the learner reported any model", EXIT_FAILED)
        return pickle.loads(shipped[-1]), "timeout", len(shipped), out.seconds
    if out.kind == "input":
        raise OrchError(f"{where}: {out.payload}")
    if out.kind in ("error", "oom"):
        raise OrchError(f"{where}: {out.last_line()}", EXIT_FAILED)
    raise OrchError(f"{where}: {out.died()[1]}", EXIT_FAILED)


def _counts_json(c: Counts) -> dict:
    return {**c.as_dict(), "balanced_accuracy": c.balanced_accuracy, "perfect": c.perfect}


def learn(
    game: str = typer.Option(..., "--game", "-g", help="Game name, e.g. minimal_decay."),
    target: str = typer.Option(..., "--target", "-t", help="goal, legal, next or terminal."),
    learner: str = typer.Option(
        "knn5", "--learner", "-l", help="A registered learner name (orch learners list)."
    ),
    dataset: Path | None = typer.Option(
        None, "--dataset", "-d", help="Published IGGP layout directory (default: the bundled games)."
    ),
    predicate: str | None = typer.Option(
        None, "--predicate", "-p", help="Learn one flattened predicate only."
    ),
    budget: float | None = budget_option(
        "60s",
        "Hard wall-clock limit on learning (60s, 30m, 1h, or none): the learner is stopped at it.",
        "-b",
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON document instead of tables."),
) -> None:
    """Fit one learner on one task's train split and score validate and test.

    The learner runs in a child process that is stopped at the budget, as every job of `orch run`
    is; a stopped learner is scored with the last model it reported.
    """
    from learners.base import UnknownLearner, learner_applies, make_learner
    from learners.metrics import pool

    try:
        learner = resolve_learner(learner)  # case-insensitive, with suggestions and the name forms
        learner_obj = make_learner(learner)
    except (UnknownLearner, UnknownName) as e:
        raise OrchError(str(e)) from None
    except ValueError as e:
        raise OrchError(f"learner {learner!r}: {e}") from None
    seconds = budget
    task = _load_task(dataset, game, target, predicate)
    applies, why = learner_applies(learner_obj, task)
    if not applies:
        raise OrchError(f"{learner} does not apply to {task.name}: {why}", EXIT_FAILED)
    # As a sweep does: one fit per flattened predicate, each within the budget, counts pooled per task
    # (ILP learners only take one predicate at a time; the others give the sweep's numbers this way).
    parts = [task] if len(task.predicates) == 1 else [task.for_predicate(p) for p in task.predicates]
    fits = [_fit(learner, part, seconds) for part in parts]
    results: dict[str, dict[str, Counts]] = {}
    for fit in fits:
        for split, counts in fit["results"].items():
            results.setdefault(split, {}).update(counts)
    learn_s, eval_s = sum(f["learn_s"] for f in fits), sum(f["eval_s"] for f in fits)
    reports = sum(f["reports"] for f in fits)
    status = "timeout" if any(f["status"] == "timeout" for f in fits) else "ok"
    program = _program(fits)

    if as_json:
        doc = {
            "game": task.game,
            "target": task.target,
            "predicate": predicate,
            "learner": learner,
            "budget_s": seconds,
            "status": status,
            "learn_s": learn_s,
            "eval_s": eval_s,
            "reports": reports,
            "model": fits[0]["model"]
            if len(fits) == 1
            else "; ".join(f"{f['predicate']}: {f['model']}" for f in fits),
            "rules": program,
            "missing": task.missing,
            "learned": {
                f["predicate"]: {k: f[k] for k in ("learn_s", "eval_s", "reports", "model", "rules")}
                for f in fits
            },
            "splits": {
                split: {
                    "predicates": {p: _counts_json(c) for p, c in counts.items()},
                    "pooled": _counts_json(pool(counts.values())),
                }
                for split, counts in results.items()
            },
        }
        typer.echo(json.dumps(doc, indent=2))
        return

    console = Console()
    console.print(f"[bold]{task.describe()}[/bold]")
    for split, why in task.missing.items():
        console.print(f"[yellow]missing {split} split: {why}[/yellow]")
    each = f"{len(fits)} predicates, budget {format_duration(seconds)} each" if len(fits) > 1 else None
    console.print(
        f"{learner}: learned in {learn_s:.2f}s ({each or 'budget ' + format_duration(seconds)}"
        f"{', stopped at the budget' if status == 'timeout' else ''}, "
        f"{reports} reported model(s)), scored in {eval_s:.2f}s"
    )
    for f in fits:
        console.print(
            f"model{' of ' + f['predicate'] if len(fits) > 1 else ''}: {f['model']}", highlight=False
        )
    console.print(_results_table(task, learner, results))
    if program:
        console.print("[bold]rules[/bold]")
        console.print(program, markup=False, highlight=False, soft_wrap=True)


def _fit(learner: str, task: Task, seconds: float | None) -> dict:
    """Fit ``learner`` on one (sub-)task under the hard budget and score validate and test."""
    from learners.metrics import evaluate

    model, status, reports, learn_s = _fit_supervised(learner, task, seconds)
    started = time.monotonic()
    results = evaluate(model, task, ("validate", "test"))
    return {
        "predicate": task.predicates[0] if len(task.predicates) == 1 else None,
        "status": status,
        "learn_s": learn_s,
        "eval_s": time.monotonic() - started,
        "reports": reports,
        "model": model.describe(),
        "rules": model.rules(),
        "results": results,
    }


def _program(fits: list[dict]) -> str | None:
    """The whole target's program: each predicate's rules, under a comment naming the predicate."""
    if len(fits) == 1:
        return fits[0]["rules"]
    blocks = [f"% {f['predicate']}\n{f['rules'].rstrip()}" for f in fits if f["rules"]]
    return "\n".join(blocks) if blocks else None


def _results_table(task: Task, learner: str, results: dict[str, dict[str, Counts]]) -> Table:
    from learners.metrics import pool

    table = Table(title=f"{learner} on {task.name}")
    for col in ("split", "predicate", "tp", "fp", "tn", "fn", "balanced acc.", "perfect"):
        table.add_column(col, justify="right" if col not in ("split", "predicate") else "left")

    def row(split: str, name: str, c: Counts, style: str | None = None) -> None:
        table.add_row(
            split, name, str(c.tp), str(c.fp), str(c.tn), str(c.fn),
            f"{100 * c.balanced_accuracy:.1f}%", "yes" if c.perfect else "no", style=style,
        )  # fmt: skip

    for split, counts in results.items():
        for p, c in counts.items():
            row(split, p, c)
        row(split, "pooled (task)", pool(counts.values()), style="bold")
    return table
