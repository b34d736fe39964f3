"""Bench: how long `orch --help`, `orch --version` and `orch run --help` take, this tree vs a reference.

The reference is another commit checked out in a temporary git worktree (default: 98edc78, the
commit before the CLI imported its heavy modules lazily), run side by side with this tree, each
command alternating between the two so that machine load hits both alike. Each figure is the
median wall time of ``--runs`` fresh interpreters running the ``orch`` script's code
(``from orchestrator.cli import app; app()``) with PYTHONPATH pointing at the tree.

    python bench/bench_cli_startup.py [--runs 9] [--ref 98edc78] [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, print_table  # noqa: E402

COMMANDS = (["--help"], ["--version"], ["run", "--help"])
ORCH = "import sys; sys.argv[0] = 'orch'; from orchestrator.cli import app; app()"


def wall_seconds(tree: Path, args: list[str]) -> float:
    """One run of `orch ARGS` on the code in ``tree``, in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", ORCH, *args], cwd=tree, env=env, check=True, capture_output=True)
    return time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="runs per command and tree (the median is shown)")
    ap.add_argument("--ref", default="98edc78", help="the reference commit (a git revision)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="orch-ref-") as tmp:
        ref = Path(tmp) / "ref"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(ref), args.ref], check=True
        )
        try:
            rows = []
            for command in COMMANDS:
                for tree in (ROOT, ref):  # warm the file cache once per tree, untimed
                    wall_seconds(tree, command)
                now, before = [], []
                for _ in range(args.runs):
                    now.append(wall_seconds(ROOT, command))
                    before.append(wall_seconds(ref, command))
                rows.append(
                    {
                        "command": "orch " + " ".join(command),
                        "this tree s": statistics.median(now),
                        f"{args.ref} s": statistics.median(before),
                        "speed-up": statistics.median(before) / statistics.median(now),
                        "this tree max s": max(now),
                    }
                )
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(ref)], check=True)
    title = f"orch start-up, median of {args.runs} runs (load average {os.getloadavg()[0]:.1f})"
    print_table(rows, args.json, title)


if __name__ == "__main__":
    main()
