"""Ground terms as text: the canonical GDL spelling, clingo symbols, and IGGP flattening.

Canonical ground-term text is the nested ASP-like spelling without spaces: ``cell(1,2,x)``,
``noop``, ``legal(white,mark(1,2))``. Constants that are not valid clingo identifiers or integers
(``Knight``, ``a-b``, ``01``) travel through clingo as strings and are printed back unquoted.

Flattening (the IGGP dataset's convention, Cropper et al. 2020, sect. 3.2): when the *last*
argument of an atom is a compound term ``f(b1..bm)``, ``f`` is merged into the predicate name and
its arguments are spliced in its place, repeatedly; arguments are written ``p(a, b)`` and nullary
atoms ``terminal()``. The published data has compound terms only in that last position, so a
compound term elsewhere is refused rather than guessed.
"""

from __future__ import annotations

import re

import clingo

from tasks.escape import MARKER, escape_name, unescape_predicate, unescape_text
from tasks.task import format_atom, parse_atom

GTerm = tuple[str, tuple["GTerm", ...]]
"""A parsed ground term: (name, args); a constant has no args."""

_TOKEN = re.compile(r"\s*([(),]|[^\s(),]+)")
IDENT = re.compile(r"[a-z][A-Za-z0-9_]*\Z")
INTEGER = re.compile(r"(0|-?[1-9][0-9]*)\Z")

INT_MAX = 2**31 - 1
"""clingo integers are 32-bit; a longer digit string travels as a string constant."""

# Relations whose last argument the dataset flattens, with how many arguments come before it.
_FLATTENED_PREFIX = {"true": 0, "next": 0, "init": 0, "base": 0, "legal": 1, "does": 1, "input": 1}


def parse_ground(text: str) -> GTerm:
    """Parse ``f(a,g(b))``-style text (spaces allowed) into a `GTerm`."""
    toks = _TOKEN.findall(text)
    pos = 0

    def term() -> GTerm:
        nonlocal pos
        if pos >= len(toks) or toks[pos] in "(),":
            raise ValueError(f"malformed ground term: {text!r}")
        name = toks[pos]
        pos += 1
        args: list[GTerm] = []
        if pos < len(toks) and toks[pos] == "(":
            pos += 1
            if pos < len(toks) and toks[pos] == ")":
                pos += 1
                return name, ()
            while True:
                args.append(term())
                if pos < len(toks) and toks[pos] == ",":
                    pos += 1
                elif pos < len(toks) and toks[pos] == ")":
                    pos += 1
                    break
                else:
                    raise ValueError(f"malformed ground term: {text!r}")
        return name, tuple(args)

    t = term()
    if pos != len(toks):
        raise ValueError(f"trailing text in ground term: {text!r}")
    return t


def show(t: GTerm) -> str:
    """Canonical text of a ground term: ``cell(1,2,x)``."""
    name, args = t
    return name if not args else f"{name}({','.join(show(a) for a in args)})"


def canonical(text: str) -> str:
    """Normalise spacing: ``cell(1, 2, x)`` -> ``cell(1,2,x)``."""
    return show(parse_ground(text))


def is_integer(name: str) -> bool:
    """Whether a GDL constant travels as a clingo integer (canonical spelling, 32-bit)."""
    return bool(INTEGER.match(name)) and abs(int(name)) <= INT_MAX


