"""Budgets on the command line: one type, one parser, one meaning for every command that takes one.

A budget is a hard wall-clock limit (``60s``, ``30m``, ``1h``, ``1h30m``, ``2.5m``, ``500ms``, a
bare number of seconds) or ``none`` for no limit; when it runs out the work is stopped, however
stuck, and the best model reported so far is kept. ``orch run``, ``orch learn``, ``orch graphlog
train`` and ``orch graphlog sweep`` all declare their ``--budget`` with :func:`budget_option`, so a
budget string means the same thing everywhere, its errors read the same everywhere, and a typo is
an error, never a silent default.

Errors say which of two things is wrong: the text is not a duration at all (``soon``), or it is a
duration that cannot be a budget (``0s``, ``-5``: zero or negative).
"""

from __future__ import annotations

import math
import re
from typing import Any

import typer

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|min|s|m|h|d)")
_UNLIMITED = {"none", "inf", "unlimited"}
EXAMPLES = "90s, 30m, 1h30m, a number of seconds, or 'none' for no limit"


class DurationError(ValueError):
    """A budget that cannot be used; the message says whether it is no duration or a bad one."""


def parse_duration(text: str | float | int | None) -> float | None:
    """Seconds in ``text``; a bare number is seconds; ``none``/``inf`` (or None) means no limit.

    >>> parse_duration("1h30m"), parse_duration("45"), parse_duration("2.5m"), parse_duration("none")
    (5400.0, 45.0, 150.0, None)
    """
    if text is None:
        return None
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        s = text.strip().lower()
        if s in _UNLIMITED:
            return None
        try:
            seconds = float(s)
        except ValueError:
            seconds = _parse_units(text, s)
    if math.isnan(seconds) or math.isinf(seconds):
        raise DurationError(f"{text!r} is not a finite duration (for no limit, say 'none')")
    if seconds <= 0:
        raise DurationError(f"{text!r} is a duration, but not a positive one: a budget must be above zero")
    return seconds


def _parse_units(original: str, s: str) -> float:
    pos, total = 0, 0.0
    compact = s.replace(" ", "")
    for m in _PART.finditer(compact):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(compact) or pos == 0:
        raise DurationError(f"cannot read duration {original!r}: not a duration (use {EXAMPLES})")
    return total


def format_duration(seconds: float | None) -> str:
    """The inverse, for tables: ``5400 -> '1h30m'``, ``42.5 -> '42.5s'``, ``None -> 'none'``."""
    if seconds is None:
        return "none"
    if seconds < 60 or seconds != int(seconds):
        return f"{seconds:g}s"
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (sec, "s")) if v) or "0s"


def budget(text: str | float | None) -> float | None:
    """The ``--budget`` parser of every command: seconds, or None for no limit; a bad value is a usage error."""
    try:
        return parse_duration(text)
    except DurationError as e:
        raise typer.BadParameter(str(e)) from None


def budget_option(default: str, help: str, *flags: str) -> Any:
    """A typer ``--budget`` option (plus ``flags``) parsed by :func:`budget`; its value is seconds or None."""
    return typer.Option(default, "--budget", *flags, parser=budget, metavar="DURATION", help=help)
