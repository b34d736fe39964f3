"""Fixtures of the storage tests: one results store per backend (a local folder, moto's S3)."""

from __future__ import annotations

import pytest
from s3_helpers import moto_s3

from orchestrator.storage.store import ResultStore


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    """An empty store on a local disk, then the same on a real S3 API (moto's server)."""
    if request.param == "local":
        yield ResultStore(tmp_path / "store")
    else:
        with moto_s3() as uri:
            yield ResultStore(uri)
