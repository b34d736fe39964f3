"""Probe GDL rulesheets: does each one play, and does the compiled engine agree with clingo?

For each game file `probe_game` parses and checks it, grounds and compiles it, plays seeded random
playouts, and cross-checks the compiled engine against a direct clingo solve of the rules
(`tasks.gdl.clingo_engine.ClingoEngine`) on every visited state (legal, goal and terminal; legal and
goal for the declared roles only) and on the joint move taken there (next). `probe_isolated` does
the same in a forked child under a wall-clock limit, so one game that grounds for ever or eats
memory cannot stop a run over a whole corpus; the child dies with its parent (`procs.child`).

A game whose whole grounding exceeds the bound is played by the per-state engine
(`tasks.gdl.perstate`, one grounding per state; column ``engine`` says ``per-state``), and
cross-checked against a direct clingo solve of the plain rules on each visited state
(`cross_check_per_state`); its playouts and checks stop early to fit the per-game time limit.
Where the rules do not even ground without a state, the per-state engine grounds them
demand-driven (`tasks.gdl.demand`; ``per-state (demand-driven)``), and the reference solves the
plain rules with the same rewrite.

Statuses:

* ``plays``: every check agreed.
* ``plays-anyway``: as ``plays``, but only after a documented leniency for a harmless spec
  violation (``Game(..., lenient=True)``; see docs/gdl.md).
* ``rejected``: the file breaks the GDL spec (a `GDLError`, whose text names file:line:col, the rule
  and the spec rule broken), or a single state does not ground within the per-state bound.
* ``timeout``: the whole probe exceeded the per-game limit (or checked no state within it).
* ``disagrees``: the compiled engine and clingo differ somewhere (a bug in orch, never the game's).
* ``error``: anything else (a bug in orch).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from procs.child import start_child
from tasks.gdl.errors import GDLError

GAME_SUFFIXES = (".kif", ".txt", ".gdl")
STATUSES = ("plays", "plays-anyway", "rejected", "timeout", "disagrees", "error")
PLAYS = ("plays", "plays-anyway")


@dataclass
class ProbeResult:
    """One game's probe outcome (one row of `orch games probe`)."""

    game: str
    path: str
    status: str = "error"
    engine: str | None = None
    """Which engine played: ``compiled`` (whole grounding), ``per-state`` (`tasks.gdl.perstate`) or
    ``per-state (demand-driven)`` (per state, with `tasks.gdl.demand`'s rewrite)."""
    roles: int | None = None
    fluents: int | None = None
    ground_s: float | None = None
    """Ground and compile, wall-clock seconds (the grounding child included). Per-state engine:
    the whole grounding that exceeded its bound plus the per-state engine's start."""
    playouts_per_s: float | None = None
    agreement: float | None = None
    """Share of the cross-checked queries (states and joint moves) on which both engines agree."""
    checked: int = 0
    reference_ratio: float | None = None
    """Compiled engine speed over the clingo reference (states per second, same visited states)."""
    reason: str = ""
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


