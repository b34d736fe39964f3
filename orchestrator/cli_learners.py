"""`orch learners list` and `orch learn`: what can learn, and one learning job run in-process.

``orch learn`` is the debugging path around the scheduler: it loads one task, fits one learner
on the train split within a (cooperative) budget, and scores the validate and test splits with the
same metrics the orchestrator stores, so a surprising number in a sweep can be reproduced
with a single command.
"""

from __future__ import annotations

import difflib
import json
import time
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from learners.base import Budget, UnknownLearner, make_learner, registered
from learners.metrics import Counts, evaluate, pool
from orchestrator.durations import format_duration, parse_duration
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


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _open(dataset: Path | None):
    from tasks.sources import open_source

    try:
        return open_source(dataset)
    except (ValueError, KeyError, OSError) as e:
        raise _fail(str(e)) from None


def _load_task(dataset: Path | None, game: str, target: str, predicate: str | None) -> Task:
    source = _open(dataset)
    games = source.games()
    if game not in games:
        close = difflib.get_close_matches(game, games, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; games: {', '.join(games)}"
        raise _fail(f"no game {game!r} in {source.root}{hint}")
    targets = source.targets(game)
    if target not in targets:
        raise _fail(f"game {game} has no target {target!r}; its targets are {', '.join(targets)}")
    task = source.load_task(game, target)
    if predicate is not None:
        try:
            task = task.for_predicate(predicate)
        except KeyError as e:
            raise _fail(str(e.args[0])) from None
    return task


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
    budget: str = typer.Option("60s", "--budget", "-b", help="Learning budget: 60s, 30m, 1h, or none."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document instead of tables."),
) -> None:
    """Fit one learner on one task's train split and score validate and test (in this process)."""
    try:
        learner_obj = make_learner(learner)
    except UnknownLearner as e:
        raise _fail(str(e)) from None
    except ValueError as e:
        raise _fail(f"learner {learner!r}: {e}") from None
    try:
        seconds = parse_duration(budget)
    except ValueError as e:
        raise _fail(str(e)) from None
    task = _load_task(dataset, game, target, predicate)

    improvements: list[float] = []
    started = time.monotonic()
    try:
        model = learner_obj.fit(
            task.learning_view(), Budget(seconds), report=lambda m: improvements.append(time.monotonic())
        )
    except KeyError as e:  # e.g. the published ttcc4_legal has no train file
        raise _fail(f"{learner} on {task.name}: {e.args[0]}", code=1) from None
    learn_s = time.monotonic() - started
    started = time.monotonic()
    results = evaluate(model, task, ("validate", "test"))
    eval_s = time.monotonic() - started

    if as_json:
        doc = {
            "game": task.game,
            "target": task.target,
            "predicate": predicate,
            "learner": learner,
            "budget_s": seconds,
            "learn_s": learn_s,
            "eval_s": eval_s,
            "reports": len(improvements),
            "model": model.describe(),
            "rules": model.rules(),
            "missing": task.missing,
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
    console.print(
        f"{learner}: learned in {learn_s:.2f}s (budget {format_duration(seconds)}, "
        f"{len(improvements)} reported model(s)), scored in {eval_s:.2f}s"
    )
    console.print(f"model: {model.describe()}")
    console.print(_results_table(task, learner, results))
    rules = model.rules()
    if rules:
        console.print("[bold]rules[/bold]")
        console.print(rules, markup=False, highlight=False)


def _results_table(task: Task, learner: str, results: dict[str, dict[str, Counts]]) -> Table:
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
