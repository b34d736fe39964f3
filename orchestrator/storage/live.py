"""The live file: which jobs a running sweep has in flight, for ``orch status``.

The store holds finished jobs only; "running" is known only to the driver. While a sweep runs, its
driver rewrites ``DIR/_live/<hash of the sweep name>.json`` every couple of seconds with the ids of the jobs out on
workers. Readers trust a live file refreshed in the last 30 s, so a killed driver's jobs go back to
"remaining" by themselves. Parquet readers ignore the ``_live`` directory (it starts with ``_``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence

from orchestrator.storage.store import ResultStore, scrub

LIVE_DIR = "_live"
LIVE_STALE_S = 30.0


def _live_path(store: ResultStore, sweep: str) -> str:
    # a hash, not the name: a sweep name may carry a secret, and nothing the store writes may
    digest = hashlib.sha256(sweep.encode()).hexdigest()[:16]
    return f"{store.root}/{LIVE_DIR}/{digest}.json"


def write_live_jobs(store: ResultStore, sweep: str, job_ids: Sequence[str]) -> None:
    """Replace the sweep's live file (ignored by every Parquet reader: it starts with ``_``)."""
    data = json.dumps(
        {"sweep": scrub(sweep), "updated": time.time(), "pid": os.getpid(), "jobs": list(job_ids)}
    )
    try:
        store.fs.create_dir(f"{store.root}/{LIVE_DIR}", recursive=True)
        with store.fs.open_output_stream(_live_path(store, sweep)) as f:
            f.write(data.encode())
    except OSError:
        pass  # a progress hint only; never fail a sweep for it


def clear_live_jobs(store: ResultStore, sweep: str) -> None:
    try:
        store.fs.delete_file(_live_path(store, sweep))
    except OSError:
        pass


def read_live_jobs(store: ResultStore) -> set[str]:
    """Job ids in flight in any sweep whose driver refreshed its live file in the last 30 s."""
    import pyarrow.fs as pafs

    running: set[str] = set()
    try:
        infos = store.fs.get_file_info(pafs.FileSelector(f"{store.root}/{LIVE_DIR}", allow_not_found=True))
        for info in infos:
            if not info.base_name.endswith(".json"):
                continue
            with store.fs.open_input_stream(info.path) as f:
                data = json.loads(f.read().decode())
            if time.time() - float(data.get("updated", 0)) <= LIVE_STALE_S:
                running.update(data.get("jobs", []))
    except (OSError, ValueError):
        pass
    return running
