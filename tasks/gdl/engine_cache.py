"""Compiled engines kept on disk (``$ORCH_CACHE/engines``) for games that are slow to compile.

Why: the oracle (``reference``) and ``orch games check`` build a game's engine in every process
that needs it, and a benchmark runs each target of a game as its own job, in forked children that
die with their job (one to learn, one to score). racer grounds and compiles in 160 s on an idle
core (about 340 s beside other work), once per child: twelve times for its six ``next`` targets.
Its engine unpickles in 3 s. So an engine whose build took at least :data:`CACHE_SECONDS` is
stored, and later builds of the same game read it.

An entry is named by a hash of everything the build reads (the rules as ASP, the static
relations, the role order, the grounding flags, the extra fluents) and of the source of
:mod:`tasks.gdl` itself, so an edited rulesheet or engine never reads a stale entry. A cached
engine whose grounding took longer than the caller's bound is not used: the bound still decides
whether a game is "too big" (`tasks.gdl.errors.GroundingLimit`), as it would without the cache.
A grounding that ran past its bound is remembered too, with that bound, so that the next process
does not spend the bound again to learn the same (mummymaze1p: 300 s in each of the oracle's two
children, which left its scoring no time); a call with a longer bound tries again. A
missing, unreadable or unwritable cache (a full disk) only costs the build.
``ORCH_ENGINE_CACHE=off`` turns it off.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tasks.gdl.errors import GroundingLimit

if TYPE_CHECKING:
    from tasks.gdl.engine import Engine
    from tasks.gdl.groundable import Groundable

CACHE_SECONDS = 5.0
"""Engines that took at least this long to build are stored (faster ones are rebuilt)."""

CACHE_KEEP_BYTES = 8 * 2**30
"""Disk kept for engines; the least recently used beyond it are deleted after each write."""

VERSION = "engine-cache-v1"

_REMEMBERED = "remembered in $ORCH_CACHE/engines; a longer bound tries again"


def engine_cache() -> Path | None:
    """The engines' folder, or None when ``ORCH_ENGINE_CACHE`` is off."""
    if os.environ.get("ORCH_ENGINE_CACHE", "").lower() in ("0", "off", "no", "false"):
        return None
    from tasks.cache import cache_dir

    return cache_dir("engines")


@functools.cache
def _code_digest() -> bytes:
    """The source of tasks.gdl (this folder): an engine built by other code is another entry."""
    h = hashlib.sha256(VERSION.encode())
    for p in sorted(Path(__file__).parent.glob("*.py")):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.digest()


def engine_key(game: Groundable, extra_fluents: tuple[str, ...]) -> str:
    """A hash of what `tasks.gdl.engine.Engine` builds from: the game's grounding inputs and the code."""
    h = hashlib.sha256(_code_digest())
    parts = [
        game.asp_for_grounding,
        str(game.program.file),
        repr(sorted(game.static_relations)),
        repr(game.grounding_bounded),
        repr(game.role_order),
        repr(game.grounding_suspect),
        repr([(d.left, d.right) for d in game.program.asserted_distinct]),
        repr(extra_fluents),
    ]
    for part in parts:
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:32]


def cached_engine(game: Groundable, ground_seconds: float | None, extra_fluents: tuple[str, ...]) -> Engine:
    """``Engine(game, ground_seconds, extra_fluents)``, read from the cache when it was built before."""
    from tasks.gdl import engine as built

    root = engine_cache()
    if root is None:
        return built.Engine(game, ground_seconds, extra_fluents)
    path = root / f"{engine_key(game, extra_fluents)}.pickle"
    bound = built.GROUND_SECONDS if ground_seconds is None else ground_seconds  # the engine's default
    engine = _read(path, game, bound)
    if engine is not None:
        return engine
    t0 = time.monotonic()
    try:
        engine = built.Engine(game, ground_seconds, extra_fluents)
    except GroundingLimit as e:
        if e.timed_out and time.monotonic() - t0 >= CACHE_SECONDS:
            _write_state(path, {"grounding_limit": bound, "file": e.file, "msg": e.msg})
        raise
    if time.monotonic() - t0 >= CACHE_SECONDS:
        _write(path, engine)
    return engine


def _read(path: Path, game: Groundable, ground_seconds: float) -> Engine | None:
    from tasks.gdl.engine import Engine

    try:
        with open(path, "rb") as f:
            state = pickle.load(f)
        os.utime(path)  # recently used: pruned last
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    if "grounding_limit" in state:
        if ground_seconds > state["grounding_limit"]:
            return None  # a longer bound than the one that ran out: try again
        raise GroundingLimit(state["file"], 0, 0, f"{state['msg']} (an earlier attempt, {_REMEMBERED})")
    if state.get("ground_seconds", float("inf")) > ground_seconds:
        return None  # past the caller's bound: let the build say GroundingLimit, as without the cache
    engine = Engine.__new__(Engine)
    engine.__dict__.update(state)
    engine.game = game
    engine.warn_inferred_roles()
    return engine


def _write(path: Path, engine: Engine) -> None:
    _write_state(path, {k: v for k, v in engine.__dict__.items() if k != "game"})  # the game is set on read


def _write_state(path: Path, state: dict) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as f:
                pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)  # atomic: a reader sees a whole entry or none
        finally:
            tmp.unlink(missing_ok=True)
        _prune(path.parent)
    except (OSError, pickle.PicklingError, MemoryError):  # a full disk: the engine is right, just not kept
        pass


def _prune(root: Path) -> None:
    entries = sorted(root.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    kept = 0
    for i, p in enumerate(entries):
        kept += p.stat().st_size
        if kept > CACHE_KEEP_BYTES and i > 0:  # the newest (just written) stays, however big
            p.unlink(missing_ok=True)
