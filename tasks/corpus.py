"""A generated corpus's manifest: one row per game, what was generated from what, and its verdicts.

``orch games generate DIR... --out OUT --all`` writes, beside ``data/``, ``types/`` and ``games/``:

* ``manifest.json``: one row per game (sorted by game), only fields that the inputs determine
  (provenance of the rulesheet, settings, engine, sizes, counts, quality verdicts), so that the
  same rulesheets, settings and orch version give it byte for byte (docs/ggp-benchmark.md);
* ``manifest.parquet``: the same rows flattened to one column per (target, split) figure, plus
  the generation time and the git commit;
* ``run.json``: what differs from run to run: the git commit, and seconds per game;
* ``.generated/GAME.json``: one record per game as it ends (its result and what it was made from),
  so that a rerun of the same command after a crash regenerates only the games left unfinished.

Why the split: "same seed, same bytes" is the reproducibility claim a benchmark makes, and it can
only be checked on files that hold nothing a clock or a checkout decides.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from tasks.task import SPLITS, TARGETS

MANIFEST = "manifest.json"
MANIFEST_PARQUET = "manifest.parquet"
RUN = "run.json"
RECORDS = ".generated"


def sha256_of(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@functools.cache
def generator_fingerprint() -> str:
    """sha256 over the source of the ``tasks`` package (paths and bytes): what decides the bytes a
    game generates besides its rulesheet and the settings. A record made by other generator code is
    never reused, whatever the version string says."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def record_key(
    rulesheet: str | Path, types: str | Path | None, *, seed: int, episodes: int, steps: int
) -> dict:
    """What a game's output is made from: its inputs' bytes, the settings and the generator code."""
    return {
        "rulesheet_sha256": sha256_of(rulesheet),
        "types_sha256": None if types is None else sha256_of(types),
        "seed": seed,
        "episodes": episodes,
        "steps": steps,
        "generator": generator_fingerprint(),
    }


def write_record(
    out: str | Path, key: dict, result: dict, *, time_limit: float | None, memory_cap: int | None
) -> None:
    """Record one game's result as it ends (written whole, then renamed: never half a record)."""
    folder = Path(out) / RECORDS
    folder.mkdir(parents=True, exist_ok=True)
    record = {"key": key, "time_limit": time_limit, "memory_cap": memory_cap, "result": result}
    tmp = folder / f".{result['game']}.json.tmp"
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    tmp.replace(folder / f"{result['game']}.json")


def _at_least(recorded: float | None, wanted: float | None) -> bool:
    """A recorded limit covers the wanted one (None: no limit)."""
    return recorded is None or (wanted is not None and recorded >= wanted)


def _files_present(out: Path, game: str, result: dict) -> bool:
    """Every ``.dat`` a generated game's record counts is still on disk (nobody deleted them)."""
    counts = result.get("counts") or {}
    return all(
        (out / "data" / split / f"{game}_{target}_{split}.dat").is_file()
        for target, splits in counts.items()
        for split in splits
    )


def reusable_record(
    out: str | Path, game: str, key: dict, *, time_limit: float | None, memory_cap: int | None
) -> dict | None:
    """The recorded result of ``game`` if this run would give the same one, else None.

    Reused: a game generated (its files are then those this run would write) or rejected as bad
    input from the same inputs, settings and generator; a timeout or oom only if it had at least
    this run's time or memory. A game whose worker was lost is always run again."""
    path = Path(out) / RECORDS / f"{game}.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("key") != key:
        return None
    result = record.get("result") or {}
    status = result.get("status")
    if status == "ok":
        return result if _files_present(Path(out), game, result) else None
    if status == "error":
        return result
    if status == "timeout" and _at_least(record.get("time_limit"), time_limit):
        return result
    if status == "oom" and _at_least(record.get("memory_cap"), memory_cap):
        return result
    return None


