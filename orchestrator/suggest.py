"""Names a person types (learners, games, datasets): resolved forgivingly, refused helpfully.

Why a module of its own: every command that takes a learner or a game name should accept the
same spellings and fail with the same kind of message, one line that says what to do:

* names are matched case-insensitively (``KNN5``, ``Pennies``) and resolved to the canonical
  spelling *before* job ids are computed, so ``--learners KNN5`` resumes a ``knn5`` sweep;
* an unknown name suggests close matches (:mod:`difflib`) and lists the valid ones, learners in
  their parametrised forms (``knnK``, ``ilasp[_bN]``) derived from the registry's patterns;
* the bundled games are called "the bundled games", never by their cache directory;
* a directory that holds the packed IGGP archive (``../shared/iggp``) says to run ``unpack`` first.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tasks.sources import TaskSource


class UnknownName(ValueError):
    """A learner, game or dataset name that does not resolve; the message says what to do."""


def did_you_mean(name: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Close matches of ``name`` among ``choices``, compared case-insensitively."""
    by_lower: dict[str, str] = {}
    for c in choices:
        by_lower.setdefault(c.lower(), c)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.5)
    return [by_lower[c] for c in close]


def _hint(close: Sequence[str]) -> str:
    return f"did you mean {' or '.join(close)}? " if close else ""


# --- learners ------------------------------------------------------------------------------------


def pattern_form(pattern: str) -> str | None:
    """A learner pattern as a person reads it: ``knn(?P<k>\\d+)`` -> ``knnK``,
    ``ilasp(?:_b(?P<max_body>\\d+))?`` -> ``ilasp[_bN]``, alternatives as ``{a,b}``.

    Handles the regex subset the registry uses (literals, ``(?:...)``, ``(?P<n>...)``, ``|``,
    ``?``, ``*`` (shown ``[x]...``), ``\\d``, ``\\d+``); anything else returns None and the caller shows the example name.
    """
    pos = 0

    def seq() -> list[str]:
        nonlocal pos
        alternatives: list[str] = []
        parts: list[str] = []
        while pos < len(pattern) and pattern[pos] != ")":
            c = pattern[pos]
            if c == "|":
                alternatives.append("".join(parts))
                parts, pos = [], pos + 1
                continue
            if c == "(":
                m = re.match(r"\(\?(?::|P<(\w+)>)", pattern[pos:])
                if m is None:
                    raise ValueError(pattern)
                pos += m.end()
                name, inner = m.group(1), group()
                if pattern[pos : pos + 1] != ")":
                    raise ValueError(pattern)
                pos += 1
                if name and inner == "\\d":
                    inner = name.upper() if len(name) == 1 else "N"
                mark = pattern[pos : pos + 1]
                pos += mark in ("?", "*")
                parts.append(f"[{inner}]" if mark == "?" else f"[{inner}]..." if mark == "*" else inner)
                continue
            if pattern.startswith("\\d+", pos) or pattern.startswith("\\d", pos):
                parts.append("\\d")
                pos += 3 if pattern.startswith("\\d+", pos) else 2
                continue
            if c in "\\[]*+?.^$":
                raise ValueError(pattern)
            parts.append(c)
            pos += 1
        if alternatives:
            return ["{" + ",".join([*alternatives, "".join(parts)]) + "}"]
        return parts

    def group() -> str:
        return "".join(seq())

    try:
        form = group()
    except ValueError:
        return None
    if pos != len(pattern):
        return None
    return form.replace("\\d", "N")


def learner_forms() -> list[str]:
    """Every (non-test) learner family as a name form, e.g. ``knnK (e.g. knn5)``."""
    from learners.base import registered

    out = []
    for spec in registered():
        form = pattern_form(spec.pattern) or spec.example
        out.append(form if form == spec.example else f"{form} (e.g. {spec.example})")
    return out


def resolve_learner(name: str) -> str:
    """The registry's spelling of ``name`` (case-insensitive), or :class:`UnknownName`."""
    from learners.base import UnknownLearner, registered, spec_for

    for candidate in dict.fromkeys((name, name.lower())):
        try:
            spec_for(candidate)
            return candidate
        except UnknownLearner:
            continue
    examples = [s.example for s in registered()] + [
        f"{s.example.rstrip('0123456789')}{k}"
        for s in registered()
        if s.example[-1:].isdigit()
        for k in (1, 3)
    ]
    close = did_you_mean(name, examples)
    raise UnknownName(
        f"unknown learner {name!r}; {_hint(close)}known learners: {', '.join(learner_forms())} (orch learners list)"
    )


# --- games and datasets --------------------------------------------------------------------------


def source_label(spec: str | Path | None) -> str:
    """How to name a task source to a person: never the bundled games' cache directory."""
    return "the bundled games" if spec is None or str(spec) == "bundled" else str(spec)


def resolve_game(name: str, known: Sequence[str], where: str) -> str:
    """The dataset's spelling of game ``name`` (case-insensitive), or :class:`UnknownName`."""
    if name in known:
        return name
    folded = [g for g in known if g.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    close = did_you_mean(name, known)
    listing = "" if close else f"games: {', '.join(known)} " if len(known) <= 20 else ""
    raise UnknownName(
        f"no game {name!r} in {where}; {_hint(close)}{listing}(orch games list)".replace("; (", " (")
    )


def packed_dataset_hint(path: str | Path) -> str | None:
    """What to do when ``path`` is the packed IGGP folder (an archive and an ``unpack`` script)."""
    p = Path(path).expanduser()
    if not p.is_dir() or (p / "data").is_dir():
        return None
    archives = sorted(p.glob("*.tar.xz")) + sorted(p.glob("*.tar.gz")) + sorted(p.glob("*.tgz"))
    if not archives:
        return None
    unpack = p / "unpack"
    how = f"{unpack} DIR" if unpack.exists() else f"tar xf {archives[0]} -C DIR"
    return (
        f"{path} holds the packed IGGP dataset ({archives[0].name}), not its data/ layout: "
        f"run `{how}` first, then use --dataset DIR"
    )


def open_dataset(spec: str | Path | None) -> TaskSource:
    """:func:`tasks.sources.open_source` with errors a person can act on (:class:`UnknownName`)."""
    from tasks.sources import open_source

    if spec is not None and str(spec) != "bundled":
        hint = packed_dataset_hint(spec)
        if hint:
            raise UnknownName(hint)
    try:
        return open_source(spec)
    except (ValueError, KeyError, OSError) as e:
        text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
        raise UnknownName(f"cannot open the dataset {source_label(spec)}: {text}") from e