def game_files(paths: Iterable[str | Path]) -> list[Path]:
    """The game files named, or found (non-recursively, sorted) in the folders named."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.suffix.lower() in GAME_SUFFIXES and f.is_file()))
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"{p}: no such game file or folder")
    return out


def _first_line(e: BaseException) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__


def probe_game(
    path: str | Path,
    playouts: int = 10,
    max_steps: int = 60,
    seed: int = 0,
    ground_seconds: float = 60.0,
    check_states: int = 200,
    lenient: bool = True,
    time_limit: float | None = None,
    demand: bool = False,
) -> ProbeResult:
    """Probe one game in this process (see the module docstring); never raises for bad GDL.

    ``time_limit`` (seconds, from the start) only bounds the per-state engine's playouts and
    cross-check, which stop early to report what they did within it (`probe_isolated` sets it).
    ``demand`` plays every game on the demand-driven per-state engine and checks it against the
    plain rules (`Game.to_asp`): the differential test of `tasks.gdl.demand` itself.
    """
    from tasks.gdl.engine import Engine
    from tasks.gdl.game import Game
    from tasks.gdl.perstate import PerStateEngine

    path = Path(path)
    res = ProbeResult(game=path.stem, path=str(path))
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                game = Game.from_file(path)
                anyway = False
            except GDLError as strict_error:
                if not lenient:
                    raise
                game = Game.from_file(path, lenient=True)  # raises the same error if not harmless
                anyway = True
                res.warnings.append(f"played anyway: {_first_line(strict_error)}")
            tg = time.perf_counter()
            engine: Engine | PerStateEngine
            if demand:
                engine = PerStateEngine(game, why="demand-driven grounding asked for", demand=True)
            else:
                engine = game.play_engine(ground_seconds=ground_seconds)
            res.engine = engine.kind
            res.roles, res.ground_s = len(engine.roles), engine.ground_seconds
            if isinstance(engine, PerStateEngine):  # the whole grounding that failed counts too
                res.ground_s = time.perf_counter() - tg
                if engine.demand_driven:
                    res.engine = "per-state (demand-driven)"
            tp = time.perf_counter()
            if isinstance(engine, PerStateEngine):
                res.warnings.append(f"per-state engine: {engine.why}")
                reference = game.to_asp() if demand else _reference_asp(game, engine)
                if engine.asp == reference:  # no unfolding, no projection applied
                    res.warnings.append(
                        "per-state engine: it grounds the same program text as the clingo reference, "
                        "so the cross-check compares two code paths, not two encodings"
                    )
                since_start = time.perf_counter() - t0
                deadline = None if time_limit is None else time.monotonic() - since_start + 0.85 * time_limit
                # playouts get half of what is left, the cross-check the rest
                half = None if deadline is None else time.monotonic() + (deadline - time.monotonic()) / 2
                traces = engine.playouts(playouts, max_steps=max_steps, seed=seed, deadline=half)
                res.playouts_per_s = len(traces) / max(time.perf_counter() - tp, 1e-9)
                agree, checked = cross_check_per_state(
                    game, engine, traces, check_states, deadline, reference
                )
                ratio = None
                engine.close()
            else:
                traces = engine.playouts(playouts, max_steps=max_steps, seed=seed)
                res.playouts_per_s = playouts / max(time.perf_counter() - tp, 1e-9)
                agree, checked, ratio = cross_check(game, engine, traces, check_states, ground_seconds)
            res.fluents = len(engine.fluents)
            res.agreement, res.checked, res.reference_ratio = agree / max(checked, 1), checked, ratio
            res.warnings += [str(w.message) for w in caught if w.category is not DeprecationWarning]
        if checked == 0:
            res.status, res.reason = "timeout", "no state was cross-checked within the time limit"
        elif agree < checked:
            res.status, res.reason = "disagrees", f"{checked - agree} of {checked} queries differ from clingo"
        else:
            res.status = "plays-anyway" if anyway else "plays"
            if anyway:
                res.reason = "played anyway: " + "; ".join(game.leniencies)
            if res.engine == "per-state":
                res.reason = "; ".join(
                    x for x in ("per-state engine (whole grounding too big)", res.reason) if x
                )
            elif res.engine == "per-state (demand-driven)":
                too_big = "asked for" if demand else "whole grounding and grounding without a state too big"
                why = f"per-state engine, demand-driven ({too_big})"
                res.reason = "; ".join(x for x in (why, res.reason) if x)
    except GDLError as e:
        res.status, res.reason = "rejected", _first_line(e)
    except Exception as e:  # noqa: BLE001 - a probe reports every failure as a row
        res.status, res.reason = "error", f"{type(e).__name__}: {_first_line(e)}"
    res.seconds = time.perf_counter() - t0
    return res


def cross_check(
    game, engine, traces, check_states: int, ground_seconds: float
) -> tuple[int, int, float | None]:
    """(agreeing queries, queries, compiled/clingo speed ratio) over the traces' states and moves.

    A query is one visited state with the joint move taken there (or none at the last state):
    legal and goal (declared roles only) and terminal in the state, next after the move.
    """
    import numpy as np

    from tasks.gdl.clingo_engine import ClingoEngine

    ref = ClingoEngine(game, ground_seconds, ground=engine.ground)
    ref_ix = {f: i for i, f in enumerate(ref.fluents)}
    roles = set(engine.roles)
    agree = checked = 0
    compiled_s = reference_s = 0.0
    for tr in traces:
        for t in range(len(tr.states)):
            if checked >= check_states:
                break
            s = tr.states[t]
            joint = tr.moves[t] if t < len(tr.moves) else None
            names = engine.state_fluents(s)
            c0 = time.perf_counter()
            mine = _compiled(engine, s, joint)
            c1 = time.perf_counter()
            rs = np.zeros(len(ref.fluents), dtype=bool)
            rs[[ref_ix[f] for f in names]] = True
            rjoint = None
            if joint is not None:
                rjoint = [ref.moves[r].index(engine.moves[r][m]) for r, m in enumerate(joint)]
            theirs = {a for a in ref.derived(rs, rjoint) if _for_roles(a, roles)}
            reference_s += time.perf_counter() - c1
            compiled_s += c1 - c0
            if joint is None:
                theirs = {a for a in theirs if not a.startswith("next(")}
            checked += 1
            agree += mine == theirs
    ratio = reference_s / compiled_s if compiled_s > 0 and checked else None
    return agree, checked, ratio


def cross_check_per_state(
    game, engine, traces, check_states: int, deadline: float | None = None, reference: str | None = None
) -> tuple[int, int]:
    """(agreeing queries, queries) of the per-state engine against a direct clingo solve.

    The reference grounds the game's plain rules (`Game.to_asp`: no unfolding, no projections)
    with just this state's facts (`tasks.gdl.exact.evaluate_by_solving`); the engine grounds the
    unfolded, projected program in its own worker. A demand-driven engine is checked against the
    plain rules with the demand rewrite only (`Game.asp_demand_plain`), since the plain rules
    do not ground with a state either. Queries as in `cross_check`; past ``deadline``
    (`time.monotonic`) no new query starts. ``reference`` overrides the program solved.
    """
    from tasks.gdl.exact import evaluate_by_solving

    asp, roles = reference or _reference_asp(game, engine), set(engine.roles)
    agree = checked = 0
    for tr in traces:
        for t in range(len(tr.states)):
            if checked >= check_states or (deadline is not None and checked and time.monotonic() > deadline):
                return agree, checked
            fluents = engine.state_fluents(tr.states[t])
            does = None
            if t < len(tr.moves):
                does = {engine.roles[r]: engine.moves[r][m] for r, m in enumerate(tr.moves[t])}
            mine = engine.evaluate(fluents, does)
            theirs = evaluate_by_solving(asp, fluents, does or {})
            theirs = {k: sorted(a for a in v if _for_roles(a, roles)) for k, v in theirs.items()}
            if does is None:
                mine["next"] = theirs["next"] = []
            checked += 1
            agree += mine == theirs
    return agree, checked


def _reference_asp(game, engine) -> str:
    """The program the per-state cross-check solves directly (`cross_check_per_state`)."""
    return game.asp_demand_plain if engine.demand_driven else game.to_asp()


def _for_roles(atom: str, roles: set[str]) -> bool:
    if atom.startswith(("legal(", "goal(")):
        from tasks.gdl.terms import parse_ground

        return parse_ground(atom)[1][0][0] in roles
    return True


def _compiled(engine, s, joint) -> set[str]:
    out = set()
    for r, (role, ids) in enumerate(zip(engine.roles, engine.legal(s), strict=True)):
        out |= {f"legal({role},{engine.moves[r][i]})" for i in ids}
    v = engine._load(s[None])
    for role, rows in zip(engine.roles, engine._goal_rows, strict=True):
        out |= {f"goal({role},{value})" for value, a in rows if v[a, 0] & 1}
    if engine.terminal(s):
        out.add("terminal")
    if joint is not None:
        out |= {f"next({f})" for f in engine.state_fluents(engine.next(s, joint))}
    return out


def _child(conn, path: str, kwargs: dict) -> None:  # pragma: no cover - runs in the forked child
    try:
        conn.send(probe_game(path, **kwargs))
    except BaseException as e:  # noqa: BLE001
        conn.send(ProbeResult(game=Path(path).stem, path=path, reason=f"{type(e).__name__}: {e}"))
    finally:
        conn.close()


def probe_isolated(path: str | Path, time_limit: float = 120.0, **kwargs) -> ProbeResult:
    """`probe_game` in a forked child, stopped (with its grounding child) after ``time_limit`` s."""
    kwargs = {"time_limit": time_limit, **kwargs}
    t0 = time.perf_counter()
    child = start_child(_child, (str(path), kwargs))
    try:
        if child.channel.poll(time_limit + 5.0):  # the probe keeps to time_limit itself; 5 s to report
            try:
                return child.channel.recv()
            except EOFError:
                child.wait(1.0)
                return ProbeResult(
                    Path(path).stem, str(path), reason=f"probe crashed (exit {child.exitcode})"
                )
        return ProbeResult(
            Path(path).stem, str(path), status="timeout", reason=f"probe exceeded {time_limit:.0f} s",
            seconds=time.perf_counter() - t0,
        )  # fmt: skip
    finally:
        child.close()  # its process group, and its grounding child (which dies with it)


def summary(results: list[ProbeResult]) -> dict:
    """Shares and medians over a probe run (what bench/bench_gdl_corpus.py prints)."""
    import numpy as np

    n = len(results)
    plays = [r for r in results if r.status in PLAYS]

    def pct(xs: list[float], q: float) -> float | None:
        return float(np.percentile(xs, q)) if xs else None

    ground = [r.ground_s for r in plays if r.ground_s is not None]
    speed = [r.playouts_per_s for r in plays if r.playouts_per_s is not None]
    ratio = [r.reference_ratio for r in plays if r.reference_ratio is not None]
    return {
        "games": n,
        "plays": len(plays),
        "plays_per_state": sum((r.engine or "").startswith("per-state") for r in plays),
        "plays_demand_driven": sum(r.engine == "per-state (demand-driven)" for r in plays),
        "play_share": len(plays) / n if n else 0.0,
        "statuses": {s: sum(r.status == s for r in results) for s in STATUSES},
        "ground_s_median": pct(ground, 50),
        "ground_s_p90": pct(ground, 90),
        "playouts_per_s_median": pct(speed, 50),
        "playouts_per_s_p90": pct(speed, 90),
        "reference_ratio_median": pct(ratio, 50),
        "reference_ratio_p90": pct(ratio, 90),
    }
