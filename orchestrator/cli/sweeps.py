"""Sweeps as names a person uses: ``orch sweeps`` lists them, ``--sweep NAME`` is checked, ``orch gc`` tidies.

Why: a sweep's default name is a hash (``sweep-289475b8e6``), and before this module no command
listed them, so ``--sweep`` meant reading the Parquet by hand. Here:

* :func:`sweep_summaries`: one row per sweep from the manifests and the rows (created, dataset,
  learners, jobs done/failed, last activity), for ``orch sweeps``;
* :func:`resolve_sweep`: the ``--sweep`` value of ``status``, ``report``, ``compare`` and
  ``analyse`` in the store's spelling, or exit 2 with close matches and the command that lists them;
* :func:`dataset_changes`: what ``orch run`` says when a rerun follows a data fix (the data changed
  since sweep X; this sweep is now current);
* :func:`failed_line`: the last line of ``orch run`` when some job of the sweep ended error/oom/lost;
* ``orch gc``: deletes superseded rows (older attempts, results on older data) on request only,
  with ``--dry-run`` counting them first.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer

from orchestrator.cli.errors import EXIT_INPUT, OrchError
from orchestrator.storage import DEFAULT_STORE

if TYPE_CHECKING:
    from orchestrator.scheduling.scheduler import SweepResult
    from orchestrator.scheduling.sweep import Job
    from orchestrator.storage.store import ResultStore

SWEEP_COLUMNS = ("sweep", "created", "dataset", "learners", "jobs", "done", "failed", "last_activity")


def _when(value: Any) -> str:
    """A timestamp as people read it in a listing: ``2026-11-26 14:02:11`` (UTC), ``-`` if unknown."""
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def sweep_summaries(store: ResultStore) -> list[dict]:
    """One dict per sweep of the store (oldest first): :data:`SWEEP_COLUMNS`.

    ``jobs`` counts the sweep's planned jobs (its manifest; for a sweep without one, its rows),
    ``done`` those whose latest row is ok/timeout/not_applicable, ``failed`` error/oom/lost.
    """
    from orchestrator.storage.schema import INFRA_STATUSES

    manifests = store.manifests().select(["sweep", "created", "job_id", "dataset", "learner"]).to_pylist()
    latest = store.latest(["job_id", "sweep", "status", "finished", "dataset", "learner"]).to_pylist()
    status = {r["job_id"]: r["status"] for r in latest}
    info: dict[str, dict] = defaultdict(lambda: {"jobs": set(), "datasets": set(), "learners": set(),
                                                 "created": None, "last": None})  # fmt: skip
    for m in manifests:
        s = info[m["sweep"]]
        s["jobs"].add(m["job_id"])
        s["datasets"].add(m["dataset"])
        s["learners"].add(m["learner"])
        s["created"] = min(filter(None, (s["created"], m["created"])), default=None)
    for r in latest:
        s = info[r["sweep"] or "(no sweep)"]
        s["jobs"].add(r["job_id"])
        s["datasets"].add(r["dataset"])
        s["learners"].add(r["learner"])
        s["last"] = max(filter(None, (s["last"], r["finished"])), default=None)
        s["created"] = s["created"] or r["finished"]
    failed = INFRA_STATUSES | {"error"}
    out = []
    for name, s in info.items():
        states = [status.get(j) for j in s["jobs"]]
        out.append({
            "sweep": name, "created": _when(s["created"]),
            "dataset": ", ".join(sorted(d for d in s["datasets"] if d)) or "-",
            "learners": ",".join(sorted(x for x in s["learners"] if x)), "jobs": len(s["jobs"]),
            "done": sum(1 for x in states if x is not None and x not in failed),
            "failed": sum(1 for x in states if x in failed), "last_activity": _when(s["last"]),
        })  # fmt: skip
    return sorted(out, key=lambda r: (r["created"], r["sweep"]))


def sweep_names(store: ResultStore) -> list[str]:
    """Every sweep name the store knows, from its manifests and its rows."""
    names = set(store.manifests()["sweep"].to_pylist()) | set(store.latest(["sweep"])["sweep"].to_pylist())
    return sorted(n for n in names if n)


def resolve_sweep(store: ResultStore, name: str | None) -> str | None:
    """``name`` in the store's spelling (exact, case-insensitive, or a unique prefix), or None for None.

    An unknown name is bad input (exit 2), with close matches and ``orch sweeps`` to list them.
    """
    from orchestrator.storage.store import scrub
    from orchestrator.suggest import did_you_mean

    if name is None:
        return None
    known = sweep_names(store)
    if name in known:
        return name
    folded = name.lower()
    matches = [n for n in known if n.lower() == folded] or [n for n in known if n.lower().startswith(folded)]
    if len(matches) == 1:
        return matches[0]
    close = matches or did_you_mean(name, known)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    if not known:
        listing = "it holds no sweep"
    elif close or len(known) > 5:
        listing = f"orch sweeps --store {scrub(store.uri)} lists them"
    else:
        listing = f"its sweeps: {', '.join(known)} (orch sweeps --store {scrub(store.uri)})"
    raise OrchError(f"no sweep {name!r} in the store {scrub(store.uri)}; {hint}{listing}", EXIT_INPUT)


def dataset_changes(store: ResultStore, jobs: Sequence[Job], name: str) -> list[str]:
    """Lines saying which games' data changed since an earlier sweep of the same learners, and that
    ``name`` is now current for them (empty when nothing changed or the store is new)."""
    import pyarrow.compute as pc

    games = {j.game for j in jobs}
    learners = {j.learner for j in jobs}
    new = {j.game: j.dataset_fingerprint for j in jobs}
    rows = store.latest(
        ["game", "learner", "dataset_fingerprint", "sweep"], filter=pc.field("game").isin(sorted(games))
    )
    old: dict[str, set[str]] = defaultdict(set)
    for r in rows.to_pylist():
        if r["learner"] in learners and r["dataset_fingerprint"] not in (None, new[r["game"]]):
            old[r["game"]].add(r["sweep"] or "(no sweep)")
    if not old:
        return []
    changed = ", ".join(sorted(old))
    before = ", ".join(sorted({s for ss in old.values() for s in ss}))
    return [
        f"the data of {changed} changed since sweep {before}: this sweep ({name}) runs its jobs again "
        f"and is now current for {'it' if len(old) == 1 else 'them'}",
        "orch report reads the newest result per task (the older ones are superseded; `orch gc` deletes them)",
    ]


def stored_before(store: ResultStore, jobs: Sequence[Job]) -> int:
    """How many of the sweep's jobs already had a row in the store (run again or not)."""
    ids = {j.job_id for j in jobs}
    return sum(1 for j in store.latest(["job_id"])["job_id"].to_pylist() if j in ids)


