"""`orch learners list` and `orch learn`: what can learn, and one learning job run in-process.

``orch learn`` is the debugging path around the scheduler: it loads one task, fits one learner
on the train split within a (cooperative) budget, and scores the validate and test splits with the
same metrics the orchestrator stores, so a surprising number in a sweep can be reproduced
with a single command.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from orchestrator.cli.errors import EXIT_FAILED, OrchError
from orchestrator.cli.output import console as pipe_console
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
    from procs.supervise import Outcome
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
                "requires": {**dataclasses.asdict(s.requires), "missing": s.requires.missing()},
            }
            for s in specs
        ]
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="registered learners (name patterns: orch learners list --json)")
    table.add_column("name", no_wrap=True)
    for col in ("description", "params", "resources", "requires"):
        table.add_column(col, overflow="fold")
    for s in specs:
        resources = ", ".join(f"{k}={v:g}" for k, v in s.resources.items())
        missing = s.requires.missing()
        needs = ", ".join(s.requires.modules) or "-"
        if missing:
            needs += f" (missing: {s.requires.install_hint()})"
        table.add_row(s.example, s.description, s.params, resources, needs)
    pipe_console().print(table)


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


@dataclass(frozen=True)
class LearnParts:
    """The work of ``orch learn``'s learning child: item i fits ``learner`` on ``tasks[i]`` within ``seconds``.

    Picklable (not a closure), so GPU learners can run it in a spawned child.
    """

    learner: str
    tasks: list[Task]
    seconds: float | None
    seed: int = 0
    _learners: dict[int, Any] = dataclasses.field(default_factory=dict, repr=False)

    def prepare(self, i: int) -> None:
        """The learner built and warmed up (imports) before part i's budget starts (procs.supervise)."""
        from learners.base import prepared_learner

        self._learners[i] = prepared_learner(self.learner)

    def __call__(self, i: int, send: Callable[[Any], None]) -> tuple[str, Any]:
        import pickle

        from learners.base import Budget, budget_cut, fit_with_seed, make_learner
        from learners.seeding import seed_everything
        from orchestrator.scheduling.worker import ModelReport, job_rng_seed

        def ship(model: Model) -> None:
            blob = pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)
            send(ModelReport(i, blob, model.describe(), model.rules()))

        view = self.tasks[i].learning_view()
        try:
            learner = self._learners.pop(i) if i in self._learners else make_learner(self.learner)
            seed = job_rng_seed(self.seed, 0)  # as the sweep's job with this seed, repeat 0
            seed_everything(seed)
            model = fit_with_seed(learner, view, Budget(self.seconds), ship, seed)
        except KeyError as e:  # bad input, e.g. the published ttcc4_legal has no train file
            return "input", str(e.args[0])
        return "ok", (pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL), budget_cut(model))


@dataclass(frozen=True)
class ScoreParts:
    """The work of ``orch learn``'s scoring child (GPU learners): item i unpickles ``blobs[i]`` and
    scores it on ``tasks[i]`` there, so this process never loads a GPU model (nor initialises CUDA)."""

    tasks: list[Task]
    blobs: list[bytes]

    def __call__(self, i: int, send: Callable[[Any], None]) -> tuple[str, Any]:
        import pickle

        from learners.metrics import evaluate

        model = pickle.loads(self.blobs[i])
        started = time.monotonic()
        results = evaluate(model, self.tasks[i], ("validate", "test"))
        return "ok", (results, time.monotonic() - started, model.describe(), model.rules())


def _learned(out: Outcome, shipped: list[bytes], where: str) -> tuple[bytes, str, int, float]:
    """(pickled model, status, reports, seconds) of a learning child's outcome, or the OrchError to raise.

    Each reported model is shipped out of the child as it is reported, so a learner stopped at the
    budget (status ``timeout``) still yields its best model; without one that is an error.
    """
    if out.kind == "ok":  # (pickled model, whether the budget cut it: learners.base.budget_cut)
        blob, cut = out.payload
        return blob, "timeout" if cut else "ok", len(shipped), out.seconds
    if out.kind == "timeout":
        if not shipped:
            raise OrchError(f"{where}: the budget ran out before the learner reported any model", EXIT_FAILED)
        return shipped[-1], "timeout", len(shipped), out.seconds
    if out.kind == "input":
        raise OrchError(f"{where}: {out.payload}")
    if out.kind in ("error", "oom"):
        raise OrchError(f"{where}: {out.last_line()}", EXIT_FAILED)
    raise OrchError(f"{where}: {out.died()[1]}", EXIT_FAILED)


