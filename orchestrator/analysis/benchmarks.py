"""Which benchmark a stored result belongs to (IGGP, the generated GGP corpus, GraphLog), derived once.

Why: the IGGP dataset and a GGP corpus (``orch games generate ... --all --out OUT``) share the IGGP
layout and can share game names (both have a ``tictactoe``), yet their figures mean different
things, so a report shows one group per benchmark with its own means and a result of one never
supersedes a result of the other. The benchmark is read from the ``dataset`` column every row
already stores (the ``--dataset`` value of its sweep), so stores written before this existed need
no new column:

* ``graphlog:DIR`` is GraphLog;
* a folder holding a corpus manifest (:data:`tasks.corpus.MANIFEST`) is the GGP benchmark;
* anything else (an IGGP dataset folder, ``bundled``, a row without a dataset) is IGGP.

The manifest is looked up where the stored path points, from the current directory for a relative
path: a corpus moved or deleted since its sweep reads as IGGP (rerun from where it was run, or keep
the corpus where it was generated).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from orchestrator.storage.schema import SCHEMA
from orchestrator.storage.store import ResultStore
from tasks.corpus import MANIFEST

IGGP = "iggp"
GGP = "ggp"
GRAPHLOG = "graphlog"
ORDER = (IGGP, GGP, GRAPHLOG)
"""The order in which reports show the benchmarks."""

TITLES = {IGGP: "IGGP", GGP: "GGP benchmark (generated corpus)", GRAPHLOG: "GraphLog"}
"""Each benchmark's heading in reports."""

_GRAPHLOG_PREFIX = "graphlog:"


def benchmark_of(dataset: str | None) -> str:
    """The benchmark of a row whose ``dataset`` column holds ``dataset`` (see the module docstring)."""
    if not dataset or dataset == "bundled":
        return IGGP
    if dataset.startswith(_GRAPHLOG_PREFIX):
        return GRAPHLOG
    try:
        return GGP if (Path(dataset).expanduser() / MANIFEST).is_file() else IGGP
    except OSError:  # a path the filesystem refuses (too long, unreadable): not a corpus we can see
        return IGGP


def benchmarks_of(datasets: Iterable[str | None]) -> list[str]:
    """:func:`benchmark_of` for each value of a column (each distinct path is looked up once)."""
    seen: dict[str | None, str] = {}
    return [seen.get(d) or seen.setdefault(d, benchmark_of(d)) for d in datasets]


def ordered(benchmarks: Iterable[str]) -> list[str]:
    """``benchmarks`` once each, in :data:`ORDER` (an unknown name last, alphabetically)."""
    return sorted(set(benchmarks), key=lambda b: (ORDER.index(b) if b in ORDER else len(ORDER), b))


def title(benchmark: str) -> str:
    return TITLES.get(benchmark, benchmark)


def of_benchmark(table: pa.Table, benchmark: str) -> pa.Table:
    """The rows of ``table`` (with a ``dataset`` column) that belong to ``benchmark``."""
    if table.num_rows == 0:
        return table
    mask = [b == benchmark for b in benchmarks_of(table["dataset"].to_pylist())]
    return table.filter(pa.array(mask, pa.bool_()))


class BenchmarkView(ResultStore):
    """A store seen through one benchmark: its results, sweep manifests and analyses hold only the
    rows of that benchmark, so every section of a report computed on the view (tables, like for
    like, figures, task selection) is computed on that benchmark alone, with its own means.

    Read-only in intent: it shares ``store``'s location, reader and writer (nothing is reopened).
    """

    def __init__(self, store: ResultStore, benchmark: str) -> None:
        self.__dict__.update(store.__dict__)
        self.benchmark = benchmark

    def __repr__(self) -> str:
        return f"BenchmarkView({self.uri!r}, {self.benchmark!r})"

    def read(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None) -> pa.Table:
        wanted = list(columns) if columns is not None else SCHEMA.names
        table = super().read([*wanted, *(["dataset"] if "dataset" not in wanted else [])], filter)
        return of_benchmark(table, self.benchmark).select(wanted)

    def manifests(self) -> pa.Table:
        return of_benchmark(super().manifests(), self.benchmark)

    def read_analysis(self, name: str) -> pa.Table:
        table = super().read_analysis(name)
        return of_benchmark(table, self.benchmark) if "dataset" in table.column_names else table
