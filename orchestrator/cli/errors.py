"""One error type, one handler and one set of exit codes for every ``orch`` command.

Why: a user who mistypes a path or feeds a malformed file should see one line saying what is wrong
and where, never a traceback (``orch --debug CMD`` shows it). Commands raise :class:`OrchError` (or
one of the input errors listed in :data:`INPUT_ERRORS`, raised deep in ``tasks/`` or the store) and
:class:`OrchGroup`, the ``orch`` app's command class, turns it into ``error: ...`` on stderr and the
exit code below. Anything else is a bug: one line naming it and exit :data:`EXIT_INTERNAL`.

Exit codes (the same for every command; README "Exit codes"):

====  ==========================================================================================
0     done: everything asked for ran, every job is ``ok``, ``timeout`` or ``not_applicable``
1     done, but some job ended ``error``, ``oom`` or ``lost`` (``run``, ``status``, ``report``,
      ``learn``; the last line says which), or ``orch games check`` found a disagreement
2     could not run, found before Ray starts where it can be: bad usage or option, an unknown name
      (learner, game, target, sweep), a learner that does not apply to the dataset or whose
      requirements are missing (orchestrator/cli/preflight.py), a missing data file, a malformed
      input file (``.dat``, ``.typ``, GDL), a missing or unusable store
3     ``orch games check --strict``: only known data defects
70    internal error (a bug in orch): run ``orch --debug ...`` and report the traceback
130   interrupted (Ctrl-C, SIGTERM); what finished is kept
====  ==========================================================================================
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

import typer
from typer.core import TyperGroup

try:  # typer >= 0.25 vendors click; older typer uses the click package
    from typer.core import _click as click
except ImportError:  # pragma: no cover
    import click  # type: ignore[no-redef]

_PASS_THROUGH: tuple[type[BaseException], ...] = tuple(
    {typer.Exit, typer.Abort, typer.TyperException}
    | {
        getattr(click.exceptions, n)
        for n in ("Exit", "ClickException", "Abort")
        if hasattr(click.exceptions, n)
    }
)
"""Exits and usage errors the CLI framework reports itself (usage errors exit 2, as ours do)."""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INPUT = 2
EXIT_STRICT = 3
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

DEBUG_ENV = "ORCH_DEBUG"


class OrchError(Exception):
    """A user-facing error: its message is one line that says what is wrong and where.

    Raise it anywhere a command can run into bad input; the CLI prints ``error: <message>`` and exits
    with ``exit_code`` (default 2). Subclasses may set another ``exit_code``.
    """

    exit_code: int = EXIT_INPUT

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


def _input_errors() -> tuple[type[BaseException], ...]:
    """Errors raised by the lower layers that are about the user's input, not a bug."""
    from learners.base import UnknownLearner
    from orchestrator.scheduling.raysession import SchedulerError
    from orchestrator.scheduling.sweep import SweepError
    from orchestrator.storage.store import StoreError
    from tasks.iggp import DatError, UnknownGame
    from tasks.signature import SignatureError

    return (DatError, SignatureError, UnknownGame, UnknownLearner, StoreError, SweepError, SchedulerError,
            FileNotFoundError, PermissionError)  # fmt: skip


_debug = False


def set_debug(flag: bool) -> None:
    """``orch --debug``: show tracebacks (set per invocation, so it never leaks into the next one)."""
    global _debug
    _debug = flag


def debug_enabled() -> bool:
    return _debug or os.environ.get(DEBUG_ENV, "") not in ("", "0")


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (its first non-empty line), credentials scrubbed."""
    from orchestrator.storage.store import scrub

    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return scrub(lines[0] if lines else type(exc).__name__) or ""


def report(exc: BaseException) -> int:
    """Print ``exc`` as one line on stderr; return the exit code for it."""
    if isinstance(exc, OrchError):
        typer.echo(f"error: {one_line(exc)}", err=True)
        return exc.exit_code
    if isinstance(exc, _input_errors()):
        typer.echo(f"error: {one_line(exc)}", err=True)
        return EXIT_INPUT
    typer.echo(
        f"internal error: {type(exc).__name__}: {one_line(exc)} (orch --debug ... shows the traceback)",
        err=True,
    )
    return EXIT_INTERNAL


class OrchGroup(TyperGroup):
    """The ``orch`` app's group: every subcommand runs inside the one error handler."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _PASS_THROUGH:
            raise
        except KeyboardInterrupt:
            typer.echo("interrupted", err=True)
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except Exception as exc:
            if debug_enabled():
                traceback.print_exc(file=sys.stderr)
            raise typer.Exit(report(exc)) from None