def stored_by_others(store: ResultStore, jobs: Sequence[Job], since: Any, ours: int) -> int:
    """Rows of the sweep's jobs stored since ``since`` (UTC) beyond the ``ours`` this driver wrote:
    what other drivers on the same store ran meanwhile (never negative)."""
    import pyarrow.compute as pc

    ids = sorted({j.job_id for j in jobs})
    rows = store.read(["job_id", "finished"], filter=pc.field("job_id").isin(ids)).to_pylist()
    recent = sum(1 for r in rows if r["finished"] is not None and r["finished"] >= since)
    return max(0, recent - ours)


def failed_line(store: ResultStore, jobs: Sequence[Job], result: SweepResult) -> str | None:
    """``failed: ...`` naming the statuses and learners of the sweep's jobs that ended error, oom or
    lost (this run's and stored ones), with what to do; None when there are none (exit 0)."""
    import pyarrow.compute as pc

    from orchestrator.storage.schema import INFRA_STATUSES

    bad = INFRA_STATUSES | {"error"}
    ids = sorted({j.job_id for j in jobs})
    rows = store.latest(["job_id", "learner", "status"], filter=pc.field("job_id").isin(ids)).to_pylist()
    counts: Counter[tuple[str, str]] = Counter(
        (r["status"], r["learner"]) for r in rows if r["status"] in bad
    )
    if not counts:
        return None
    per_status: dict[str, list[str]] = defaultdict(list)
    totals: Counter[str] = Counter()
    for (status, learner), n in sorted(counts.items()):
        per_status[status].append(f"{learner} {n}")
        totals[status] += n
    parts = [f"{totals[s]} {s} ({', '.join(v)})" for s, v in per_status.items()]
    hints = []
    if result.input_failures:
        hints.append("fix the data, then rerun")
    if any(s in INFRA_STATUSES for s in per_status):
        hints.append("the same command re-runs oom/lost jobs")
    if "error" in per_status:
        hints.append("--retry-failed re-runs errors")
    return f"failed: {sum(counts.values())} job(s) of the sweep ended {', '.join(parts)}: {'; '.join(hints)}"


