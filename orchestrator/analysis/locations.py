"""Where the committed results files live: constants only, so the CLI can show them as option
defaults without importing the analyses (``orch --help`` stays fast)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository root (results files and docs are part of the checkout)."""

RESULTS_DIR = ROOT / "docs" / "results" / "iggp"
"""One CSV per learner and budget (``orch bench export``)."""

GGP_RESULTS_DIR = ROOT / "docs" / "results" / "ggp"
"""The same files for the GGP benchmark (``orch bench ggp``), with the corpus manifest beside them."""