def constant_to_asp(name: str) -> str:
    """A GDL constant as a clingo term: identifier, integer, or a quoted string otherwise."""
    if IDENT.match(name) or is_integer(name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def function_name_to_asp(name: str) -> str:
    """A function/relation name as a clingo identifier, injectively (`function_name_from_asp` inverts it).

    The one escaping of the task layer (`tasks.escape`), so that flattened task predicates and
    the game's own rules spell names alike: a name whose ``_``-separated segments are lower-case
    identifiers stays as it is (unless it starts with ``gdl_``, the prefix of orch's own auxiliary
    names, whose first segment is escaped); other segments are written ``k0x...``:
    ``north-speed`` -> ``k0xnorth02dspeed``, ``++`` -> ``k0x02b02b``, ``Wknight`` -> ``k0xWknight``.
    """
    return escape_name(name, force_first=name.startswith("gdl_"))


def function_name_from_asp(name: str) -> str:
    """The GDL spelling of a clingo name made by `function_name_to_asp`."""
    return unescape_predicate(name) if MARKER in name else name


def symbol_text(sym: clingo.Symbol) -> str:
    """Canonical GDL text of a clingo symbol (strings come back unquoted, names unmangled)."""
    text = str(sym)  # one call into clingo; exact unless a string constant is inside
    if '"' not in text:
        return unescape_text(text) if MARKER in text else text
    if sym.type == clingo.SymbolType.Number:
        return str(sym.number)
    if sym.type == clingo.SymbolType.String:
        return sym.string
    if sym.type == clingo.SymbolType.Function:
        name = function_name_from_asp(sym.name)
        if not sym.arguments:
            return name
        return f"{name}({','.join(symbol_text(a) for a in sym.arguments)})"
    raise ValueError(f"unexpected clingo symbol {sym}")


def to_symbol(t: GTerm) -> clingo.Symbol:
    """A ground term as a clingo symbol, consistent with `constant_to_asp`."""
    name, args = t
    if args:
        return clingo.Function(function_name_to_asp(name), [to_symbol(a) for a in args])
    if is_integer(name):
        return clingo.Number(int(name))
    if IDENT.match(name):
        return clingo.Function(name)
    return clingo.String(name)


def flatten(atom: str, nullary: frozenset[str] = frozenset()) -> str:
    """``true(cell(1,2,x))`` -> ``true_cell(1, 2, x)``; ``terminal`` -> ``terminal()`` (module doc).

    ``nullary``: constants the game's GDL writes as zero-arity compounds, ``(next (gameOver))``
    (`tasks.signature.nullary_compounds`). GDL reads ``(gameOver)`` as the constant, but the IGGP
    generator merged it into the predicate like any compound: ``next(gameOver)`` ->
    ``next_gameOver()`` in the last argument of true/next/init/base and legal/does/input.
    """
    name, args = parse_ground(atom)
    if (
        nullary
        and args
        and not args[-1][1]
        and args[-1][0] in nullary
        and _FLATTENED_PREFIX.get(name) == len(args) - 1
    ):
        name, args = f"{name}_{args[-1][0]}", args[:-1]
    while args and args[-1][1]:
        inner_name, inner_args = args[-1]
        name, args = f"{name}_{inner_name}", args[:-1] + inner_args
    for a in args:
        if a[1]:
            raise ValueError(f"cannot flatten {atom!r}: compound term {show(a)} is not the last argument")
    return format_atom(name, [a[0] for a in args])


def unflatten(atom: str, relations: set[str] | frozenset[str] = frozenset()) -> str:
    """Inverse of `flatten` for the dataset's relations, in canonical text.

    The rule: a predicate ``P_f`` with ``P`` in true/next/init/base (0 leading arguments) or
    legal/does/input (1 leading argument, the role) becomes ``P(lead..., f(rest...))``; with no
    ``_f`` suffix, ``terminal()`` -> ``terminal`` and others are unchanged. Flattening is not
    injective in general (a game relation named ``next_to`` would read as ``next(to(..))``),
    so names in ``relations`` (the game's own relation names) are left alone.
    """
    name, args = parse_atom(atom)
    if name not in relations:
        prefix, _, fn = name.partition("_")
        if fn and prefix in _FLATTENED_PREFIX:
            lead = _FLATTENED_PREFIX[prefix]
            if len(args) < lead:
                raise ValueError(f"cannot unflatten {atom!r}: {prefix} needs {lead} leading argument(s)")
            inner = fn if len(args) == lead else f"{fn}({','.join(args[lead:])})"
            return f"{prefix}({','.join([*args[:lead], inner])})"
    return name if not args else f"{name}({','.join(args)})"
