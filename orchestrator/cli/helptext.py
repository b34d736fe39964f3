"""``--help`` that renders flags as flags: ``--all-games``, not ``--all-games <bool>``.

Why this exists: typer 0.29's rich help panel asks every option for a type label
(``TyperOption.display_type_rich``) and never checks ``is_flag``, so boolean flags, ``--help``
and ``--version`` included, were shown as if they took a ``<bool>`` value (the plain, non-rich
help is right). :func:`install` wraps that one method so that a flag shows no type; it is applied
once, when :mod:`orchestrator.cli` builds the app, and is a no-op on a typer without the method.
"""

from __future__ import annotations

from typing import Any


def install() -> None:
    """Make flags (``is_flag`` options, not counters) show no value type in rich help."""
    from typer import core

    option = getattr(core, "TyperOption", None)
    original = getattr(option, "display_type_rich", None)
    if option is None or original is None or getattr(original, "_orch_flags", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) and not getattr(self, "count", False):
            return None
        return original(self, ctx)

    display_type_rich._orch_flags = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich
