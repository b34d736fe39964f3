"""`orch --help` stays fast: building the CLI imports none of the heavy libraries.

The commands import what they use inside their bodies (bench/bench_cli_startup.py measures the
time); this test keeps a top-level import of, say, scipy from creeping back into a CLI module.
"""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("ray", "scipy", "pyarrow", "torch", "matplotlib", "clingo", "numpy", "psutil", "learners", "tasks")


def test_building_the_cli_imports_no_heavy_module() -> None:
    code = (
        "import json, sys; from orchestrator.cli import app; import typer.main; typer.main.get_command(app); "
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(out.stdout) == []


def test_version() -> None:
    from orchestrator import __version__

    out = subprocess.run(
        [sys.executable, "-m", "orchestrator.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == f"orch {__version__}"
