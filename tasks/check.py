"""The oracle check: does a game's GDL reproduce its published examples exactly?

For every (target, split) file of a game, and every example in it, the GDL rules are evaluated on
the example's background (its ``true_*`` fluents, plus the ``does*`` moves for next) and the
derived target atoms are compared with the published positives. The ``atoms:`` section must equal
ground(Σ, target) from the game's ``.typ``, and the ``statics:`` section the static relations of
the GDL. This is what makes the generator and the engine trustworthy: they must agree with the
authors' own generator on 100% of the examples of every game that has GDL.

Games that cannot be checked are reported as such, never as agreeing: a game with no GDL file
(only the authors' Prolog ``.pl``), an unparsable GDL, or a missing split file (the published
``ttcc4_legal_train.dat``); the other targets of a game with a missing file are still checked.

Dataset games map to ``games/GAME.txt``. (The published sokoban data mixes playouts of several
maps whose targets are fluents; ``games/sokoban.txt`` has the full rules and checks it. Files such
as ``sokoban_core.txt`` or ``minimal_sokoban_map1.txt`` belong to no dataset game.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tasks.gdl import Game, GDLError, flatten, unflatten
from tasks.generate import dataset_statics
from tasks.iggp import Dataset, DatError, read_dat
from tasks.signature import SignatureError, parse_typ
from tasks.task import SPLITS, TARGETS, predicate_of

AGREE, DISAGREE, UNCHECKED, PARTIAL = "agree", "disagree", "unchecked", "partial"


@dataclass
class Difference:
    """The first example where the GDL and the published file differ."""

    file: str
    example: int  # 0-based index of the (background, positives) pair in the file
    atom: str
    kind: str  # "missing": published positive not derived; "extra": derived, not published

    def __str__(self) -> str:
        what = (
            "published positive not derived by the GDL"
            if self.kind == "missing"
            else "derived by the GDL, not published"
        )
        return f"{self.file}: example {self.example}: {self.atom} ({what})"


@dataclass
class SplitResult:
    target: str
    split: str
    examples: int = 0
    agree: int = 0
    first: Difference | None = None
    missing_file: str | None = None


@dataclass
class SectionResult:
    """A published ``atoms:``/``statics:`` section that differs from the regenerated one."""

    file: str
    section: str
    only_published: list[str]
    only_regenerated: list[str]

    def __str__(self) -> str:
        parts = []
        if self.only_published:
            parts.append(f"{len(self.only_published)} only in the file (e.g. {self.only_published[0]})")
        if self.only_regenerated:
            parts.append(f"{len(self.only_regenerated)} only regenerated (e.g. {self.only_regenerated[0]})")
        return f"{self.file}: {self.section}: section differs: " + "; ".join(parts)


@dataclass
class GameResult:
    game: str
    status: str = AGREE
    reason: str = ""
    gdl: str | None = None
    splits: list[SplitResult] = field(default_factory=list)
    sections: list[SectionResult] = field(default_factory=list)

    @property
    def first_difference(self) -> Difference | None:
        return next((s.first for s in self.splits if s.first), None)

    def counts(self) -> dict[str, dict[str, int]]:
        """Per target: examples and agreeing examples over all splits that exist."""
        out: dict[str, dict[str, int]] = {}
        for s in self.splits:
            c = out.setdefault(s.target, {"examples": 0, "agree": 0})
            c["examples"] += s.examples
            c["agree"] += s.agree
        return out

    def summary(self) -> str:
        counts = self.counts().values()
        n, agree = sum(c["examples"] for c in counts), sum(c["agree"] for c in counts)
        if self.status == AGREE:
            return f"agrees on all {n} examples"
        parts = [self.reason] if self.reason else []
        if n:
            parts.append(f"{agree} of {n} examples agree")
        first = self.first_difference
        if first:
            parts.append(f"first difference: {first}")
        if self.sections:
            more = f" (and {len(self.sections) - 1} more files)" if len(self.sections) > 1 else ""
            parts.append(f"{self.sections[0]}{more}")
        return "; ".join(parts)

    def as_dict(self) -> dict:
        first = self.first_difference
        return {
            "game": self.game,
            "status": self.status,
            "reason": self.reason,
            "gdl": self.gdl,
            "examples": sum(c["examples"] for c in self.counts().values()),
            "agree": sum(c["agree"] for c in self.counts().values()),
            "targets": {
                t: {
                    s.split: {"examples": s.examples, "agree": s.agree, "missing_file": s.missing_file}
                    for s in self.splits
                    if s.target == t
                }
                for t in dict.fromkeys(s.target for s in self.splits)
            },
            "first_difference": None if first is None else vars(first),
            "sections": [vars(s) for s in self.sections],
        }


def gdl_file(dataset: Dataset, game: str) -> Path | None:
    """The GDL file the game's data was generated from, or None (see the module docstring)."""
    return dataset.game_file(game)


def _no_gdl_reason(dataset: Dataset, game: str) -> str:
    others = (
        sorted(p.name for p in (dataset.path / "games").glob(f"{game}.*"))
        if (dataset.path / "games").is_dir()
        else []
    )
    have = f" (only {', '.join(others)})" if others else ""
    return f"no GDL file games/{game}.txt{have}"