def _learn_in_children(
    learner: str, parts: list[Task], seconds: float | None, start_method: str, seed: int = 0
) -> list[tuple[bytes, str, int, float]]:
    """Fit ``learner`` on each part in supervised children (orch run's worker), each part killed at
    its deadline: (pickled model, status, reports, seconds) per part."""
    from orchestrator.scheduling.worker import ModelReport
    from procs.supervise import run_supervised

    shipped: dict[int, list[bytes]] = {}

    def keep(message: Any) -> None:
        if isinstance(message, ModelReport):
            shipped.setdefault(message.item, []).append(message.blob)

    deadline = math.inf if seconds is None else seconds
    outs = run_supervised(len(parts), LearnParts(learner, parts, seconds, seed), lambda i: deadline, None, keep,
                          start_method=start_method)  # fmt: skip
    return [
        _learned(out, shipped.get(i, []), f"{learner} on {part.name}")
        for i, (part, out) in enumerate(zip(parts, outs, strict=True))
    ]


def _counts_json(c: Counts) -> dict:
    return {**c.as_dict(), "balanced_accuracy": c.balanced_accuracy, "perfect": c.perfect}


def learn(
    game: str = typer.Option(..., "--game", "-g", help="Game name, e.g. minimal_decay."),
    target: str = typer.Option(..., "--target", "-t", help="goal, legal, next or terminal."),
    learner: str = typer.Option(
        "knn5", "--learner", "-l", help="A registered learner name (orch learners list)."
    ),
    dataset: Path | None = typer.Option(
        None,
        "--dataset",
        "-d",
        help="A directory in the IGGP layout, or graphlog:DIR (GraphLog worlds); default: the bundled games.",
    ),
    predicate: str | None = typer.Option(
        None, "--predicate", "-p", help="Learn one flattened predicate only."
    ),
    budget: float | None = budget_option(
        "60s",
        "Hard wall-clock limit on learning (60s, 30m, 1h, or none): the learner is stopped at it.",
        "-b",
    ),
    seed: int = typer.Option(0, "--seed", help="The seed, as `orch run --seed` gives a job (repeat 0)."),
    as_json: bool = typer.Option(False, "--json", help="One JSON document instead of tables."),
) -> None:
    """Fit one learner on one task's train split and score validate and test.

    The learner runs in a child process that is stopped at the budget, as every job of `orch run`
    is; a stopped learner is scored with the last model it reported.
    """
    from learners.base import UnknownLearner, learner_applies, make_learner
    from orchestrator.cli.preflight import check_applicability, check_requirements

    try:
        learner = resolve_learner(learner)  # case-insensitive, with suggestions and the name forms
        learner_obj = make_learner(learner)
    except (UnknownLearner, UnknownName) as e:
        raise OrchError(str(e)) from None
    except ValueError as e:
        raise OrchError(f"learner {learner!r}: {e}") from None
    seconds = budget
    # what the registration alone tells, before any data is read (exit 2; orchestrator/cli/preflight.py)
    check_requirements([learner])
    check_applicability([learner], dataset, source_label(dataset))
    task = _load_task(dataset, game, target, predicate)
    applies, why = learner_applies(learner_obj, task)
    if not applies:
        raise OrchError(f"{learner} does not apply to {task.name}: {why}")
    if "train" in task.missing:  # e.g. the published ttcc4_legal_train.dat: nothing to learn from
        raise OrchError(f"{task.name}: {task.missing['train']}")
    # As a sweep does: one fit per flattened predicate, each within the budget, counts pooled per task
    # (ILP learners only take one predicate at a time; the others give the sweep's numbers this way).
    parts = [task] if len(task.predicates) == 1 else [task.for_predicate(p) for p in task.predicates]
    fits = _fit_parts(learner, parts, seconds, seed)
    results: dict[str, dict[str, Counts]] = {}
    for fit in fits:
        for split, counts in fit["results"].items():
            results.setdefault(split, {}).update(counts)
    learned = _Learned(task, learner, predicate, seconds, fits, results)
    if as_json:
        typer.echo(json.dumps(learned.as_json(), indent=2))
    else:
        learned.print()


