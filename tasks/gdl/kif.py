"""KIF reader for GDL: tokens with positions, s-expressions, then rules.

Policy for lines that are not KIF (the published IGGP game files contain some):

* ``import NAME`` at top level (the sokoban map files) includes ``NAME.txt`` from the same
  directory, as the dataset authors' generator did; the imported rules keep their own positions.
* Prolog/ASP-looking lines at top level (``p(A,B):-q(A).``, ``next_capture()``, a clause's
  continuation lines ``succ(X1,X2),``) are notes the authors left in some files. They are skipped
  with a `GDLWarning` naming file and lines, and recorded in ``Program.skipped``.
* Comments: ``;`` to the end of the line (anywhere, also inside an expression and on a last line
  without newline), and whole lines starting with ``%`` (Prolog/ASP comments). A UTF-8 byte
  order mark, CRLF or CR line ends, tabs and other Unicode whitespace are read as whitespace.
* Any other top-level text (words outside every expression) is skipped with a `GDLWarning`
  naming file:line:col, and recorded in ``Program.skipped``: nothing is dropped silently.
* Unbalanced parentheses or a malformed rule raise `GDLError` with file, line and column.

Keywords (``<=``, ``role``, ``init``, ``true``, ``does``, ``legal``, ``next``, ``goal``,
``terminal``, ``distinct``, ``not``, ``or``, ``and``, ``base``, ``input``) are case-insensitive and
normalised to lower case; other symbols keep their spelling.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from tasks.gdl.ast import Const, Distinct, Func, Literal, Not, Or, Program, Rule, Term, Var, variables
from tasks.gdl.errors import GDLError, GDLWarning, Pos

KEYWORDS = frozenset("<= role init true does legal next goal terminal distinct not or and base input".split())
_IMPORT = re.compile(r"^\s*import\s+([A-Za-z0-9_.\-]+)\s*$")
_PROLOG = re.compile(r":-|[A-Za-z0-9_]\(|[.,]\s*$")


@dataclass(frozen=True)
class _Tok:
    text: str  # "(" or ")" or a symbol
    pos: Pos


@dataclass
class _SExpr:
    items: list[_SExpr | _Tok]
    pos: Pos


def _normal(sym: str) -> str:
    low = sym.lower()
    return low if low in KEYWORDS else sym


def _tokenize(text: str, file: str, program: Program, base_dir: Path | None, seen: set[Path]) -> list[_Tok]:
    """Tokens of the KIF parts; handles comments, stray text and imports (see module docstring)."""
    toks: list[_Tok] = []
    depth = 0
    stray: list[int] = []

    def flush_stray() -> None:
        if stray:
            where = f"{file}:{stray[0]}" + (f"-{stray[-1]}" if len(stray) > 1 else "")
            msg = f"{where}: skipped {len(stray)} non-GDL (Prolog-style) line(s)"
            warnings.warn(msg, GDLWarning, stacklevel=4)
            program.skipped.append((Pos(file, stray[0], 1), msg))
            stray.clear()

    def skip_text(pos: Pos, what: str) -> None:
        msg = f"{pos}: skipped stray text outside any KIF expression: {what!r}"
        warnings.warn(msg, GDLWarning, stacklevel=4)
        program.skipped.append((pos, msg))

    text = text.removeprefix("\ufeff")  # a UTF-8 byte order mark read as text
    for lineno, raw in enumerate(text.splitlines(), 1):
        code = raw.split(";", 1)[0]
        stripped = code.strip()
        if stripped.startswith("%"):  # a Prolog/ASP-style comment line
            continue
        if depth == 0 and stripped and not stripped.startswith("("):
            col = len(code) - len(code.lstrip()) + 1
            m = _IMPORT.match(code)
            if m:
                flush_stray()
                toks.extend(_import(m.group(1), Pos(file, lineno, col), program, base_dir, seen))
                continue
            if _PROLOG.search(stripped):
                stray.append(lineno)
                continue
        if stripped:
            flush_stray()
        pending: list[tuple[Pos, str]] = []  # stray words at top level on this line
        for m in re.finditer(r"[()]|[^\s();]+", code):
            pos = Pos(file, lineno, m.start() + 1)
            t = m.group()
            if t == "(":
                depth += 1
            elif t == ")":
                depth -= 1
                if depth < 0:
                    raise GDLError(file, lineno, m.start() + 1, "unbalanced ')': no matching '('")
            elif depth == 0:
                pending.append((pos, t))
                continue
            toks.append(_Tok(t, pos))
        if pending:
            skip_text(pending[0][0], " ".join(t for _, t in pending))
    flush_stray()
    return toks


def _import(name: str, pos: Pos, program: Program, base_dir: Path | None, seen: set[Path]) -> list[_Tok]:
    if base_dir is None:
        raise GDLError.at(pos, f"'import {name}' needs a file location (use parse_file or base_dir=)")
    path = (base_dir / name).with_suffix(".txt") if not name.endswith(".txt") else base_dir / name
    if not path.exists():
        raise GDLError.at(pos, f"'import {name}': {path} does not exist")
    if path.resolve() in seen:
        return []  # already included (import cycles or diamonds)
    seen.add(path.resolve())
    return _tokenize(
        path.read_text(encoding="utf-8", errors="replace"), str(path), program, path.parent, seen
    )


def _sexprs(toks: list[_Tok], file: str) -> list[_SExpr]:
    out: list[_SExpr] = []
    stack: list[_SExpr] = []
    for t in toks:
        if t.text == "(":
            stack.append(_SExpr([], t.pos))
        elif t.text == ")":
            done = stack.pop()
            if stack:
                stack[-1].items.append(done)
            else:
                out.append(done)
        else:
            stack[-1].items.append(t)
    if stack:
        p = stack[-1].pos
        raise GDLError(p.file, p.line, p.col, "unbalanced '(': expression is never closed")
    return out


def _term(x: _SExpr | _Tok) -> Term:
    if isinstance(x, _Tok):
        if x.text.startswith("?"):
            if len(x.text) == 1:
                raise GDLError.at(x.pos, "variable '?' has no name")
            return Var(x.text[1:], x.pos)
        return Const(_normal(x.text), x.pos)
    if not x.items:
        raise GDLError.at(x.pos, "empty expression '()'")
    head = x.items[0]
    if not isinstance(head, _Tok) or head.text.startswith("?"):
        raise GDLError.at(x.pos, "an expression must start with a function or relation name")
    if len(x.items) == 1:
        return Const(_normal(head.text), x.pos)  # (terminal) is the same as terminal
    return Func(_normal(head.text), tuple(_term(a) for a in x.items[1:]), x.pos)


def _atom(x: _SExpr | _Tok, what: str) -> Const | Func:
    t = _term(x)
    if isinstance(t, Var):
        raise GDLError.at(t.pos, f"a variable cannot stand as {what}")
    if t.name in ("<=", "not", "or", "and", "distinct"):
        raise GDLError.at(t.pos, f"'{t.name}' cannot stand as {what}")
    return t


def _literal(x: _SExpr | _Tok) -> list[Literal]:
    """A body literal; ``(and ...)`` is spliced into the conjunction, so a list comes back."""
    if isinstance(x, _SExpr) and x.items and isinstance(x.items[0], _Tok):
        key = _normal(x.items[0].text)
        args = x.items[1:]
        if key == "not":
            if len(args) != 1:
                raise GDLError.at(x.pos, f"'not' takes one literal, got {len(args)}")
            inner = _literal(args[0])
            if len(inner) != 1:
                raise GDLError.at(x.pos, "'not' of a conjunction is not GDL")
            return [Not(inner[0], x.pos)]
        if key == "distinct":
            if len(args) != 2:
                raise GDLError.at(x.pos, f"'distinct' takes two terms, got {len(args)}")
            return [Distinct(_term(args[0]), _term(args[1]), x.pos)]
        if key == "or":
            if not args:
                raise GDLError.at(x.pos, "'or' needs at least one literal")
            lits: list[Literal] = []
            for a in args:
                sub = _literal(a)
                if len(sub) != 1:
                    raise GDLError.at(x.pos, "'and' inside 'or' is not supported")
                lits.append(sub[0])
            return [Or(tuple(lits), x.pos)]
        if key == "and":
            return [lit for a in args for lit in _literal(a)]
    return [_atom(x, "a body literal")]


def _rule(x: _SExpr | _Tok, program: Program) -> Rule | None:
    """A rule or fact; a ground ``(distinct a b)`` fact with a != b is a built-in truth: skipped."""
    if (
        isinstance(x, _SExpr)
        and x.items
        and isinstance(x.items[0], _Tok)
        and _normal(x.items[0].text) == "<="
    ):
        if len(x.items) < 2:
            raise GDLError.at(x.pos, "'<=' needs a head")
        head = _atom(x.items[1], "a rule head")
        body = tuple(lit for b in x.items[2:] for lit in _literal(b))
        return Rule(head, body, x.pos)
    if (
        isinstance(x, _SExpr)
        and x.items
        and isinstance(x.items[0], _Tok)
        and _normal(x.items[0].text) == "distinct"
    ):
        lit = _literal(x)[0]
        assert isinstance(lit, Distinct)
        if lit.left != lit.right and not any(True for _ in variables(lit)):
            msg = f"{x.pos}: skipped the fact {lit}: 'distinct' is built in and this instance holds anyway"
            warnings.warn(msg, GDLWarning, stacklevel=3)
            program.skipped.append((x.pos, msg))
            program.asserted_distinct.append(lit)
            return None
        raise GDLError.at(x.pos, f"'distinct' cannot be asserted as a fact: {lit}")
    return Rule(_atom(x, "a fact"), (), x.pos)


def parse_text(text: str, name: str = "<text>", base_dir: str | Path | None = None) -> Program:
    """Parse GDL source text; ``name`` is used in positions, ``base_dir`` resolves ``import``."""
    program = Program([], name)
    seen: set[Path] = set()
    toks = _tokenize(text, name, program, Path(base_dir) if base_dir is not None else None, seen)
    return _finish(program, toks)


def parse_file(path: str | Path) -> Program:
    """Parse a GDL file (``import NAME`` lines include ``NAME.txt`` from the same directory)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise GDLError(str(p), 0, 0, f"cannot read: {e}") from e
    program = Program([], str(p))
    seen = {p.resolve()}
    toks = _tokenize(text, str(p), program, p.parent, seen)
    return _finish(program, toks)


def _finish(program: Program, toks: list[_Tok]) -> Program:
    rules = (_rule(s, program) for s in _sexprs(toks, program.file))
    program.rules = [r for r in rules if r is not None]
    return program
