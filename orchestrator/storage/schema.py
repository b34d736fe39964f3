"""The versioned row schemas of the results store (documented in docs/store.md).

Every row is plain data: strings are UTF-8, structured values (learner params, learner-specific
metrics) are JSON text. Nothing is pickled, so reading somebody else's store never runs code.
Bump :data:`SCHEMA_VERSION` whenever a column is added, removed or changes type; readers refuse
files of an unknown version rather than guess, and read each older version they know through its
own schema (:data:`SCHEMAS`), mapped to the current one (see :mod:`orchestrator.storage.store`).

Every result row is built by one constructor, :func:`result_row`, so a misspelt column or a value
of the wrong kind fails where the row is made, not when a batch of rows is written.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

SCHEMA_VERSION = 3
"""2: ``model`` split into ``program`` (learned rules) and ``description`` (what the model is).
3: ``peak_gpu``, the job's peak GPU memory (null for jobs that used no GPU, and in older rows)."""
VERSION_KEY = b"orch.schema_version"
MANIFEST_VERSION = 1
"""Manifests did not change with results version 2, so they keep their own version."""

NOT_APPLICABLE = "not_applicable"
"""The status of a job whose learner does not apply to its task (its ``applies`` hook said so; the
reason is in ``error``). Settled like a final status (resume skips it), but there is no model, and
reports leave such tasks out for that learner instead of counting them incomplete."""

STATUSES = frozenset({"ok", "timeout", "oom", "error", "lost", "killed", NOT_APPLICABLE})
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

GRAPHLOG_TARGET_PREFIX = "graphlog-"
"""``target`` of a GraphLog setup job (``graphlog-supervised``, ...; orchestrator/graphlog/jobs.py):
such rows score worlds, not tasks, so the IGGP-style reports leave them out."""

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
        pa.field("peak_gpu", pa.int64()),
        pa.field("node", pa.string()),
        pa.field("started", _UTC_US),
        pa.field("finished", _UTC_US),
        pa.field("program", pa.string()),
        pa.field("description", pa.string()),
        pa.field("error", pa.string()),
        pa.field("extra", pa.string()),
    ],
    metadata={VERSION_KEY: str(SCHEMA_VERSION).encode()},
)
"""One row per job attempt."""

SCHEMA_V2 = pa.schema([f for f in SCHEMA if f.name != "peak_gpu"], metadata={VERSION_KEY: b"2"})
"""Version 2: no ``peak_gpu`` (read as null)."""

SCHEMA_V1 = pa.schema(
    [
        *(f for f in SCHEMA_V2 if f.name not in ("program", "description", "error", "extra")),
        pa.field("model", pa.string()),
        pa.field("error", pa.string()),
        pa.field("extra", pa.string()),
    ],
    metadata={VERSION_KEY: b"1"},
)
"""Version 1: one ``model`` column held either the learned rules or the model's description."""

SCHEMAS = {1: SCHEMA_V1, 2: SCHEMA_V2, SCHEMA_VERSION: SCHEMA}
"""Every result-row version this orch reads."""

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
    metadata={VERSION_KEY: str(MANIFEST_VERSION).encode()},
)
"""One row per planned job of a sweep; ``spec`` holds the sweep's own settings as JSON text."""


PREDICTIVE_SCHEMA = pa.schema(
    [
        pa.field("schema_version", pa.int32(), nullable=False),
        pa.field("sweep", pa.string()),
        pa.field("dataset", pa.string()),
        pa.field("game", pa.string()),
        pa.field("learner", pa.string()),
        pa.field("seed", pa.int64()),
        pa.field("repeat", pa.int64()),
        pa.field("applicability_precision", pa.float64()),
        pa.field("applicability_recall", pa.float64()),
        pa.field("effects_precision", pa.float64()),
        pa.field("effects_recall", pa.float64()),
        pa.field("actions", pa.int64()),
        pa.field("joint_actions", pa.int64()),
    ],
    metadata={VERSION_KEY: b"1"},
)
"""``orch analyse predictive``: one row per run (sweep, dataset, game, learner, seed, repeat)."""

ANALYSIS_SCHEMAS = {"predictive": PREDICTIVE_SCHEMA}
"""Store-level analyses with a table of their own (``DIR/analyses/<name>/``), each versioned."""


ResultRow = dict[str, Any]
"""A result row as :func:`result_row` builds it: column -> value (columns left out are null)."""


def result_row(
    job_id: str,
    *,
    status: str | None = None,
    orch_version: str | None = None,
    sweep: str | None = None,
    dataset: str | None = None,
    dataset_fingerprint: str | None = None,
    game: str | None = None,
    target: str | None = None,
    predicate: str | None = None,
    learner: str | None = None,
    params: str | dict | None = None,
    seed: int | None = None,
    repeat: int | None = None,
    budget_s: float | None = None,
    attempt: int | None = None,
    test_tp: int | None = None,
    test_fp: int | None = None,
    test_tn: int | None = None,
    test_fn: int | None = None,
    validate_tp: int | None = None,
    validate_fp: int | None = None,
    validate_tn: int | None = None,
    validate_fn: int | None = None,
    learn_s: float | None = None,
    eval_s: float | None = None,
    peak_rss: int | None = None,
    peak_gpu: int | None = None,
    node: str | None = None,
    started: dt.datetime | None = None,
    finished: dt.datetime | None = None,
    program: str | None = None,
    description: str | None = None,
    error: str | None = None,
    extra: str | dict | None = None,
) -> ResultRow:
    """The one constructor of result rows (workers, the scheduler, GraphLog jobs all use it).

    Keyword arguments are the columns of :data:`SCHEMA` (a misspelt one is a ``TypeError`` here);
    ``None`` leaves a column out (null when stored). ``status`` may be filled in later, but when
    given it must be one of :data:`STATUSES`. ``program`` is the learned rules as clingo text
    (``None`` for a model without rules, ``""`` for the empty program); ``description`` says what
    the model is. The store sets ``schema_version`` itself.
    """
    if status is not None and status not in STATUSES:
        raise ValueError(f"job {job_id!r}: status {status!r} is not one of {sorted(STATUSES)}")
    values: dict[str, Any] = dict(locals())
    return {k: v for k, v in values.items() if v is not None}


def complete_row(row: dict, **fields: Any) -> ResultRow:
    """``row`` with ``fields`` added (``fields`` win), checked by :func:`result_row` again."""
    return result_row(**{**row, **fields})


def missing_as_null(table: pa.Table, columns: list[str]) -> pa.Table:
    """``table`` with ``columns`` (current-schema columns, in that order), those an older version did
    not have added as nulls: how rows of an older file read in the current schema."""
    return pa.table(
        {
            name: (
                table[name]
                if name in table.column_names
                else pa.nulls(table.num_rows, SCHEMA.field(name).type)
            )
            for name in columns
        },
        schema=pa.schema([SCHEMA.field(name) for name in columns]),
    )
