"""IGGP type signatures (``.typ`` files): declarations, subtyping, and ``ground(Σ, p)``.

The syntax, one declaration per ``.``-terminated statement::

    true, next :: prop -> bool.          % relations (result type bool)
    cell :: pos -> pos -> mark -> prop.  % function symbols building terms of type prop
    1, 2, 3 :: pos.                      % constants of type pos
    pos :> int.                          % subtyping: every pos is an int

``a :> b`` reads "a is a subtype of b" (the published data confirms it: in farming, ``pos :> int``
puts the positions 1..4 among the scores). Relations are *flattened* the way the dataset writes
atoms: a compound argument's function symbol is merged into the predicate name and its arguments
are spliced in place, so ``true(cell(1,2,x))`` is ``true_cell(1, 2, x)`` and
``legal(white, mark(1,2))`` is ``legal_mark(white, 1, 2)``, while a constant argument stays
(``legal(black, noop)``, ``next(p)``). One published game departs from this: gt_centipede (which
has no GDL, only Prolog) writes its fluent constant as ``next_gameOver()``; the task's atoms come
from its files, so only regenerating its ``atoms:`` section from the signature differs.

``ground(p)`` enumerates every well-typed flattened ground atom of relation ``p`` in the
dataset's order: function symbols sorted by name, constants of a type as (constants of its
subtypes, then its own, each sorted), and the first argument varying fastest.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tasks.atoms import parse_atom


class SignatureError(ValueError):
    """A malformed ``.typ`` file; the message names the file and line."""


@dataclass(frozen=True)
class Declaration:
    """``name :: t1 -> ... -> result``; constants have no argument types."""

    name: str
    arg_types: tuple[str, ...]
    result: str
    line: int


@dataclass
class Signature:
    """A parsed type signature with subtyping. ``source`` names the file for error messages."""

    declarations: list[Declaration] = field(default_factory=list)
    subtypes: dict[str, list[str]] = field(default_factory=dict)  # supertype -> its direct subtypes
    source: str = "<typ>"
    nullary: frozenset[str] = frozenset()
    """Constants the GDL writes as zero-arity compounds, ``(next (gameOver))``: flattened into the
    predicate as the IGGP generator did (``next_gameOver()``; :func:`nullary_compounds`)."""

    # -- queries -------------------------------------------------------------------------------
    def relations(self) -> list[Declaration]:
        return [d for d in self.declarations if d.result == "bool"]

    def relation(self, name: str) -> Declaration:
        for d in self.declarations:
            if d.name == name and d.result == "bool":
                return d
        raise KeyError(f"{self.source}: no relation {name!r} declared")

    def types(self) -> set[str]:
        out = {d.result for d in self.declarations if d.result != "bool"}
        for d in self.declarations:
            out.update(d.arg_types)
        for sup, subs in self.subtypes.items():
            out.add(sup)
            out.update(subs)
        return out

    def _with_subtypes(self, type_: str) -> list[str]:
        """``type_`` preceded by its subtypes (transitively, subtypes first), without repeats."""
        order: list[str] = []

        def visit(t: str, seen: frozenset[str]) -> None:
            for s in sorted(self.subtypes.get(t, [])):
                if s not in seen:
                    visit(s, seen | {s})
            if t not in order:
                order.append(t)

        visit(type_, frozenset({type_}))
        return order

    def constants(self, type_: str) -> list[str]:
        """Constants of ``type_``, subtypes included (subtypes' first, each group sorted)."""
        out: dict[str, None] = {}
        for t in self._with_subtypes(type_):
            for c in sorted(d.name for d in self.declarations if d.result == t and not d.arg_types):
                out.setdefault(c, None)
        return list(out)

    def functions(self, type_: str) -> list[Declaration]:
        """Function symbols (arity > 0) building terms of ``type_`` (subtypes included), by name."""
        out: dict[str, Declaration] = {}
        for t in self._with_subtypes(type_):
            for d in sorted(
                (d for d in self.declarations if d.result == t and d.arg_types), key=lambda d: d.name
            ):
                out.setdefault(d.name, d)
        return list(out.values())

    def flat_predicates(self, relation: str) -> dict[str, tuple[str, ...]]:
        """Flattened predicates of a relation with their argument types.

        ``flat_predicates("legal")`` -> ``{"legal_mark": ("agent", "pos", "pos"), "legal": ("agent", "action")}``.
        The unflattened name keeps the constant-valued case (``legal(black, noop)``).
        """
        out: dict[str, tuple[str, ...]] = {}
        for name, types, _ in self._flat_shapes(self.relation(relation)):
            out.setdefault(name, types)
        return out

    def all_flat_predicates(self) -> dict[str, tuple[str, ...]]:
        """Every flattened predicate of every relation (``true_cell``, ``does_mark``, ``succ``, ...)."""
        out: dict[str, tuple[str, ...]] = {}
        for d in self.relations():
            for name, types, _ in self._flat_shapes(d):
                out.setdefault(name, types)
        return out

    def arg_types(self, flat_predicate: str) -> tuple[str, ...]:
        """Argument types of a flattened predicate such as ``true_cell`` or ``legal``."""
        preds = self.all_flat_predicates()
        if flat_predicate not in preds:
            raise KeyError(f"{self.source}: no flattened predicate {flat_predicate!r}")
        return preds[flat_predicate]

    def ground_size(self, relation: str) -> int:
        """``len(self.ground(relation))``, counted without writing one atom (a product of domains)."""
        total = 0
        for _, types, _ in self._flat_shapes(self.relation(relation)):
            total += math.prod(len(self._plain_constants(t)) for t in types)
        return total

    def produces(self, relation: str) -> Callable[[str], bool]:
        """A test of ``atom in self.ground(relation)`` that enumerates nothing (the ground set of
        an inferred signature can be too big to hold: a product of every argument's domain)."""
        shapes: dict[str, list[list[set[str]]]] = {}
        for name, types, _ in self._flat_shapes(self.relation(relation)):
            shapes.setdefault(name, []).append([set(self._plain_constants(t)) for t in types])

        def test(atom: str) -> bool:
            name, args = parse_atom(atom)
            return any(
                len(domains) == len(args) and all(a in d for a, d in zip(args, domains, strict=True))
                for domains in shapes.get(name, ())
            )

        return test

    def ground(self, relation: str) -> list[str]:
        """``ground(Σ, p)``: every well-typed flattened ground atom of ``relation``, in dataset order."""
        atoms: list[str] = []
        shapes = sorted(self._flat_shapes(self.relation(relation)), key=lambda s: s[2])
        for name, types, _ in shapes:
            domains = [self._plain_constants(t) for t in types]
            for combo in itertools.product(*reversed(domains)):
                atoms.append(f"{name}({', '.join(reversed(combo))})")
        return atoms

    # -- flattening ------------------------------------------------------------------------------
    def _flat_shapes(self, rel: Declaration) -> Iterator[tuple[str, tuple[str, ...], str]]:
        """(flat name, flat arg types, sort key) for each way of filling compound arguments.

        The sort key orders shapes as the dataset does: by the inner function symbol's name, with
        the constant-only shape sorted under the name of its constants' type position (it sits
        among the function symbols alphabetically by its constants, e.g. ``noop``).
        """
        per_arg: list[list[tuple[str | None, tuple[str, ...]]]] = []
        for t in rel.arg_types:
            options: list[tuple[str | None, tuple[str, ...]]] = []
            merged = self._functors(t)
            if self._plain_constants(t) or not merged:
                options.append((None, (t,)))
            options.extend(merged)
            per_arg.append(options)
        for combo in itertools.product(*per_arg):
            functors = [f for f, _ in combo if f is not None]
            name = "_".join([rel.name, *functors])
            types = tuple(t for _, ts in combo for t in ts)
            key_parts = []
            for (functor, _), t in zip(combo, rel.arg_types, strict=True):
                consts = self._plain_constants(t)
                key_parts.append(
                    functor if functor is not None else (consts[0] if consts and self._functors(t) else "")
                )
            yield name, types, "\0".join(key_parts)

    def _plain_constants(self, type_: str) -> list[str]:
        """Constants of ``type_`` that stay arguments: not the :attr:`nullary` ones, which are
        predicate suffixes only (``next_gameOver()``; a ``next(gameOver)`` beside it would be a
        second, always-false spelling of the same fluent, as the published files never have)."""
        consts = self.constants(type_)
        return [c for c in consts if c not in self.nullary] if self.nullary else consts

    def _functors(self, type_: str) -> list[tuple[str, tuple[str, ...]]]:
        """(name, argument types) of what flattening merges into a predicate in a ``type_`` slot:
        the function symbols, and the :attr:`nullary` constants (no arguments), by name."""
        out: list[tuple[str, tuple[str, ...]]] = [(f.name, f.arg_types) for f in self.functions(type_)]
        nullary: list[tuple[str, tuple[str, ...]]] = [
            (c, ()) for c in self.constants(type_) if c in self.nullary
        ]
        return sorted(out + nullary, key=lambda f: f[0]) if nullary else out


_IDENT = re.compile(r"[A-Za-z0-9_]+")
"""Type names of a signature."""

_NAME = re.compile(r"[^\s(),:;'\"]+")
"""Declared names (relations, functions, constants): any KIF symbol, as GDL spells it (``++``,
``north-speed``; docs/gdl.md), but nothing the ``.typ`` syntax itself uses."""


_COMMENT = re.compile(r"%[^\n]*")


def typ_name(name: str) -> str:
    """A declared name as a ``.typ`` file can carry it: as GDL spells it, unless it holds a
    character of the ``.typ`` syntax (``.``, ``:``, ``'``, ``%``) or an escape marker;
    then escaped (`tasks.escape.escape_name`), which :func:`parse_typ` undoes."""
    from tasks.escape import MARKER, escape_name

    if _NAME.fullmatch(name) and not {".", "%"} & set(name) and MARKER not in name:
        return name
    return escape_name(name)


def _typ_unescape(name: str) -> str:
    from tasks.escape import MARKER, unescape_predicate

    return unescape_predicate(name) if MARKER in name else name


def parse_typ(source: str | Path, name: str | None = None) -> Signature:
    """Parse a ``.typ`` file (a path) or its text. Errors name the file and line."""
    if isinstance(source, Path) or (
        isinstance(source, str) and "\n" not in source and source.endswith(".typ")
    ):
        path = Path(source)
        try:
            text = path.read_text()
        except OSError as e:
            raise SignatureError(f"{path}: cannot read type signature: {e.strerror}") from e
        except UnicodeDecodeError as e:
            raise SignatureError(f"{path}: not UTF-8 text (byte {e.start})") from e
        label = str(path)
    else:
        text, label = str(source), name or "<typ>"
    sig = Signature(source=label)
    text = _COMMENT.sub("", text)  # a comment ends at its line's end, not at the next '.'
    pos = 0
    for raw in text.split("."):
        line = text.count("\n", 0, pos + len(raw) - len(raw.lstrip())) + 1
        pos += len(raw) + 1
        stmt = " ".join(raw.split())
        if not stmt or stmt.startswith("%"):
            continue
        if ":>" in stmt:
            sub, _, sup = (s.strip() for s in stmt.partition(":>"))
            if not _IDENT.fullmatch(sub) or not _IDENT.fullmatch(sup):
                raise SignatureError(f"{label}:{line}: malformed subtype declaration {stmt[:120]!r}")
            sig.subtypes.setdefault(sup, []).append(sub)
            continue
        if "::" not in stmt:
            raise SignatureError(f"{label}:{line}: expected 'names :: type' or 'a :> b', got {stmt!r}")
        names, _, type_expr = stmt.partition("::")
        parts = [p.strip() for p in type_expr.split("->")]
        if not all(_IDENT.fullmatch(p) for p in parts):
            raise SignatureError(f"{label}:{line}: malformed type {type_expr.strip()[:120]!r}")
        for n in (n.strip() for n in names.split(",")):
            if not n:
                raise SignatureError(f"{label}:{line}: empty name in {stmt[:120]!r}")
            if not _NAME.fullmatch(n):
                raise SignatureError(f"{label}:{line}: malformed name {n[:120]!r} in {stmt[:120]!r}")
            sig.declarations.append(Declaration(_typ_unescape(n), tuple(parts[:-1]), parts[-1], line))
    return sig


_NULLARY = re.compile(
    r"\(\s*(?:true|next|init|base|(?:legal|does|input)\s+[^\s()]+)\s+\(\s*([^\s()]+)\s*\)\s*\)", re.IGNORECASE
)


def nullary_compounds(gdl_text: str) -> frozenset[str]:
    """Names a GDL text writes as zero-arity compounds in a fluent or move: ``(next (gameOver))``.

    GDL reads ``(gameOver)`` as the constant ``gameOver``, but the IGGP generator flattened it into
    the predicate (``next_gameOver()``, gt_centipede), so regenerated ``atoms:`` sections must too.
    """
    return frozenset(m.group(1) for m in _NULLARY.finditer(gdl_text))


def with_nullary_compounds(sig: Signature, gdl_file: str | Path | None) -> Signature:
    """``sig`` knowing which of its constants ``gdl_file`` writes as zero-arity compounds."""
    if gdl_file is None:
        return sig
    found = nullary_compounds(Path(gdl_file).read_text(errors="replace"))
    declared = {d.name for d in sig.declarations if not d.arg_types and d.result != "bool"}
    nullary = frozenset(found & declared)
    if not nullary:
        return sig
    return Signature(sig.declarations, sig.subtypes, sig.source, nullary)


def escape_signature(sig: Signature) -> Signature:
    """``sig`` with relation and function names escaped (`tasks.escape`), so that its flattened
    predicates are those of the task's escaped atoms; constants and types unchanged. ``sig``
    itself when nothing changes (every published ``.typ``)."""
    from dataclasses import replace

    from tasks.escape import escape_name

    declarations = []
    for d in sig.declarations:
        relation_or_function = d.result == "bool" or d.arg_types
        declarations.append(replace(d, name=escape_name(d.name)) if relation_or_function else d)
    if declarations == sig.declarations:
        return sig
    return Signature(declarations, sig.subtypes, sig.source, sig.nullary)
