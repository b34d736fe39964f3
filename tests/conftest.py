"""Shared fixtures. The published IGGP data is read from ../shared, unpacked into a cache dir.

It is never copied into the project: ``iggp_dir`` unpacks ``../shared/iggp`` (idempotent, ~1 s)
into ``$ORCH_CACHE`` (default ``~/.cache/orch``) and tests read it from there.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ORCH_SHARED", ROOT.parent / "shared"))


def unpack_iggp() -> Path | None:
    unpack = SHARED / "iggp" / "unpack"
    if not unpack.exists():
        return None
    from tasks.cache import cache_dir

    dest = cache_dir("iggp")
    subprocess.run([str(unpack), str(dest)], check=True)
    return dest


@pytest.fixture(scope="session")
def iggp_dir() -> Path:
    """The published IGGP dataset (40 games) in its original layout."""
    d = unpack_iggp()
    if d is None:
        pytest.skip("../shared/iggp is not beside the project")
    return d


@pytest.fixture(scope="session")
def rulesheets() -> Path:
    """The GGP community rulesheets (../shared/ggp/rulesheets), read in place."""
    d = SHARED / "ggp" / "rulesheets"
    if not d.is_dir():
        pytest.skip("../shared/ggp/rulesheets is not beside the project")
    return d


@pytest.fixture(scope="module")
def ray_2cpu():
    """A private local Ray with 2 CPUs, one per test module that asks for it (torn down after it)."""
    pytest.importorskip("ray")
    from orchestrator.scheduling.raysession import local_ray

    with local_ray(2) as ray:
        yield ray
