"""The oracle check: does a game's GDL reproduce its published examples exactly?

For every (target, split) file of a game, and every example in it, the GDL rules are evaluated on
the example's background (its ``true_*`` fluents, plus the ``does*`` moves for next) and the
derived target atoms are compared with the published positives. The ``atoms:`` section must equal
ground(Σ, target) from the game's ``.typ``, and the ``statics:`` section the static relations of
the GDL. This is what makes the generator and the engine trustworthy: they must agree with the
authors' own generator on 100% of the examples of every game that has GDL.

Games that cannot be checked are reported as such, never as agreeing: a game with no GDL file
(only the authors' Prolog ``.pl``), a GDL the engine refuses, or a missing split file (the
published ``ttcc4_legal_train.dat``); the other targets of a game with a missing file are still
checked. Statuses: ``agree``, ``disagree`` (an example or a section differs), ``partial`` (what
could be checked agrees, but a file is missing) and ``unchecked``.

Dataset games map to ``games/GAME.txt``, except those in :data:`GDL_ALIASES` (sokoban). Files such
as ``sokoban_core.txt`` or ``minimal_sokoban_map1.txt`` belong to no dataset game.

What the published 40 games give (``orch games check --dataset DIR``; tests/test_check.py pins it):
every example of every game whose GDL the engine accepts agrees, except pilgrimage, whose
published GDL renamed a move (``place_pilgrim_action``; the data says ``place_pilgrim``). In
dont_touch, hexforthree, knights_tour and ttcc4 the published ``atoms:`` sections are a strict
subset of ground(Σ, target) from the published ``.typ`` (constants were added to the ``.typ``
files after the data was generated), so those are reported as disagreeing on that section only.
In firesheep, 182 of 10805 next examples differ: the game defines its own relation ``next_at``,
whose atoms flatten exactly like ``next(at(..))``, and the authors' positives include them (e.g.
``next_at(9, 1, 9)`` for a sheep that is killed, so ``next(at(9,1,9))`` does not hold). Games the
compiled engine cannot use are unchecked: minimal_decay and scissors_paper_stone declare no role,
and asylum's grounding exceeds the engine's bound (``--solver-fallback`` checks it: it agrees).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import clingo

from tasks.gdl import Engine, Game, GDLError, GDLWarning, flatten, unflatten
from tasks.gdl.reference import evaluate_by_solving
from tasks.gdl.terms import parse_ground, symbol_text
from tasks.generate import dataset_statics
from tasks.iggp import Dataset, DatError, DatFile, read_dat
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
            return f"agrees on all {n} examples" + (f" ({self.reason})" if self.reason else "")
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


#: Dataset games whose data came from a GDL file of another name. The published sokoban data mixes
#: playouts of sokoban_map1..7 (each imports sokoban_core, whose ``is_*`` facts are in the statics);
#: games/sokoban.txt is a single-map copy without those facts. Any map gives the same rules and
#: statics (the maps differ only in init), so map1 stands for all of them.
GDL_ALIASES = {"sokoban": "sokoban_map1.txt"}


def gdl_file(dataset: Dataset, game: str) -> Path | None:
    """The GDL file the game's data was generated from, or None (see the module docstring)."""
    alias = GDL_ALIASES.get(game)
    if alias and (dataset.path / "games" / alias).exists():
        return dataset.path / "games" / alias
    return dataset.game_file(game)


def _no_gdl_reason(dataset: Dataset, game: str) -> str:
    games_dir = dataset.path / "games"
    others = sorted(p.name for p in games_dir.glob(f"{game}.*")) if games_dir.is_dir() else []
    have = f" (only {', '.join(others)})" if others else ""
    return f"no GDL file games/{game}.txt{have}"


def _kif(text: str) -> str:
    """Canonical ground-term text to KIF: ``cell(1,2,x)`` -> ``(cell 1 2 x)``."""
    name, args = parse_ground(text)

    def term(t) -> str:
        return t[0] if not t[1] else f"({t[0]} {' '.join(term(a) for a in t[1])})"

    return term((name, args))


def _engine_covering(game: Game, path: Path, fluents: set[str]) -> Engine:
    """The game's compiled engine, its fluent universe widened to cover ``fluents``.

    The engine compiles the fluents reachable from ``init``; published data can hold others (the
    sokoban data mixes several maps). Those would each cost a fresh clingo solve, so the unknown
    ones are added as extra ``init`` facts, which changes nothing but the (unused) initial state.
    """
    engine = game.engine()
    unknown = sorted(fluents - set(engine.fluents))
    if not unknown:
        return engine
    extra = "".join(f"(init {_kif(f)})\n" for f in unknown)
    with warnings.catch_warnings():  # the parser already warned about this file once
        warnings.simplefilter("ignore", GDLWarning)
        wider = Game.from_text(path.read_text() + "\n" + extra, name=path.stem, base_dir=path.parent)
    return wider.engine()


def _static_atoms_by_solving(game: Game, asp: str) -> list[str]:
    """The static atoms (GDL text) from one clingo solve of the rules with no state."""
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], asp)
    ctl.ground([("base", [])])
    out: list[str] = []
    ctl.solve(on_model=lambda m: out.extend(symbol_text(s) for s in m.symbols(atoms=True)))
    return [a for a in out if a.partition("(")[0] in game.static_relations]


