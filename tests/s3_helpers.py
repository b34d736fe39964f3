"""A real S3 API for tests: moto's server on 127.0.0.1, reached through pyarrow's S3 filesystem."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def moto_s3() -> Iterator[str]:
    """Start moto's S3 server on a free loopback port; yield a fresh ``s3://bucket/prefix?...`` store URI."""
    pytest.importorskip("flask", reason="moto's server needs moto[server] (flask)")
    boto3 = pytest.importorskip("boto3")
    from moto.server import ThreadedMotoServer

    saved = {
        k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION")
    }
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
    )
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        bucket = f"orch-{uuid.uuid4().hex[:8]}"
        boto3.client("s3", endpoint_url=f"http://{host}:{port}").create_bucket(Bucket=bucket)
        yield f"s3://{bucket}/store?endpoint_override={host}:{port}&scheme=http&region=us-east-1"
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
