"""The project's own GDL games, written for orch: the embedded default task source.

Each game is a ``NAME.txt`` (GDL) beside its ``NAME.typ`` (type signature, in the dataset's
syntax). Together they cover what the learners must cope with:

============  ==========================================================================
pennies       simultaneous moves, a score counter with succ, recursion (``less``)
race          turn taking on a counter (add one or two with succ), negation
hanoi         one-player puzzle, recursion (``lt``), negation (``covered``), step counter
bridge        turn-taking connection board, recursion (``reach``), ``or``, negation
lights        one-player puzzle, ``or`` and negation (toggling), step counter
tag           simultaneous moves on a track, ``or`` (meet or swap), a clock with succ
============  ==========================================================================

:func:`dataset` generates their tasks once (Algorithm 1, :mod:`tasks.generate`) into
``$ORCH_CACHE/bundled/<hash>/`` (default ``~/.cache/orch/bundled/<hash>/``) in the published
layout and returns a :class:`tasks.iggp.Dataset` over it. The hash covers the game files, the
generator's source and the generation parameters, so editing a game regenerates its cache.
Generation writes into a temporary directory that is renamed into place, so concurrent callers
(e.g. Ray workers) never see a half-written dataset.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: Generation parameters of the bundled dataset (the paper's: 1000 episodes of at most 100 steps).
EPISODES, STEPS, SEED = 1000, 100, 0


def games() -> list[str]:
    """Names of the bundled games (those with both a ``.txt`` and a ``.typ``)."""
    return sorted(p.stem for p in HERE.glob("*.txt") if p.with_suffix(".typ").exists())


def game_file(name: str) -> Path:
    return _existing(HERE / f"{name}.txt", name)


def types_file(name: str) -> Path:
    return _existing(HERE / f"{name}.typ", name)


def _existing(path: Path, name: str) -> Path:
    if not path.exists():
        import difflib

        close = difflib.get_close_matches(name, games(), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f"; bundled games: {', '.join(games())}"
        raise KeyError(f"no bundled game {name!r}{hint}")
    return path


def cache_root() -> Path:
    from tasks.cache import cache_dir

    return cache_dir("bundled")


def content_hash(episodes: int = EPISODES, steps: int = STEPS, seed: int = SEED) -> str:
    """Hash of every bundled game file, the generator's source and the parameters."""
    import tasks.generate

    h = hashlib.blake2b(digest_size=8)
    h.update(f"{episodes}/{steps}/{seed}".encode())
    for p in sorted(HERE.glob("*.txt")) + sorted(HERE.glob("*.typ")) + [Path(tasks.generate.__file__)]:
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def dataset(episodes: int = EPISODES, steps: int = STEPS, seed: int = SEED):
    """The bundled games' tasks as a :class:`tasks.iggp.Dataset`, generated on first use."""
    from tasks.generate import generate_game
    from tasks.iggp import Dataset

    target = cache_root() / content_hash(episodes, steps, seed)
    if not (target / "data").is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
        try:
            for name in games():
                generate_game(game_file(name), types_file(name), tmp, episodes, steps, seed)
            try:
                tmp.rename(target)
            except OSError:
                if not (target / "data").is_dir():  # not a concurrent winner: a real failure
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return Dataset(target)