def sweeps_command(
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Store directory or URI."),
    fmt: str = typer.Option("table", "--format", "-f", help="table, tsv, md, csv or json."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON (same as --format json)."),
) -> None:
    """List the sweeps in a store: name, created, dataset, learners, jobs done/failed, last activity."""
    from orchestrator.cli.output import print_rows
    from orchestrator.storage.store import ResultStore, StoreError, scrub

    try:
        rows = sweep_summaries(ResultStore(store, must_exist=True))
    except StoreError as e:
        raise OrchError(str(e)) from e
    if as_json or fmt == "json":
        typer.echo(json.dumps({"store": scrub(store), "sweeps": rows}, indent=2))
        return
    if not rows:
        typer.echo(f"{scrub(store)}: no sweeps recorded")
        return
    print_rows(rows, fmt, title=f"sweeps in {scrub(store)}")


def gc_command(
    store: str = typer.Option(DEFAULT_STORE, "--store", help="Store directory or URI."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only count what would be deleted."),
) -> None:
    """Delete superseded rows: older attempts of a job, and results of a task on older data.

    Readers already ignore them (the latest attempt, the newest data per task); this only makes the
    store smaller and the Parquet simpler to read by hand. Nothing is deleted without this command.
    """
    from orchestrator.storage.store import ResultStore, StoreError, scrub

    try:
        target = ResultStore(store, must_exist=True)
        files, rows, dropped = drop_superseded(target, dry_run=dry_run)
    except StoreError as e:
        raise OrchError(str(e)) from e
    verb = "would delete" if dry_run else "deleted"
    typer.echo(f"{scrub(store)}: {verb} {dropped} superseded row(s) of {rows}, in {files} result file(s)")


def drop_superseded(store: ResultStore, dry_run: bool = False) -> tuple[int, int, int]:
    """Rewrite the store's results without superseded rows; returns (files, rows, rows dropped).

    As :meth:`ResultStore.compact`: the kept rows are committed as one new file before the files
    read are deleted, and files written meanwhile are left alone.
    """
    import pyarrow.compute as pc

    from orchestrator.analysis.current import superseded_rows
    from orchestrator.storage.schema import SCHEMA
    from orchestrator.storage.store import RESULTS

    paths = store.files(RESULTS)  # only these are deleted: a file written meanwhile stays
    table = store.read()  # each (job_id, attempt) once
    drop = superseded_rows(table)
    dropped = int(pc.sum(drop).as_py() or 0)
    if dry_run or not dropped:
        return len(paths), table.num_rows, dropped
    kept = table.filter(pc.invert(drop))
    store._put(kept.replace_schema_metadata(SCHEMA.metadata), RESULTS, "part")
    for path in paths:
        store._discard(path)
    return len(paths), table.num_rows, dropped