def check_game(dataset: Dataset, game: str, on_file: Callable[[str], None] | None = None) -> GameResult:
    """Evaluate ``game``'s GDL on every published example and compare (see the module docstring)."""
    dataset.check_game(game)
    result = GameResult(game)
    path = gdl_file(dataset, game)
    if path is None:
        result.status, result.reason = UNCHECKED, _no_gdl_reason(dataset, game)
        return result
    result.gdl = str(path)
    try:
        engine = Game.from_file(path).engine()
    except (GDLError, ValueError, RuntimeError) as e:
        result.status, result.reason = UNCHECKED, f"GDL cannot be used: {e}"
        return result
    statics = set(dataset_statics(engine))
    signature = None
    typ = dataset.types_file(game)
    if typ is None:
        result.reason = f"no types/{game}.typ: atoms sections not regenerated"
    else:
        try:
            signature = parse_typ(typ)
        except SignatureError as e:
            result.reason = f"bad type signature: {e}"
    relations = _own_relations(engine.game.relations)
    # Memos: the same atoms recur in most examples, and legal/goal/terminal share backgrounds.
    inputs: dict[str, tuple[str, str]] = {}
    flat: dict[str, str] = {}
    derived_cache: dict[tuple[str, ...], dict[str, list[str]]] = {}

    def gdl_input(atom: str) -> tuple[str, str]:
        """A background atom as ("true", fluent) or ("does", "role,move") in GDL text."""
        if atom not in inputs:
            name = predicate_of(atom)
            kind = "true" if name == "true" or name.startswith("true_") else "does"
            inputs[atom] = (kind, _inner(unflatten(atom, relations), kind))
        return inputs[atom]

    def derive(background: list[str], target: str) -> set[str]:
        key = tuple(sorted(background))
        hit = derived_cache.get(key)
        if hit is None:
            fluents, does = [], {}
            for kind, text in map(gdl_input, key):
                if kind == "true":
                    fluents.append(text)
                else:
                    role, _, move = text.partition(",")
                    does[role] = move
            hit = derived_cache[key] = engine.evaluate(fluents, does)
        out = set()
        for a in hit.get(target, []):
            if a not in flat:
                flat[a] = flatten(a)
            out.add(flat[a])
        return out

    partial = []
    for target in TARGETS:
        files = dataset.files(game, target)
        regenerated = set(signature.ground(target)) if signature is not None else None
        for split in SPLITS:
            sr = SplitResult(target, split)
            result.splits.append(sr)
            if split not in files:
                sr.missing_file = str(Path("data") / split / f"{game}_{target}_{split}.dat")
                partial.append(sr.missing_file)
                continue
            file = files[split]
            if on_file is not None:
                on_file(file.name)
            try:
                dat = read_dat(file)
            except DatError as e:
                sr.missing_file = str(e)
                partial.append(str(e))
                continue
            if regenerated is not None:
                _compare_section(result, file.name, "atoms", dat.atoms, regenerated)
            _compare_section(result, file.name, "statics", dat.statics, statics)
            for i, (background, positives) in enumerate(dat.examples):
                got = derive(background, target)
                want = set(positives)
                sr.examples += 1
                if got == want:
                    sr.agree += 1
                elif sr.first is None:
                    missing, extra = sorted(want - got), sorted(got - want)
                    sr.first = Difference(
                        file.name, i, *((missing[0], "missing") if missing else (extra[0], "extra"))
                    )
    if any(s.first for s in result.splits) or result.sections:
        result.status = DISAGREE
    elif partial:
        result.status = PARTIAL
        result.reason = "; ".join(filter(None, [result.reason, "cannot check " + ", ".join(partial)]))
    return result


def _inner(atom: str, relation: str) -> str:
    """``true(cell(1,2,x))`` -> ``cell(1,2,x)``; ``does(white,noop)`` -> ``white,noop``."""
    if not (atom.startswith(relation + "(") and atom.endswith(")")):
        raise ValueError(f"not a {relation}(...) atom: {atom!r}")
    return atom[len(relation) + 1 : -1]


def _own_relations(relations: set[str]) -> frozenset[str]:
    """The game's own relation names (so a relation ``next_to`` is not read as ``next(to(...))``)."""
    keywords = {"true", "next", "legal", "does", "input", "init", "base", "goal", "terminal", "role", "distinct"}
    return frozenset(relations - keywords)


def _compare_section(
    result: GameResult, file: str, section: str, published: list[str], regenerated: set[str]
) -> None:
    have = set(published)
    if have != regenerated:
        result.sections.append(
            SectionResult(file, section, sorted(have - regenerated), sorted(regenerated - have))
        )


def check_dataset(
    root: str | Path,
    games: Iterable[str] | None = None,
    on_game: Callable[[str], None] | None = None,
) -> list[GameResult]:
    """Check the named games (default: all) of the dataset at ``root``; unknown names raise."""
    dataset = Dataset(root)
    names = list(games) if games is not None else dataset.games()
    for g in names:
        dataset.check_game(g)  # fail fast on a typo, with close matches
    results = []
    for g in names:
        if on_game is not None:
            on_game(g)
        results.append(check_game(dataset, g))
    return results


def exit_code(results: list[GameResult]) -> int:
    """0: every game agrees; 1: some game disagrees; 2: none disagrees but some could not be checked."""
    if any(r.status == DISAGREE for r in results):
        return 1
    if any(r.status in (UNCHECKED, PARTIAL) for r in results):
        return 2
    return 0
