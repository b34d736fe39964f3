"""The ``orch`` command line (typer). Each command group lives in its own ``cli_*`` module."""

from __future__ import annotations

import typer

from orchestrator import __version__, cli_analysis, cli_bench, cli_games, cli_graphlog, cli_learners, cli_run

app = typer.Typer(
    name="orch",
    help="orch: run rule-learning benchmarks (IGGP, GraphLog) over learners (ILP, baselines, GNNs) on Ray.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
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
) -> None:
    """orch: run rule-learning benchmarks on Ray and analyse the results."""


for _module in (cli_games, cli_learners, cli_run, cli_graphlog, cli_analysis, cli_bench):
    _module.register(app)

if __name__ == "__main__":
    app()
