"""`orch games`: list a dataset's games, generate tasks from GDL (Algorithm 1), and oracle-check data.

With no ``--dataset`` the commands use the bundled games (generated once into the cache).
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from orchestrator.cli.errors import OrchError
from orchestrator.cli.output import console as pipe_console
from orchestrator.suggest import UnknownName, resolve_game, source_label

games_app = typer.Typer(
    help="IGGP games: list, generate tasks from GDL, check data against GDL.", no_args_is_help=True
)
console = pipe_console()  # full width off a terminal: nothing cut in a pipe
errors = pipe_console(stderr=True, soft_wrap=True)

DATASET_HELP = "An IGGP dataset directory in the published layout (default: the bundled games)."


def register(app: typer.Typer) -> None:
    """Add this module's commands to the `orch` app."""
    app.add_typer(games_app, name="games")


def _input_errors() -> tuple[type[BaseException], ...]:
    from tasks.gdl import GDLError
    from tasks.generate import GenerationError
    from tasks.iggp import DatError, UnknownGame
    from tasks.signature import SignatureError
    from tasks.sources import UnknownSource

    return (
        GDLError,
        GenerationError,
        DatError,
        UnknownGame,
        SignatureError,
        UnknownSource,
        FileNotFoundError,
        KeyError,
    )


def _open(dataset: str | None):
    from orchestrator.suggest import UnknownName, open_dataset
    from tasks.iggp import Dataset

    try:
        source = open_dataset(dataset)  # a packed ../shared/iggp says to run unpack first
    except UnknownName as e:
        raise OrchError(str(e)) from None
    if not isinstance(source, Dataset):
        raise OrchError(f"{dataset}: not an IGGP dataset (games commands need the published layout)")
    return source


def _where(dataset: str | None, ds) -> str:
    """The dataset as the user named it: "the bundled games", never their cache directory."""
    return source_label(dataset) if dataset is None or dataset == "bundled" else ds.root


def _count_examples(path: Path) -> int:
    """Examples in a ``.dat`` file, its structure checked: a binary, empty or truncated file is a
    :class:`tasks.iggp.DatError` naming it (one line, exit 2), never a wrong count."""
    from tasks.iggp import count_examples

    return count_examples(path)


