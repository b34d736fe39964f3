"""Human durations for budgets on the command line: ``60s``, ``30m``, ``1h``, ``1h30m``, ``90``.

One parser for every command that takes a budget (``orch learn``, ``orch run``), so that a budget
string means the same thing everywhere and a typo is an error, never a silent default.
"""

from __future__ import annotations

import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)\s*(ms|min|s|m|h|d)")
_UNLIMITED = {"none", "inf", "unlimited"}


def parse_duration(text: str | float | int | None) -> float | None:
    """Seconds in ``text``; a bare number is seconds; ``none``/``inf`` (or None) means unlimited.

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
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"duration {text!r} must be a positive, finite time (or 'none' for unlimited)")
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
        raise ValueError(
            f"cannot read duration {original!r}: use a number of seconds or units like 90s, 30m, 1h, 1h30m"
        )
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
