"""The ``orch`` command line (typer). Each command group lives in its own module of this package."""

from __future__ import annotations

import typer

from orchestrator import __version__
from orchestrator.cli import analysis, bench, games, graphlog, helptext, learners, run
from orchestrator.cli.errors import OrchGroup, set_debug
from orchestrator.cli.output import install_warning_format

helptext.install()  # flags render as flags in --help (see orchestrator/cli/helptext.py)

app = typer.Typer(
    name="orch",
    help="orch: run rule-learning benchmarks (IGGP, GraphLog) over learners (ILP, baselines, GNNs) on Ray.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    cls=OrchGroup,  # one error handler: one line per error, exit codes in orchestrator/cli/errors.py
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"orch {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
    debug: bool = typer.Option(False, "--debug", help="Show the traceback of an error (also ORCH_DEBUG=1)."),
) -> None:
    """orch: run rule-learning benchmarks on Ray and analyse the results."""
    set_debug(debug)
    install_warning_format()  # one line per warning: file:line: warning: message


for _module in (games, learners, run, graphlog, analysis, bench):
    _module.register(app)

if __name__ == "__main__":
    app()