@games_app.command("list")
def list_games(
    dataset: str | None = typer.Option(None, "--dataset", "-d", help=DATASET_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, tsv, md or csv (--json for JSON)."),
) -> None:
    """List the games: targets, examples per split, and whether the GDL is there."""
    try:
        ds = _open(dataset)
        rows = []
        for game in ds.games():
            targets: dict[str, dict[str, int | None]] = {}
            for target in ds.targets(game):
                files = ds.files(game, target)
                targets[target] = {split: _count_examples(p) for split, p in sorted(files.items())}
                for split in ds.missing_files(game, target):
                    targets[target][split] = None
            rows.append(
                {
                    "game": game,
                    "gdl": ds.game_file(game) is not None,
                    "types": ds.types_file(game) is not None,
                    "targets": targets,
                }
            )
    except _input_errors() as e:
        raise OrchError(str(e)) from None
    if as_json:
        typer.echo(json.dumps({"dataset": _where(dataset, ds), "games": rows}, indent=2))
        return
    bundled = dataset is None or dataset == "bundled"
    table = Table(title=f"{len(rows)} bundled games" if bundled else f"{len(rows)} games in {ds.root}")
    for col in ("game", "GDL", "types", "goal", "legal", "next", "terminal"):
        table.add_column(col, justify="right" if col in ("goal", "legal", "next", "terminal") else "left")
    shown = []
    for r in rows:
        cells = []
        for t in ("goal", "legal", "next", "terminal"):
            counts = r["targets"].get(t)
            cells.append(
                "-"
                if not counts
                else "/".join(
                    "missing" if counts.get(s) is None else str(counts[s])
                    for s in ("train", "validate", "test")
                )
            )
        table.add_row(r["game"], "yes" if r["gdl"] else "no", "yes" if r["types"] else "no", *cells)
        shown.append(dict(zip(("game", "GDL", "types", "goal", "legal", "next", "terminal"),
                              (r["game"], "yes" if r["gdl"] else "no", "yes" if r["types"] else "no", *cells),
                              strict=True)))  # fmt: skip
    if fmt != "table":  # plain rows for scripts (orchestrator/cli/output.py)
        from orchestrator.cli.output import print_rows

        print_rows(shown, fmt)
        return
    console.print(table)
    console.print("examples per target as train/validate/test")


@games_app.command("generate")
def generate(
    game: list[str] | None = typer.Argument(
        None,
        help="A GDL file (GAME.txt) or the name of a bundled game; with --all, folders of rulesheets "
        "(.kif/.txt/.gdl) or files.",
    ),
    types: Path | None = typer.Option(
        None,
        "--types",
        "-t",
        help="The type signature (default: GAME.typ beside GAME.txt; inferred from the GDL if there is none).",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Output directory (published layout)."),
    all_bundled: bool = typer.Option(
        False,
        "--all",
        help="Generate a corpus: every rulesheet in the given folders (none given: every bundled game), "
        "in parallel on Ray, with a manifest (docs/ggp-benchmark.md).",
    ),
    time_limit: float | None = typer.Option(
        None, "--time-limit", min=1.0, help="With --all: seconds per game; past it the game fails alone."
    ),
    episodes: int = typer.Option(1000, "--episodes", min=1, help="Random episodes per game."),
    steps: int = typer.Option(100, "--steps", min=1, help="Maximum joint moves per episode."),
    seed: int = typer.Option(0, "--seed", help="Seed of the playouts and of the 4:1:1 split."),
    local: bool = typer.Option(False, "--local", help="With --all: one game after another in this process."),
    address: str | None = typer.Option(None, "--address", help="With --all: a Ray cluster (default: local)."),
    num_cpus: int | None = typer.Option(None, "--num-cpus", help="With --all: CPUs of the local Ray."),
    memory_per_job: str | None = typer.Option(
        None,
        "--memory-per-job",
        help="With --all: resident-memory cap per game (e.g. 8GiB); past it the game fails alone as oom. "
        "Default on the local Ray: 90% of this machine's memory shared by the games running at once.",
    ),
    fresh: bool = typer.Option(
        False,
        "--fresh",
        help="With --all: generate every game again. Default: a rerun into the same OUT resumes, "
        "reusing each game already generated there from the same rulesheet, settings and generator code.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Generate IGGP tasks from GDL by random playouts (Algorithm 1) into OUT.

    One game runs here with a progress bar. --all fans the games out over Ray simulator tasks
    (one supervised process per game, so a broken game fails alone, with its reason) unless
    --local, and writes manifest.json/.parquet and run.json beside data/ (tasks/corpus.py).
    """
    try:
        jobs = _jobs(game or [], types, all_bundled)
        if all_bundled:
            cap = None if local else _memory_cap(memory_per_job, address, num_cpus)
            ray_args = None if local else RayArgs(address, num_cpus, time_limit, cap)
            summaries = _generate_corpus(jobs, out, episodes, steps, seed, ray_args, fresh, as_json)
            _write_manifest(jobs, summaries, out, seed, episodes, steps)
        else:
            summaries = _generate_here(jobs, out, episodes, steps, seed, as_json)
    except _input_errors() as e:
        raise OrchError(str(e).strip("'\"")) from None
    if as_json:
        typer.echo(json.dumps(summaries, indent=2))
    else:
        table = Table(title=f"generated into {out}")
        for col in (
            "game",
            "status",
            "states",
            "transitions",
            "goal",
            "legal",
            "next",
            "terminal",
            "seconds",
        ):
            table.add_column(col, justify="left" if col in ("game", "status") else "right")
        for s in summaries:
            counts = s.get("counts") or {}
            cells = [
                "/".join(str(counts[t][sp]) for sp in ("train", "validate", "test")) if t in counts else "-"
                for t in ("goal", "legal", "next", "terminal")
            ]
            table.add_row(s["game"], s["status"], str(s.get("distinct_states", "-")),
                          str(s.get("distinct_transitions", "-")), *cells, str(s.get("seconds", "-")))  # fmt: skip
        console.print(table)
        for s in summaries:
            if s["status"] != "ok":
                errors.print(f"[red]{s['game']}: {s['status']}[/red]: {s.get('error')}")
    if any(s["status"] != "ok" for s in summaries):
        raise typer.Exit(1)


def _bar(disable: bool) -> Progress:
    """The progress bar every long ``orch games`` command shows (on stderr; off with --json)."""
    return Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=errors, disable=disable,
    )  # fmt: skip


class RayArgs(NamedTuple):
    """Where and how ``--all`` runs on Ray."""

    address: str | None
    num_cpus: int | None
    time_limit: float | None  # seconds per game
    memory_cap: int | None  # resident bytes per game


def _generate_corpus(jobs, out: Path, episodes: int, steps: int, seed: int, ray_args: RayArgs | None,
                     fresh: bool, quiet: bool) -> list[dict]:  # fmt: skip
    """Every game of a corpus, on Ray (``ray_args``: address, CPUs, time limit, memory cap) or here.

    Each game records its result in OUT as it ends (`tasks.corpus.write_record`); unless ``fresh``,
    a game whose record this run would reproduce is not generated again: the 3 a.m. crash of a
    corpus that takes hours costs only the games that were running."""
    from tasks.corpus import record_key, reusable_record

    time_limit, cap = (ray_args.time_limit, ray_args.memory_cap) if ray_args else (None, None)
    keys = [record_key(g, t, seed=seed, episodes=episodes, steps=steps) for g, t in jobs]
    done: dict[int, dict] = {}
    for i, ((g, _), key) in enumerate(zip(jobs, keys, strict=True)):
        record = None if fresh else reusable_record(out, g.stem, key, time_limit=time_limit, memory_cap=cap)
        if record is not None:
            done[i] = record
    if done:
        errors.print(f"reusing {len(done)} of {len(jobs)} games already generated in {out} "
                     "(same rulesheet, settings and generator; --fresh generates them again)")  # fmt: skip
    todo = [i for i in range(len(jobs)) if i not in done]
    todo_jobs, todo_keys = [jobs[i] for i in todo], [keys[i] for i in todo]
    if not todo:
        new: list[dict] = []
    elif ray_args is None:
        new = _generate_here(todo_jobs, out, episodes, steps, seed, quiet, todo_keys)
    else:
        new = _generate_on_ray(todo_jobs, out, episodes, steps, seed, *ray_args, keys=todo_keys)
    done.update(zip(todo, new, strict=True))
    return [done[i] for i in range(len(jobs))]


def _generate_here(jobs, out: Path, episodes: int, steps: int, seed: int, quiet: bool,
                   keys: list[dict] | None = None) -> list[dict]:  # fmt: skip
    from tasks.corpus import write_record
    from tasks.generate import generate_game

    summaries = []
    with _bar(quiet) as progress:
        for i, (game_file, types_file) in enumerate(jobs):
            bar = progress.add_task(game_file.stem, total=episodes)
            summary = generate_game(game_file, types_file, out, episodes, steps, seed,
                                    progress=functools.partial(progress.advance, bar))  # fmt: skip
            summaries.append({"status": "ok", "error": None, **summary.as_dict()})
            if keys is not None:
                write_record(out, keys[i], summaries[-1], time_limit=None, memory_cap=None)
    return summaries


def _memory_cap(text: str | None, address: str | None, num_cpus: int | None) -> int | None:
    """The per-game memory cap: as given, else (local Ray only) 90% of this machine's memory over
    the games that run at once. Why a default: one game's playouts can take the whole node (a
    rulesheet with a large grounding), and Ray's own node-level OOM killer then kills and retries
    whichever games run beside it, without end; capped, the big game fails alone as ``oom``."""
    from orchestrator.scheduling.sweep import parse_bytes

    if text:
        return parse_bytes(text)
    if address is not None:
        return None
    import psutil

    parallel = num_cpus or os.cpu_count() or 1
    return int(0.9 * psutil.virtual_memory().total / parallel)


def _generate_on_ray(jobs, out: Path, episodes: int, steps: int, seed: int, address, num_cpus,
                     time_limit: float | None = None, memory_cap: int | None = None,
                     keys: list[dict] | None = None) -> list[dict]:  # fmt: skip
    from orchestrator.scheduling.generation import generate_games

    cap = f", {memory_cap / 2**30:.1f} GiB per game" if memory_cap else ""
    errors.print(f"generating {len(jobs)} games on Ray ({address or 'local'}{cap})")
    return generate_games(jobs, str(out), episodes=episodes, steps=steps, seed=seed, address=address,
                          num_cpus=num_cpus, timeout_s=time_limit, memory_per_job=memory_cap,
                          record_keys=keys)  # fmt: skip


def _jobs(paths: list[str], types: Path | None, corpus: bool) -> list[tuple[Path, Path | None]]:
    """(GDL file, .typ or None) per game: one game, the bundled games, or every rulesheet in folders."""
    from tasks import bundled
    from tasks.gdl.probe import game_files

    if not corpus:
        if len(paths) != 1:
            raise OrchError("give either one GAME (a .txt file or bundled game name) or --all")
        return [_resolve(paths[0], types)]
    if not paths:
        return [(bundled.game_file(n), bundled.types_file(n)) for n in bundled.games()]
    files = game_files([Path(p) for p in paths])
    if not files:
        raise OrchError(f"no .kif/.txt/.gdl game files in {', '.join(paths)}")
    stems = [f.stem for f in files]
    if len(set(stems)) < len(stems):
        dup = sorted({s for s in stems if stems.count(s) > 1})
        raise OrchError(f"two rulesheets would write the same game name: {', '.join(dup)}")
    return [(f, f.with_suffix(".typ") if f.with_suffix(".typ").is_file() else None) for f in files]


def _write_manifest(jobs, summaries: list[dict], out: Path, seed: int, episodes: int, steps: int) -> None:
    """The corpus manifest (tasks/corpus.py): deterministic rows, plus timing and commit apart."""
    from orchestrator import __version__
    from orchestrator.analysis.results import git_commit
    from tasks.corpus import manifest_row, write_manifest

    rows = [manifest_row(s, g, seed=seed, episodes=episodes, steps=steps, orch_version=__version__)
            for (g, _), s in zip(jobs, summaries, strict=True)]  # fmt: skip
    write_manifest(out, rows, {s["game"]: s.get("seconds") for s in summaries}, git_commit())


def _resolve(game: str, types: Path | None) -> tuple[Path, Path | None]:
    """A GDL path (with its .typ, or None: inferred) or a bundled game's files; clear errors otherwise."""
    from tasks import bundled

    path = Path(game)
    if path.suffix == "" and not path.exists():
        return bundled.game_file(game), types or bundled.types_file(game)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: GDL game file not found")
    typ = types or path.with_suffix(".typ")
    if types is not None and not typ.is_file():
        raise FileNotFoundError(f"{typ}: type signature not found")
    return path, typ if typ.is_file() else None  # None: inferred from the GDL (tasks.gdl.types)


@games_app.command("check")
def check(
    dataset: str | None = typer.Option(None, "--dataset", "-d", help=DATASET_HELP),
    games: str | None = typer.Option(
        None, "--games", "-g", help="Comma-separated game names (default: all)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Per-game, per-target agreement counts as JSON."),
    solver_fallback: bool = typer.Option(
        True,
        "--solver-fallback/--no-solver-fallback",
        help="Check a game whose grounding exceeds the engine's bound with the per-state engine (one "
        "clingo grounding per state, noted in its detail) instead of leaving it unchecked.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Exit 3 when a game is a known data defect (and nothing worse)."
    ),
    jobs: int = typer.Option(
        1,
        "--jobs",
        "-j",
        min=1,
        help="Games checked at once, each in its own process (a game that crashes or runs out of "
        "memory is then unchecked, alone). 1: one after another in this process.",
    ),
    memory_per_game: str | None = typer.Option(
        None,
        "--memory-per-game",
        help="With --jobs > 1: resident-memory cap per game (e.g. 8GiB; default: 90% of this "
        "machine's memory over --jobs).",
    ),
) -> None:
    """Evaluate each game's GDL on every published example and compare with the positives.

    Exit status: 1 if some game disagrees; 2 if none disagrees but some could not be checked (no
    GDL, or a missing file); 0 if every game agrees or is a diagnosed defect of the published data
    (status data-defect, its diagnosis printed; with --strict those exit 3).
    """
    from tasks.oracle import AGREE, STATUSES, exit_code

    try:
        ds = _open(dataset)
        names = [g.strip() for g in games.split(",") if g.strip()] if games else ds.games()
        names = [resolve_game(g, ds.games(), _where(dataset, ds)) for g in names]  # any case, suggestions
        with _bar(as_json) as progress:
            bar = progress.add_task("checking", total=len(names))
            results = _check_games(
                ds, names, solver_fallback, jobs, _memory_cap(memory_per_game, None, jobs) if jobs > 1 else None,
                on_start=lambda g: progress.update(bar, description=f"checking {g}"),
                on_done=lambda g: progress.advance(bar),
            )  # fmt: skip
    except _input_errors() + (UnknownName,) as e:
        raise OrchError(str(e).strip("'\"")) from None
    code = exit_code(results, strict=strict)
    tally = {s: sum(r.status == s for r in results) for s in STATUSES}
    if as_json:
        report = {
            "dataset": _where(dataset, ds),
            "exit_code": code,
            "statuses": tally,
            "data_defects": {r.game: r.defects for r in results if r.defects},
            "games": [r.as_dict() for r in results],
        }
        typer.echo(json.dumps(report, indent=2))
        raise typer.Exit(code)
    table = Table(title=f"oracle check of {_where(dataset, ds)}")
    for col in ("game", "status", "examples", "agree", "detail"):
        table.add_column(col, justify="right" if col in ("examples", "agree") else "left", overflow="fold")
    for r in results:
        counts = r.counts().values()
        style = {"agree": "green", "disagree": "red", "data-defect": "magenta"}.get(r.status, "yellow")
        table.add_row(
            r.game,
            f"[{style}]{r.status}[/{style}]",
            str(sum(c["examples"] for c in counts)),
            str(sum(c["agree"] for c in counts)),
            "" if r.status == AGREE and not r.notes else r.summary(),
        )
    console.print(table)
    console.print(", ".join(f"{n} {s}" for s, n in tally.items() if n))
    raise typer.Exit(code)


@dataclass(frozen=True)
class _CheckOne:
    """One game's oracle check as a supervised child's work (picklable: children are spawned, as
    the check runs from a thread pool)."""

    root: str
    game: str
    solver_fallback: bool

    def __call__(self, i: int, send: Callable[[Any], None]) -> tuple[str, Any]:
        from tasks.iggp import Dataset
        from tasks.oracle import check_game

        return "ok", check_game(Dataset(self.root), self.game, solver_fallback=self.solver_fallback)


def _check_games(ds, names: list[str], solver_fallback: bool, jobs: int, memory_cap: int | None,
                 on_start, on_done) -> list:  # fmt: skip
    """Each game's `tasks.oracle.GameResult`, in ``names``' order: one after another in this
    process (``jobs`` 1), else ``jobs`` at a time, each in a supervised child under ``memory_cap``;
    a child that fails (an error, out of memory, killed) makes its game ``unchecked``, with why."""
    from concurrent.futures import ThreadPoolExecutor

    from procs.supervise import run_one
    from tasks.oracle import UNCHECKED, GameResult, check_game

    def one(game: str) -> GameResult:
        on_start(game)
        if jobs == 1:
            result = check_game(ds, game, solver_fallback=solver_fallback)
        else:
            out = run_one(
                _CheckOne(ds.root, game, solver_fallback), math.inf, memory_cap, start_method="spawn"
            )
            if out.kind == "ok":
                result = out.payload
            else:
                why = out.last_line() if out.kind in ("error", "oom") else out.died()[1]
                result = GameResult(
                    game, status=UNCHECKED, reason=f"the check's process failed ({out.kind}): {why}"
                )
        on_done(game)
        return result

    if jobs == 1:
        return [one(g) for g in names]
    with ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(one, names))


@games_app.command("probe")
def probe(
    paths: list[Path] = typer.Argument(
        ..., metavar="PATH", help="GDL game files (.kif/.txt/.gdl) or folders of them."
    ),
    playouts: int = typer.Option(10, "--playouts", "-n", min=1, help="Seeded random playouts per game."),
    steps: int = typer.Option(60, "--steps", min=1, help="Maximum joint moves per playout."),
    seed: int = typer.Option(0, "--seed", help="Seed of the playouts."),
    time_limit: float = typer.Option(
        120.0, "--time-limit", min=1.0, help="Seconds per game (parse to cross-check); then it is a timeout."
    ),
    check_states: int = typer.Option(
        200, "--check-states", min=1, help="Visited states cross-checked against clingo per game."
    ),
    ground_seconds: float = typer.Option(
        60.0,
        "--ground-seconds",
        min=1.0,
        help="Grounding bound; a game over it is rejected naming its size and likely culprit relation.",
    ),
    strict: bool = typer.Option(
        False, "--strict", help="Reject harmless spec violations instead of playing anyway (docs/gdl.md)."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object: per-game rows and a summary."),
) -> None:
    """Parse, check, ground and play each game, cross-checking the engine against clingo.

    Each game runs in its own child process under --time-limit. Status: plays, plays-anyway (a
    documented leniency was needed), rejected (a GDL spec violation, or one state too big to
    ground, with file:line:col), timeout, disagrees, error. Column engine: compiled (whole game
    grounded within --ground-seconds) or per-state (one clingo grounding per state, the fallback
    for bigger games; fewer playouts fit the time limit), "per-state (demand-driven)" where even
    the rules without a state are too big (static relations grounded only as asked, docs/gdl.md).
    Exit status 1 if any game does not play.
    """
    from tasks.gdl.probe import PLAYS, game_files, probe_isolated, summary

    try:
        files = game_files(paths)
    except FileNotFoundError as e:
        raise OrchError(str(e)) from None
    if not files:
        raise OrchError(f"no .kif/.txt/.gdl game files in {', '.join(map(str, paths))}")
    results = []
    with _bar(as_json) as progress:
        bar = progress.add_task("probing", total=len(files))
        for f in files:
            progress.update(bar, description=f"probing {f.stem}")
            results.append(
                probe_isolated(f, time_limit, playouts=playouts, max_steps=steps, seed=seed,
                               ground_seconds=min(ground_seconds, time_limit), check_states=check_states, lenient=not strict)
            )  # fmt: skip
            progress.advance(bar)
    code = 0 if all(r.status in PLAYS for r in results) else 1
    if as_json:
        typer.echo(
            json.dumps({"summary": summary(results), "games": [r.as_dict() for r in results]}, indent=2)
        )
        raise typer.Exit(code)
    table = Table(title="GDL probe")
    cols = ("game", "status", "engine", "roles", "fluents", "ground s", "playouts/s", "agreement", "reason")
    for col in cols:
        table.add_column(
            col, justify="left" if col in ("game", "status", "reason") else "right", overflow="fold"
        )

    def num(x: float | int | None, fmt: str) -> str:
        return "" if x is None else format(x, fmt)

    for r in results:
        style = {"plays": "green", "plays-anyway": "cyan", "rejected": "yellow"}.get(r.status, "red")
        table.add_row(
            r.game, f"[{style}]{r.status}[/{style}]", r.engine or "", num(r.roles, "d"), num(r.fluents, "d"),
            num(r.ground_s, ".2f"), num(r.playouts_per_s, ".1f"),
            "" if r.agreement is None else f"{r.agreement:.0%} of {r.checked}",
            r.reason.replace(str(Path(r.path).parent) + "/", ""),
        )  # fmt: skip
    console.print(table)
    s = summary(results)
    console.print(f"{s['plays']} of {s['games']} play ({s['play_share']:.0%}); "
                  + ", ".join(f"{n} {k}" for k, n in s["statuses"].items() if n))  # fmt: skip
    raise typer.Exit(code)
