"""The versioned row schemas of the results store (documented in docs/store.md).

Every row is plain data: strings are UTF-8, structured values (learner params, learner-specific
metrics) are JSON text. Nothing is pickled, so reading somebody else's store never runs code.
Bump :data:`SCHEMA_VERSION` whenever a column is added, removed or changes type; readers refuse
files of another version rather than guess.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1
VERSION_KEY = b"orch.schema_version"

STATUSES = frozenset({"ok", "timeout", "oom", "error", "lost", "killed"})
"""Every status a job row may carry. ``lost``: the job's worker died (Ray's memory monitor, a lost
node, a SIGKILL) on every try; ``killed`` is what stores before ``lost`` existed wrote for it."""

INFRA_STATUSES = frozenset({"oom", "lost", "killed"})
"""Infrastructure failures, not the learner's own: a plain re-run runs these jobs again (``error``
needs ``--retry-failed``), and ``orch run`` exits 1 when a job ends in one."""

FINAL_STATUSES = frozenset({"ok", "timeout"})
"""Statuses that settle a job: rerunning it would not change the outcome, so resume skips it.

``timeout`` is final because the budget is part of the job id: the row holds the best model found
within that budget. ``oom``, ``error``, ``lost`` and ``killed`` are failures a retry (a new attempt) may fix.
They are also the statuses whose stored model and scores are real, so analyses and summaries
(predictive power, composed rules, GraphLog sweeps) read only these.
"""

COUNT_COLUMNS = tuple(f"{split}_{c}" for split in ("test", "validate") for c in ("tp", "fp", "tn", "fn"))

_UTC_US = pa.timestamp("us", tz="UTC")

_JOB_FIELDS = [
    # What defines a job (its id is a hash of these): shared by result rows and sweep manifests.
    pa.field("dataset", pa.string()),
    pa.field("dataset_fingerprint", pa.string()),
    pa.field("game", pa.string()),
    pa.field("target", pa.string()),
    pa.field("predicate", pa.string()),
    pa.field("learner", pa.string()),
    pa.field("params", pa.string()),
    pa.field("seed", pa.int64()),
    pa.field("repeat", pa.int64()),
    pa.field("budget_s", pa.float64()),
]

SCHEMA = pa.schema(
    [
        pa.field("schema_version", pa.int32(), nullable=False),
        pa.field("orch_version", pa.string()),
        pa.field("sweep", pa.string()),
        pa.field("job_id", pa.string(), nullable=False),
        *_JOB_FIELDS,
        pa.field("status", pa.string(), nullable=False),
        pa.field("attempt", pa.int64(), nullable=False),
        *(pa.field(c, pa.int64()) for c in COUNT_COLUMNS),
        pa.field("learn_s", pa.float64()),
        pa.field("eval_s", pa.float64()),
        pa.field("peak_rss", pa.int64()),
        pa.field("node", pa.string()),
        pa.field("started", _UTC_US),
        pa.field("finished", _UTC_US),
        pa.field("model", pa.string()),
        pa.field("error", pa.string()),
        pa.field("extra", pa.string()),
    ],
    metadata={VERSION_KEY: str(SCHEMA_VERSION).encode()},
)
"""One row per job attempt."""

ROW_DEFAULTS = {"repeat": 0, "attempt": 1, "params": "{}", "extra": "{}"}

MANIFEST_SCHEMA = pa.schema(
    [
        pa.field("schema_version", pa.int32(), nullable=False),
        pa.field("sweep", pa.string(), nullable=False),
        pa.field("created", _UTC_US),
        pa.field("job_id", pa.string(), nullable=False),
        *_JOB_FIELDS,
        pa.field("spec", pa.string()),
    ],
    metadata={VERSION_KEY: str(SCHEMA_VERSION).encode()},
)
"""One row per planned job of a sweep; ``spec`` holds the sweep's own settings as JSON text."""
