"""The published IGGP dataset layout: ``.dat`` files, the lazy :class:`Dataset`, and task loading.

Layout (taken exactly as published)::

    ROOT/data/{train,validate,test}/GAME_TARGET_SPLIT.dat
    ROOT/types/GAME.typ
    ROOT/games/GAME.txt            (GDL, where the game has it)

A ``.dat`` file is a sequence of sections separated by ``---`` lines: ``atoms:`` (the candidate
target atoms), ``statics:`` (background atoms true in every state), then pairs of
``background:`` and ``positives:``. Each atom sits on its own tab-indented line. For example i,
B_i = statics + background_i, E+_i = positives_i and E-_i = atoms - positives_i.

:func:`write_dat` writes the published byte layout, so reading and writing back is lossless.
Tasks load lazily, one (game, target) at a time, because the whole dataset is 250 MB of text.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tasks.atoms import predicate_of
from tasks.escape import escape_atom, escape_predicate
from tasks.signature import Signature, escape_signature, parse_typ
from tasks.task import SPLITS, TARGETS, Split, Task, Vocabulary, bool_csr

SEPARATOR = "\n---\n"
_FILE = re.compile(r"^(?P<game>.+)_(?P<target>goal|legal|next|terminal)_(?P<split>train|validate|test)\.dat$")


class DatError(ValueError):
    """A missing, truncated or malformed ``.dat`` file; the message names the file (and line)."""


class UnknownGame(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


@dataclass
class DatFile:
    """The content of one ``.dat`` file, as atom strings in file order."""

    atoms: list[str]
    statics: list[str]
    examples: list[tuple[list[str], list[str]]] = field(default_factory=list)


_SYMBOL = r'[^\s(),;"\x00-\x1f\x7f]++'
"""A KIF symbol as GDL spells it (``cell``, ``north-speed``, ``++``, ``-1``; docs/gdl.md)."""
_TERM = rf'(?:{_SYMBOL}|"[^"\\\n]*+")'
_ATOM = re.compile(rf"{_SYMBOL}(?:\((?:{_TERM}(?:[ \t]*+,[ \t]*+{_TERM})*+)?\))?")
"""A flattened ground atom: ``name``, ``name()`` or ``name(c1, c2, ...)`` with constant arguments
(KIF symbols, double-quoted strings). Checked at load so that a malformed atom is an error
naming its file and line, not something a baseline scores or a solver rejects far from its source."""


def _check_atoms(path: Path, text: str, sections: list[tuple[int, str, list[str]]]) -> None:
    """Raise a DatError naming the line of the first malformed atom (each distinct atom is checked once)."""
    distinct: set[str] = set()
    for _, _, atoms in sections:
        distinct.update(atoms)
    bad = {a for a in distinct if not _ATOM.fullmatch(a)}
    if not bad:
        return
    for offset, _, atoms in sections:
        for atom in atoms:
            if atom in bad:
                line = text.count("\n", 0, offset) + 1
                for raw in text[offset:].split("\n"):
                    if raw.strip() == atom:
                        break
                    line += 1
                raise DatError(f"{path}:{line}: malformed atom {atom[:120]!r}")


def _section_lines(text: str, start: int, end: int) -> tuple[str, list[str]]:
    """Header and stripped atom lines of ``text[start:end]``."""
    body = text[start:end].strip("\n")
    header, _, rest = body.partition("\n")
    return header.strip(), [a.strip() for a in rest.split("\n") if a.strip()]


def _dat_text(path: Path) -> str:
    """The text of a ``.dat`` file, refused (naming the file) when unreadable, binary or truncated."""
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise DatError(f"{path}: file not found") from e
    except OSError as e:
        raise DatError(f"{path}: cannot read: {e.strerror or e}") from e
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        bad = data[data.rfind(b"\n", 0, e.start) + 1 :].split(b"\n", 1)[0]
        raise DatError(f"{path}:{line}: not UTF-8 text: {bad[:80]!r}") from e
    if not text.rstrip("\n").endswith("---"):
        raise DatError(f"{path}: truncated (the file does not end with a '---' separator)")
    return text if text.endswith("\n") else text + "\n"  # some published files end with "---" and no newline


def _bounds(text: str) -> list[tuple[int, int]]:
    """(start, end) of each section of a ``.dat`` text (each ends at a separator)."""
    bounds: list[tuple[int, int]] = []
    pos = 0
    while True:
        nxt = text.find(SEPARATOR, pos)
        if nxt < 0:
            return bounds
        bounds.append((pos, nxt))
        pos = nxt + len(SEPARATOR)


def _check_headers(path: Path, text: str, headers: list[tuple[int, str]]) -> None:
    """Sections must be atoms, statics, then background/positives pairs; else a DatError with the line."""
    expect = ["atoms:", "statics:"]
    for i, (offset, header) in enumerate(headers):
        want = expect[i] if i < 2 else ("background:", "positives:")[i % 2]
        if header != want:
            line = text.count("\n", 0, offset) + 1
            raise DatError(f"{path}:{line}: expected section {want!r}, found {header[:80]!r}")
    if len(headers) < 2:
        raise DatError(f"{path}: truncated (no atoms/statics sections)")
    if len(headers) % 2:
        line = text.count("\n", 0, headers[-1][0]) + 1
        raise DatError(f"{path}:{line}: truncated (a background without its positives)")


def count_examples(path: str | Path) -> int:
    """How many examples a ``.dat`` file holds, with its structure checked as :func:`read_dat` does
    (text, section order, the final separator) but not each atom: cheap enough to list a whole
    dataset (``orch games list``), and never a wrong count for a binary, empty or truncated file."""
    path = Path(path)
    text = _dat_text(path)
    headers: list[tuple[int, str]] = []
    for start, end in _bounds(text):
        first = text.find("\n", start, end)  # a section's header is its first non-empty line
        while first == start and start < end:
            start, first = start + 1, text.find("\n", start + 1, end)
        headers.append((start, text[start : end if first < 0 else first].strip()))
    _check_headers(path, text, headers)
    return (len(headers) - 2) // 2


def background_atoms(path: str | Path) -> set[str]:
    """The distinct atoms of a ``.dat`` file's ``background:`` sections, read line by line (a
    generated file can hold gigabytes): what an evaluator must know before the examples are read
    one file at a time. Lenient: a malformed file gives what it has, and :func:`read_dat` then
    names its error; a missing or unreadable one gives nothing."""
    atoms: set[str] = set()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            header, in_background = True, False
            for line in f:
                text = line.strip()
                if not text:
                    continue
                if text == "---":
                    header = True
                elif header:
                    header, in_background = False, text == "background:"
                elif in_background:
                    atoms.add(text)
    except OSError:
        pass
    return atoms


def read_dat(path: str | Path) -> DatFile:
    """Parse a ``.dat`` file. Errors name the file and the line of the offending section."""
    path = Path(path)
    text = _dat_text(path)
    sections = [(s, *_section_lines(text, s, e)) for s, e in _bounds(text)]
    _check_headers(path, text, [(offset, header) for offset, header, _ in sections])
    _check_atoms(path, text, sections)
    examples = [(sections[i][2], sections[i + 1][2]) for i in range(2, len(sections), 2)]
    return DatFile(sections[0][2], sections[1][2], examples)


def _section(header: str, atoms: list[str]) -> str:
    return header + ":\n" + "".join(f"\t{a}\n" for a in atoms) + "\n---\n\n"


def write_dat(path: str | Path, dat: DatFile) -> None:
    """Write ``dat`` in the published byte layout, atomically (temp file, then rename)."""
    path = Path(path)
    parts = [_section("atoms", dat.atoms), _section("statics", dat.statics)]
    for background, positives in dat.examples:
        parts.append(_section("background", background))
        parts.append(_section("positives", positives))
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text("".join(parts))
    tmp.replace(path)


class Dataset:
    """A task source over a directory in the published IGGP layout (see the module docstring)."""

    def __init__(self, root: str | Path):
        self.path = Path(root).expanduser().resolve()
        self.root = str(self.path)
        if not (self.path / "data").is_dir():
            raise DatError(f"{self.path}: not an IGGP dataset (no data/ directory)")
        self._files: dict[tuple[str, str], dict[str, Path]] = {}
        for split in SPLITS:
            d = self.path / "data" / split
            if not d.is_dir():
                continue
            for f in d.iterdir():
                m = _FILE.match(f.name)
                if m and m["split"] == split:
                    self._files.setdefault((m["game"], m["target"]), {})[split] = f
        self._fingerprints: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"Dataset({self.root!r})"

    # -- listing ---------------------------------------------------------------------------------
    def games(self) -> list[str]:
        return sorted({g for g, _ in self._files})

    def check_game(self, game: str) -> None:
        """Raise :class:`UnknownGame` with close matches when ``game`` is not in the dataset."""
        if game not in {g for g, _ in self._files}:
            close = difflib.get_close_matches(game, self.games(), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise UnknownGame(f"no game {game!r} in {self.root}{hint}")

    def targets(self, game: str) -> list[str]:
        self.check_game(game)
        return [t for t in TARGETS if (game, t) in self._files]

    def files(self, game: str, target: str) -> dict[str, Path]:
        """The split files that exist for (game, target), by split name."""
        self.check_game(game)
        return dict(self._files.get((game, target), {}))

    def missing_files(self, game: str, target: str) -> dict[str, Path]:
        """Expected split files that are absent (e.g. the published ``ttcc4_legal_train.dat``)."""
        have = self.files(game, target)
        return {s: self.path / "data" / s / f"{game}_{target}_{s}.dat" for s in SPLITS if s not in have}

    def predicates(self, game: str, target: str) -> list[str]:
        """Flattened target predicates, read from the ``atoms:`` section of one split file."""
        files = self.files(game, target)
        if not files:
            raise DatError(f"no data files for {game}_{target} in {self.root}")
        path = files.get("test") or next(iter(files.values()))
        with open(path) as fh:
            head = []
            for line in fh:
                if line.startswith("---"):
                    break
                head.append(line)
        names: dict[str, None] = {}
        for line in head[1:]:
            a = line.strip()
            if a:
                names.setdefault(predicate_of(a), None)
        # spelled as a loaded task spells them (`next_prev-goal` -> `next_k0xprev02dgoal`, tasks.escape)
        return list(dict.fromkeys(escape_predicate(n) for n in names))

    def game_file(self, game: str) -> Path | None:
        p = self.path / "games" / f"{game}.txt"
        return p if p.exists() else None

    def types_file(self, game: str) -> Path | None:
        p = self.path / "types" / f"{game}.typ"
        return p if p.exists() else None

    def signature(self, game: str) -> Signature | None:
        p = self.types_file(game)
        return parse_typ(p) if p else None

    def fingerprint(self, game: str) -> str:
        """A content hash of every data file of ``game`` plus its ``.typ`` and GDL files."""
        if game not in self._fingerprints:
            self.check_game(game)
            h = hashlib.blake2b(digest_size=16)
            paths = sorted(p for (g, _), fs in self._files.items() if g == game for p in fs.values())
            paths += [p for p in (self.types_file(game), self.game_file(game)) if p]
            for p in paths:
                h.update(p.name.encode() + b"\0")
                h.update(p.read_bytes())
            self._fingerprints[game] = h.hexdigest()
        return self._fingerprints[game]

    # -- loading ---------------------------------------------------------------------------------
    def read(self, game: str, target: str, split: str) -> DatFile:
        path = self.files(game, target).get(split)
        if path is None:
            raise DatError(f"{self.missing_files(game, target)[split]}: file not found")
        return read_dat(path)

    def load_task(self, game: str, target: str, splits: tuple[str, ...] = SPLITS) -> Task:
        """Load one task. Absent split files are recorded in ``Task.missing``, not fatal."""
        if target not in TARGETS:
            raise KeyError(f"unknown target {target!r}; targets are {', '.join(TARGETS)}")
        if target not in self.targets(game):
            raise DatError(f"no data files for {game}_{target} in {self.root}")
        dats: dict[str, DatFile] = {}
        missing = {}
        for split in splits:
            try:
                dats[split] = self.read(game, target, split)
            except DatError as e:
                if "file not found" not in str(e):
                    raise
                missing[split] = str(e)
        sig_path = self.types_file(game)
        task = task_from_dats(
            game, target, dats, signature=parse_typ(sig_path) if sig_path else None, source=self.root
        )
        task.missing.update(missing)
        return task


def task_from_dats(
    game: str,
    target: str,
    dats: dict[str, DatFile],
    signature: Signature | None = None,
    source: str = "",
) -> Task:
    """Intern the atoms of several splits' files into one :class:`Task`.

    Predicate names that are not ASP identifiers are escaped here (`tasks.escape`), once for every
    learner, and so is the signature; the files keep the GDL spelling.
    """
    esc = _escaper()
    targets = Vocabulary()
    background = Vocabulary()
    for dat in dats.values():
        for a in dat.atoms:
            targets.add(esc(a))
        for a in dat.statics:
            background.add(esc(a))
    statics = np.arange(len(background), dtype=np.int64)
    rows: dict[str, tuple[list[list[int]], list[list[int]]]] = {}
    for name, dat in dats.items():
        tindex = targets.index
        rows_b, rows_p = [], []
        for i, (b, p) in enumerate(dat.examples):
            rows_b.append([background.add(esc(a)) for a in b])
            try:
                rows_p.append([tindex[esc(a)] for a in p])
            except KeyError as e:
                raise DatError(
                    f"{game}_{target}_{name}.dat: example {i}: positive {e.args[0]} is not listed under atoms:"
                ) from None
        rows[name] = (rows_b, rows_p)
    splits = {
        name: Split(
            name,
            bool_csr(rows[name][0], len(background)),
            bool_csr(rows[name][1], len(targets)),
            targets.ids(dict.fromkeys(map(esc, dat.atoms))),  # ttcc4 lists some atoms twice: score each once
        )
        for name, dat in dats.items()
    }
    sig = None if signature is None else escape_signature(signature)
    return Task(game, target, background, targets, statics, splits, sig, source)


def _escaper() -> Callable[[str], str]:
    """`tasks.escape.escape_atom`, memoised (an atom recurs in many examples)."""
    memo: dict[str, str] = {}

    def esc(atom: str) -> str:
        safe = memo.get(atom)
        if safe is None:
            safe = memo[atom] = escape_atom(atom)
        return safe

    return esc
