"""Helpers shared by the bench scripts: locating the published data, timing, and printing tables."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ORCH_SHARED", ROOT.parent / "shared"))


def iggp_dir() -> Path:
    """Unpack ../shared/iggp into the cache (idempotent) and return it. Never inside the project."""
    unpack = SHARED / "iggp" / "unpack"
    if not unpack.exists():
        sys.exit(f"the published IGGP data is not at {SHARED / 'iggp'} (set ORCH_SHARED)")
    dest = Path(os.environ.get("ORCH_CACHE", Path.home() / ".cache" / "orch")) / "iggp"
    subprocess.run([str(unpack), str(dest)], check=True)
    return dest


def peak_rss_mb() -> float:
    """Peak resident memory of this process (and waited-for children) in MiB."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids) / 1024


def print_table(rows: list[dict], as_json: bool = False, title: str | None = None) -> None:
    """Print rows as an aligned text table (or JSON lines with ``as_json``)."""
    if as_json:
        print(json.dumps({"title": title, "rows": rows}, default=str))
        return
    if title:
        print(f"\n{title}")
    if not rows:
        print("(no rows)")
        return
    cols = list(rows[0])
    text = [
        [f"{r.get(c, ''):.3f}" if isinstance(r.get(c), float) else str(r.get(c, "")) for c in cols]
        for r in rows
    ]
    widths = [max(len(c), *(len(t[i]) for t in text)) for i, c in enumerate(cols)]
    print("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for t in text:
        print("  ".join(v.ljust(w) for v, w in zip(t, widths, strict=True)))
