"""Hand-made tiny datasets in the published layout, for scheduler tests and benchmarks.

Every game has the target ``next`` with two flattened predicates (``next_p``, ``next_q``) and
``goal`` with one, and three examples per split: small enough that a job's data costs nothing,
real enough that the actor parses, caches and scores it like published data.
"""

from __future__ import annotations

from pathlib import Path

from tasks.iggp import DatFile, write_dat

_CONSTANTS = ("a", "b", "c")


def _next_file(shift: int) -> DatFile:
    atoms = [f"next_p({c})" for c in _CONSTANTS] + [f"next_q({c})" for c in _CONSTANTS]
    examples = []
    for i, c in enumerate(_CONSTANTS):
        d = _CONSTANTS[(i + shift) % 3]
        examples.append(([f"true_p({c})", f"true_q({d})"], [f"next_p({d})", f"next_q({c})"]))
    return DatFile(atoms, ["succ(a, b)", "succ(b, c)"], examples)


def _goal_file() -> DatFile:
    atoms = [f"goal({c}, {s})" for c in ("x", "o") for s in ("0", "100")]
    examples = [([f"true_p({c})"], ["goal(x, 100)", "goal(o, 0)"]) for c in _CONSTANTS]
    return DatFile(atoms, [], examples)


def write_tiny_dataset(root: Path, games: tuple[str, ...] = ("alpha", "beta", "gamma")) -> Path:
    """Write ``games`` under ``root`` in the published layout; return ``root``."""
    for split in ("train", "validate", "test"):
        (root / "data" / split).mkdir(parents=True, exist_ok=True)
    for k, game in enumerate(games):
        for split in ("train", "validate", "test"):
            write_dat(root / "data" / split / f"{game}_next_{split}.dat", _next_file(k + 1))
            write_dat(root / "data" / split / f"{game}_goal_{split}.dat", _goal_file())
    return root


def copy_bundled_game(game: str, out: Path) -> Path:
    """One bundled game (its .dat files, GDL and .typ) as a dataset directory of its own at ``out``."""
    import shutil

    from tasks.bundled import dataset as bundled

    root = Path(bundled().root)
    for split in ("train", "validate", "test"):
        (out / "data" / split).mkdir(parents=True)
        for f in (root / "data" / split).glob(f"{game}_*.dat"):
            shutil.copy(f, out / "data" / split / f.name)
    for sub, ext in (("games", "txt"), ("types", "typ")):
        (out / sub).mkdir()
        shutil.copy(root / sub / f"{game}.{ext}", out / sub / f"{game}.{ext}")
    return out
