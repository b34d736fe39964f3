"""``python -m orchestrator.cli``: the ``orch`` command without the installed script."""

from orchestrator.cli import app

app()