def check_game(
    dataset: Dataset, game: str, on_file: Callable[[str], None] | None = None, solver_fallback: bool = False
) -> GameResult:
    """Evaluate ``game``'s GDL on every published example and compare (see the module docstring).

    ``solver_fallback``: when the compiled engine cannot ground the game in time (asylum), check
    it anyway with one clingo solve per distinct background (minutes instead of seconds).
    """
    dataset.check_game(game)
    result = GameResult(game)
    path = gdl_file(dataset, game)
    if path is None:
        result.status, result.reason = UNCHECKED, _no_gdl_reason(dataset, game)
        return result
    result.gdl = str(path)
    try:
        gdl = Game.from_file(path)
        relations = _own_relations(gdl.relations)
    except (GDLError, ValueError, RuntimeError) as e:
        result.status, result.reason = UNCHECKED, f"GDL cannot be used: {e}"
        return result
    signature = None
    typ = dataset.types_file(game)
    if typ is None:
        result.reason = f"no types/{game}.typ: atoms sections not regenerated"
    else:
        try:
            signature = parse_typ(typ)
        except SignatureError as e:
            result.reason = f"bad type signature: {e}"

    # Read every file first: the engine must know every fluent the backgrounds use.
    inputs: dict[str, tuple[str, str]] = {}

    def gdl_input(atom: str) -> tuple[str, str]:
        """A background atom as ("true", fluent) or ("does", "role,move") in GDL text."""
        if atom not in inputs:
            name = predicate_of(atom)
            kind = "true" if name == "true" or name.startswith("true_") else "does"
            inputs[atom] = (kind, _inner(unflatten(atom, relations), kind))
        return inputs[atom]

    unreadable: list[str] = []
    dats: dict[tuple[str, str], tuple[Path, DatFile]] = {}
    for target in TARGETS:
        files = dataset.files(game, target)
        for split in SPLITS:
            sr = SplitResult(target, split)
            result.splits.append(sr)
            if split not in files:
                sr.missing_file = str(Path("data") / split / f"{game}_{target}_{split}.dat")
                unreadable.append(sr.missing_file)
                continue
            if on_file is not None:
                on_file(files[split].name)
            try:
                dats[target, split] = files[split], read_dat(files[split])
            except DatError as e:
                sr.missing_file = str(e)
                unreadable.append(str(e))
    fluents = {
        text
        for _, dat in dats.values()
        for b, _ in dat.examples
        for kind, text in map(gdl_input, b)
        if kind == "true"
    }
    try:
        engine = _engine_covering(gdl, path, fluents)
        evaluate, static_atoms = engine.evaluate, engine.static_atoms
    except (GDLError, ValueError, RuntimeError) as e:
        if not (solver_fallback and "grounding did not finish" in str(e)):
            hint = " (try --solver-fallback)" if "grounding did not finish" in str(e) else ""
            result.status, result.reason = UNCHECKED, f"GDL cannot be used: {e}{hint}"
            return result
        asp = gdl.to_asp()
        result.reason = (
            "compiled engine unavailable (grounding too big): checked by one clingo solve per example"
        )
        evaluate, static_atoms = partial(evaluate_by_solving, asp), _static_atoms_by_solving(gdl, asp)
    statics = set(dataset_statics(static_atoms, gdl))

    # Memos: the same atoms recur in most examples, and legal/goal/terminal share backgrounds.
    flat: dict[str, str] = {}
    derived_cache: dict[tuple[str, ...], dict[str, list[str]]] = {}

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
            hit = derived_cache[key] = evaluate(fluents, does)
        out = set()
        for a in hit.get(target, []):
            if a not in flat:
                flat[a] = flatten(a)
            out.add(flat[a])
        return out

    for sr in result.splits:
        if (sr.target, sr.split) not in dats:
            continue
        file, dat = dats[sr.target, sr.split]
        if signature is not None:
            _compare_section(result, file.name, "atoms", dat.atoms, set(signature.ground(sr.target)))
        _compare_section(result, file.name, "statics", dat.statics, statics)
        for i, (background, positives) in enumerate(dat.examples):
            got = derive(background, sr.target)
            want = set(positives)
            sr.examples += 1
            if got == want:
                sr.agree += 1
            elif sr.first is None:
                missing, extra = sorted(want - got), sorted(got - want)
                sr.first = Difference(
                    file.name, i, *((missing[0], "missing") if missing else (extra[0], "extra"))
                )
    if unreadable:
        result.reason = "; ".join(filter(None, [result.reason, "cannot check " + ", ".join(unreadable)]))
    if any(s.first for s in result.splits) or result.sections:
        result.status = DISAGREE
    elif unreadable:
        result.status = PARTIAL
    return result


def _inner(atom: str, relation: str) -> str:
    """``true(cell(1,2,x))`` -> ``cell(1,2,x)``; ``does(white,noop)`` -> ``white,noop``."""
    if not (atom.startswith(relation + "(") and atom.endswith(")")):
        raise ValueError(f"not a {relation}(...) atom: {atom!r}")
    return atom[len(relation) + 1 : -1]


def _own_relations(relations: set[str]) -> frozenset[str]:
    """The game's own relation names (so a relation ``next_to`` is not read as ``next(to(...))``)."""
    keywords = {
        "true",
        "next",
        "legal",
        "does",
        "input",
        "init",
        "base",
        "goal",
        "terminal",
        "role",
        "distinct",
    }
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
    solver_fallback: bool = False,
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
        results.append(check_game(dataset, g, solver_fallback=solver_fallback))
    return results


def exit_code(results: list[GameResult]) -> int:
    """0: every game agrees; 1: some game disagrees; 2: none disagrees but some could not be checked."""
    if any(r.status == DISAGREE for r in results):
        return 1
    if any(r.status in (UNCHECKED, PARTIAL) for r in results):
        return 2
    return 0