@dataclass
class _Learned:
    """What ``orch learn`` found: per-predicate fits and the counts pooled per split, printed as
    tables or as one JSON document."""

    task: Task
    learner: str
    predicate: str | None
    seconds: float | None
    fits: list[dict]
    results: dict[str, dict[str, Counts]]

    @property
    def status(self) -> str:
        return "timeout" if any(f["status"] == "timeout" for f in self.fits) else "ok"

    def as_json(self) -> dict:
        from learners.metrics import pool

        fits, task = self.fits, self.task
        return {
            "game": task.game,
            "target": task.target,
            "predicate": self.predicate,
            "learner": self.learner,
            "budget_s": self.seconds,
            "status": self.status,
            "learn_s": sum(f["learn_s"] for f in fits),
            "eval_s": sum(f["eval_s"] for f in fits),
            "reports": sum(f["reports"] for f in fits),
            "model": fits[0]["model"]
            if len(fits) == 1
            else "; ".join(f"{f['predicate']}: {f['model']}" for f in fits),
            "rules": _program(fits),  # as stored: escaped names, so it runs on the task's files
            "rules_gdl": _gdl(_program(fits)),  # the same rules in the game's own spelling
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
                for split, counts in self.results.items()
            },
        }

    def print(self) -> None:
        fits, task, seconds = self.fits, self.task, self.seconds
        learn_s, eval_s = sum(f["learn_s"] for f in fits), sum(f["eval_s"] for f in fits)
        console = pipe_console()
        console.print(f"[bold]{task.describe()}[/bold]")
        for split, why in task.missing.items():
            console.print(f"[yellow]missing {split} split: {why}[/yellow]")
        each = f"{len(fits)} predicates, budget {format_duration(seconds)} each" if len(fits) > 1 else None
        console.print(
            f"{self.learner}: learned in {learn_s:.2f}s ({each or 'budget ' + format_duration(seconds)}"
            f"{', stopped at the budget' if self.status == 'timeout' else ''}, "
            f"{sum(f['reports'] for f in fits)} reported model(s)), scored in {eval_s:.2f}s"
        )
        for f in fits:
            console.print(
                f"model{' of ' + f['predicate'] if len(fits) > 1 else ''}: {f['model']}", highlight=False
            )
        console.print(_results_table(task, self.learner, self.results))
        program = _program(fits)
        if program:
            console.print("[bold]rules[/bold]")
            console.print(_gdl(program), markup=False, highlight=False, soft_wrap=True)


def _fit_parts(learner: str, parts: list[Task], seconds: float | None, seed: int = 0) -> list[dict]:
    """Fit ``learner`` on each (sub-)task under the hard budget and score validate and test.

    A GPU learner (:func:`orchestrator.scheduling.worker.start_method_for`) learns and is scored in
    spawned children, all parts in one series each (a spawn costs an interpreter and torch): this
    process never initialises CUDA, whatever the number of predicates. Other learners fit each part
    in a forked child and are scored here, as ``orch run``'s jobs are scored in a child of the actor.
    """
    from orchestrator.scheduling.worker import start_method_for

    if start_method_for(learner) == "fork":
        return [_fit(learner, part, seconds, seed) for part in parts]
    learned = _learn_in_children(learner, parts, seconds, "spawn", seed)
    scored = _score_in_children(learner, parts, [blob for blob, *_ in learned])
    return [
        _fit_row(part, status, reports, learn_s, *score)
        for part, (_, status, reports, learn_s), score in zip(parts, learned, scored, strict=True)
    ]


def _fit(learner: str, task: Task, seconds: float | None, seed: int = 0) -> dict:
    """Fit ``learner`` on one (sub-)task in a forked child under the hard budget; score validate and test here."""
    import pickle

    from learners.metrics import evaluate

    [(blob, status, reports, learn_s)] = _learn_in_children(learner, [task], seconds, "fork", seed)
    model = pickle.loads(blob)
    started = time.monotonic()
    results = evaluate(model, task, ("validate", "test"))
    return _fit_row(task, status, reports, learn_s, results, time.monotonic() - started, model.describe(),
                    model.rules())  # fmt: skip


def _fit_row(
    task: Task, status: str, reports: int, learn_s: float, results: dict, eval_s: float, describe: str,
    rules: str | None,
) -> dict:  # fmt: skip
    return {
        "predicate": task.predicates[0] if len(task.predicates) == 1 else None,
        "status": status,
        "learn_s": learn_s,
        "eval_s": eval_s,
        "reports": reports,
        "model": describe,
        "rules": rules,
        "results": results,
    }


def _score_in_children(learner: str, parts: list[Task], blobs: list[bytes]) -> list[tuple]:
    """Score a GPU learner's pickled models in spawned children: (results, seconds, describe, rules) each."""
    from procs.supervise import run_supervised

    outs = run_supervised(
        len(parts), ScoreParts(parts, blobs), lambda i: math.inf, None, start_method="spawn"
    )
    for part, out in zip(parts, outs, strict=True):
        if out.kind != "ok":
            why = out.last_line() if out.kind in ("error", "oom") else out.died()[1]
            raise OrchError(f"{learner} on {part.name}: scoring the model failed: {why}", EXIT_FAILED)
    return [out.payload for out in outs]


def _program(fits: list[dict]) -> str | None:
    """The whole target's program: each predicate's rules, under a comment naming the predicate."""
    if len(fits) == 1:
        return fits[0]["rules"]
    blocks = [f"% {f['predicate']}\n{f['rules'].rstrip()}" for f in fits if f["rules"]]
    return "\n".join(blocks) if blocks else None


def _gdl(program: str | None) -> str | None:
    """``program`` with every escaped name back in its GDL spelling (docs/gdl.md, tasks.escape)."""
    from tasks.escape import unescape_text

    return None if program is None else unescape_text(program)


def _results_table(task: Task, learner: str, results: dict[str, dict[str, Counts]]) -> Table:
    from learners.metrics import pool
    from tasks.escape import unescape_predicate

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
            row(split, unescape_predicate(p), c)
        row(split, "pooled (task)", pool(counts.values()), style="bold")
    return table
