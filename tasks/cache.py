"""orch's on-disk cache: ``$ORCH_CACHE`` (default ``~/.cache/orch``), one folder per kind of entry.

Everything under it can be deleted at any time; it is rebuilt on demand. Entries are named by a
hash of what they were computed from, so a stale entry is never read, only left behind.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(kind: str) -> Path:
    """The folder of one kind of cache entry (``bundled``, ``neighbours``), not created here."""
    return Path(os.environ.get("ORCH_CACHE", Path.home() / ".cache" / "orch")).expanduser() / kind
