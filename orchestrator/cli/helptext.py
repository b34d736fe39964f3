"""``--help`` that renders flags as flags (``--all-games``, not ``--all-games <bool>``) and arguments
as people write them (``FILE...``, not ``{files}... <list[Path]>``).

Why this exists: typer 0.29's rich help panel asks every option for a type label
(``TyperOption.display_type_rich``) and never checks ``is_flag``, so boolean flags, ``--help``
and ``--version`` included, were shown as if they took a ``<bool>`` value (the plain, non-rich
help is right). It also writes a required argument as ``{name}`` and a list argument's type as
``<list[Path]>``. :func:`install` wraps those methods so that a flag shows no type and an argument
shows as ``NAME``, ``[NAME]`` or ``NAME...``; it is applied once, when :mod:`orchestrator.cli`
builds the app, and is a no-op on a typer without the methods.
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
    _install_arguments(core)


def _install_arguments(core: Any) -> None:
    argument = getattr(core, "TyperArgument", None)
    if argument is None or not hasattr(argument, "_usage_display_name"):
        return
    display_type = argument.display_type_rich

    def usage_name(self: Any) -> str:
        name = self.metavar or (self.name or "").upper()
        name += "..." if self.nargs != 1 else ""
        return name if self.required else f"[{name}]"

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if self.nargs != 1 else display_type(self, ctx)  # NAME... already says "several"

    argument._usage_display_name = usage_name
    argument.display_type_rich = display_type_rich