def manifest_row(
    result: dict, rulesheet: str | Path, *, seed: int, episodes: int, steps: int, orch_version: str
) -> dict:
    """The deterministic row of one game from its generation result (`GeneratedGame.as_dict`,
    or a failure ``{"game", "status", "error"}`` from the supervised worker)."""
    path = Path(rulesheet)
    targets = result.get("targets") or {}
    return {
        "game": result["game"],
        "status": result.get("status", "ok"),
        "error": result.get("error"),
        "rulesheet": path.name,
        "sha256": sha256_of(path) if path.is_file() else None,
        "orch_version": orch_version,
        "seed": seed,
        "episodes": episodes,
        "steps": steps,
        "engine": result.get("engine"),
        "roles": result.get("roles"),
        "fluents": result.get("fluents"),
        "distinct_states": result.get("distinct_states"),
        "distinct_transitions": result.get("distinct_transitions"),
        "terminal_episodes": result.get("terminal_episodes"),
        "played_anyway": result.get("leniencies") or [],
        "targets": {
            t: {"kept": not v["excluded"], "excluded": v["excluded"], "splits": v["splits"]}
            for t, v in targets.items()
        },
    }


def _flat(row: dict, seconds: float | None) -> dict:
    """One Parquet row: scalars only (one column per target/split figure)."""
    out = {k: v for k, v in row.items() if k not in ("targets", "roles", "played_anyway")}
    out["played_anyway"] = "; ".join(row["played_anyway"])
    out["roles"] = None if row["roles"] is None else ",".join(row["roles"])
    out["seconds"] = seconds
    for t in TARGETS:
        info = row["targets"].get(t)
        out[f"{t}_kept"] = None if info is None else info["kept"]
        out[f"{t}_excluded"] = None if info is None else "; ".join(info["excluded"])
        for s in SPLITS:
            split = (info or {}).get("splits", {}).get(s, {})
            out[f"{t}_{s}_examples"] = split.get("examples")
            out[f"{t}_{s}_positive_share"] = split.get("positive_share")
    return out


def write_manifest(
    out: str | Path, rows: Sequence[dict], seconds: dict[str, float | None], commit: str
) -> None:
    """Write ``manifest.json`` (deterministic), ``manifest.parquet`` and ``run.json`` into ``out``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = sorted(rows, key=lambda r: r["game"])
    (out / MANIFEST).write_text(json.dumps({"games": rows}, indent=1, sort_keys=True) + "\n")
    flat = [{**_flat(r, seconds.get(r["game"])), "commit": commit} for r in rows]
    pq.write_table(pa.Table.from_pylist(flat), out / MANIFEST_PARQUET)
    run = {"commit": commit, "seconds": {r["game"]: seconds.get(r["game"]) for r in rows}}
    (out / RUN).write_text(json.dumps(run, indent=1, sort_keys=True) + "\n")


def summary(rows: Iterable[dict]) -> dict:
    """Counts for a report: games generated/failed, targets kept/excluded, exclusions by rule."""
    rows = list(rows)
    by_rule: dict[str, int] = {}
    kept = excluded = 0
    for r in rows:
        for info in r["targets"].values():
            if info["kept"]:
                kept += 1
                continue
            excluded += 1
            for reason in info["excluded"]:
                rule = reason.partition(":")[0]
                by_rule[rule] = by_rule.get(rule, 0) + 1
    failed = {r["game"]: f"{r['status']}: {r['error']}" for r in rows if r["status"] != "ok"}
    return {
        "games": len(rows),
        "generated": len(rows) - len(failed),
        "failed": failed,
        "targets_kept": kept,
        "targets_excluded": excluded,
        "excluded_by_rule": dict(sorted(by_rule.items())),
    }


def read_manifest(corpus: str | Path) -> list[dict]:
    """The game rows of ``corpus``'s ``manifest.json`` (a clear error naming the file if absent)."""
    path = Path(corpus) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no manifest; generate the corpus with `orch games generate ... --all`"
        )
    try:
        return list(json.loads(path.read_text())["games"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a corpus manifest ({type(e).__name__}: {e})") from e


def kept_targets(rows: Iterable[dict]) -> tuple[set[tuple[str, str]], list[str]]:
    """(game, target) pairs that pass the quality rules, and one line per target or game left out
    with its reason: what the headline figures of the benchmark are computed on."""
    kept: set[tuple[str, str]] = set()
    left_out: list[str] = []
    for r in rows:
        if r["status"] != "ok":
            left_out.append(f"{r['game']}: not generated ({r['status']}: {r['error']})")
            continue
        for target, info in sorted(r["targets"].items()):
            if info["kept"]:
                kept.add((r["game"], target))
            else:
                left_out.append(f"{r['game']}/{target}: excluded ({'; '.join(info['excluded'])})")
    return kept, left_out
