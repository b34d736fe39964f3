"""One reversible escaping of KIF names into ASP identifiers, applied where tasks are built.

Why: GDL names may be any KIF symbol (``++``, ``north-speed``, ``1+``, ``Wknight``), and flattening
merges them into predicate names (``true(north-speed(3))`` -> ``true_north-speed(3)``). A predicate
must be an ASP identifier (``[a-z][A-Za-z0-9_]*``) for every learner that writes rules, so the task
layer spells every such name safely before any learner sees it, and programs are printed back in
the GDL spelling. The ``.dat`` and ``.typ`` files keep the GDL spelling (the published layout).

The rule (docs/gdl.md, "Names that are not ASP identifiers, in tasks"):

* A name is cut at ``_`` into *segments*. A segment stays as it is when it is a lower-case
  letter followed by ``[A-Za-z0-9]*`` and does not start with the marker ``k0x``. Any other
  segment becomes ``k0x`` + its characters, where letters and the digits 1-9 stay, ``0`` is
  written ``00`` and every other character is ``0`` followed by two hex digits per UTF-8 byte:
  ``north-speed`` -> ``k0xnorth02dspeed``, ``++`` -> ``k0x02b02b``, ``1+`` -> ``k0x102b``.
* Every name that is an ASP identifier whose segments all start lower-case (every name of the
  published IGGP data) is unchanged, so those tasks are exactly as before.
* Because it works segment by segment, escaping commutes with flattening's ``_`` join: the
  flattened name of escaped GDL names is the escaped flattened name. So a type signature is
  escaped name by name (`tasks.signature.escape_signature`) and agrees with the escaped atoms,
  and the GDL layer spells names for clingo with this same escaping
  (`tasks.gdl.terms.function_name_to_asp`), so an escaped task predicate unflattened
  (``true_k0xnorth02dspeed`` -> ``true(k0xnorth02dspeed(..))``) meets the game's own rules.
* Constants (arguments) are not renamed: every learner that writes ASP already spells a
  constant that is not an identifier or integer as a quoted ASP string, as the GDL layer does
  (``learners.ilp.program.asp_constant``, ``tasks.gdl.terms.constant_to_asp``).

:func:`unescape_predicate` inverts :func:`escape_predicate`; :func:`unescape_text` rewrites every
escaped name in a printed program back to its GDL spelling.
"""

from __future__ import annotations

import re

MARKER = "k0x"
"""Prefix of an escaped segment (a plain segment starting with it is escaped too, so it is unambiguous)."""

_PLAIN = re.compile(r"[a-z][A-Za-z0-9]*\Z")
_BODY_PLAIN = re.compile(r"[A-Za-z1-9]")
_ESCAPED_WORD = re.compile(r"(?<![A-Za-z0-9_'\"])[A-Za-z][A-Za-z0-9_]*")


def _segment_plain(segment: str) -> bool:
    """Whether a segment may stay as it is (see the module docstring)."""
    return bool(_PLAIN.match(segment)) and not segment.startswith(MARKER)


def _encode(segment: str) -> str:
    out = [MARKER]
    for c in segment:
        if _BODY_PLAIN.match(c):
            out.append(c)
        elif c == "0":
            out.append("00")
        else:
            out.extend(f"0{b:02x}" for b in c.encode())
    return "".join(out)


def _decode(segment: str) -> str:
    body, raw, i = segment[len(MARKER) :], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "0":
            raw += c.encode()
            i += 1
        elif body[i + 1 : i + 2] == "0":
            raw += b"0"
            i += 2
        else:
            raw.append(int(body[i + 1 : i + 3], 16))
            i += 3
    return raw.decode()


def escape_name(name: str, force_first: bool = False) -> str:
    """A KIF name (or flattened predicate name) as an ASP identifier, segment by segment.

    ``force_first`` escapes the first segment even when it is plain (the GDL layer uses it to keep
    a game's ``gdl_x`` apart from orch's own ``gdl_`` auxiliaries); decoding is the same.
    """
    return "_".join(
        s if _segment_plain(s) and not (force_first and i == 0) else _encode(s)
        for i, s in enumerate(name.split("_"))
    )


def escape_predicate(name: str) -> str:
    """A flattened predicate name as an ASP identifier: ``true_north-speed`` -> ``true_k0xnorth02dspeed``."""
    return escape_name(name)


def unescape_predicate(name: str) -> str:
    """The GDL spelling of a name made by :func:`escape_predicate` (or :func:`escape_name`)."""
    if MARKER not in name:
        return name
    return "_".join(_decode(s) if s.startswith(MARKER) else s for s in name.split("_"))


def _rename(atom: str, rename) -> str:
    """``atom`` (a flattened atom: predicate, then ``(...)`` or nothing) with its predicate renamed."""
    text = atom.strip()
    i = text.find("(")
    name, rest = (text, "") if i < 0 else (text[:i].rstrip(), text[i:])
    new = rename(name)
    return atom if new == name else new + rest


def escape_atom(atom: str) -> str:
    """A flattened atom with its predicate escaped (constants unchanged; see the module docstring)."""
    return _rename(atom, escape_predicate)


def unescape_atom(atom: str) -> str:
    """Inverse of :func:`escape_atom`."""
    return _rename(atom, unescape_predicate)


def unescape_text(text: str) -> str:
    """A printed program or atom list with every escaped name back in its GDL spelling.

    Quoted strings are left alone; a word is rewritten only if it contains an escaped segment.
    """
    if MARKER not in text:
        return text
    parts = re.split(r'("(?:[^"\\]|\\.)*")', text)
    for i in range(0, len(parts), 2):
        parts[i] = _ESCAPED_WORD.sub(lambda m: unescape_predicate(m.group()), parts[i])
    return "".join(parts)
