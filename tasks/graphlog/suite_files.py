"""GraphLog suites on disk as Parquet: one directory per suite, one file per world's graphs.

Layout of a suite directory (what ``graphlog:DIR`` opens)::

    DIR/rules.parquet         rule_id, body1, body2, head, text        (the ordered rule set R_S)
    DIR/worlds.parquet        world, index, role, n_relations, rule_ids, world-graph edges, and
                              Table 6's statistics (classes, descriptors, ARL, nodes, edges)
    DIR/graphs/WORLD.parquet  split, n_nodes, src, rel, dst, query_u, query_v, target,
                              descriptor, path_nodes                   (one row per query graph)
    DIR/config.json           the generator configuration (for humans and for reproduction)

Worlds are read lazily: listing worlds reads only ``worlds.parquet``. Files are written to a
temporary name and renamed, so a crashed writer never leaves a half file under the real name.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.graphlog.generator import GeneratorConfig, World
from tasks.graphlog.graphs import GraphSet
from tasks.graphlog.rules import Rule


def _list(offsets: np.ndarray, values: np.ndarray) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values.astype(np.int32)))


def _unlist(col: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray]:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    offsets = arr.offsets.to_numpy().astype(np.int64)
    values = arr.values.to_numpy(zero_copy_only=False).astype(np.int32)
    return offsets - offsets[0], values[offsets[0] : offsets[-1]]


def _write(table: pa.Table, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def graphs_table(splits: dict[str, GraphSet]) -> pa.Table:
    parts = []
    for name, g in splits.items():
        parts.append(
            pa.table(
                {
                    "split": pa.array([name] * len(g), pa.string()),
                    "n_nodes": pa.array(g.n_nodes, pa.int32()),
                    "src": _list(g.edge_ptr, g.src),
                    "rel": _list(g.edge_ptr, g.rel),
                    "dst": _list(g.edge_ptr, g.dst),
                    "query_u": pa.array(g.query_u, pa.int32()),
                    "query_v": pa.array(g.query_v, pa.int32()),
                    "target": pa.array(g.target, pa.int32()),
                    "descriptor": _list(g.desc_ptr, g.descriptor),
                    "path_nodes": _list(g.path_ptr, g.path_nodes),
                }
            )
        )
    return pa.concat_tables(parts)


def graphs_from_table(table: pa.Table) -> dict[str, GraphSet]:
    out = {}
    names = table.column("split").to_pylist()
    for name in dict.fromkeys(names):
        t = table.filter(pa.compute.equal(table.column("split"), name))
        edge_ptr, src = _unlist(t.column("src"))
        _, rel = _unlist(t.column("rel"))
        _, dst = _unlist(t.column("dst"))
        desc_ptr, desc = _unlist(t.column("descriptor"))
        path_ptr, path = _unlist(t.column("path_nodes"))
        out[name] = GraphSet(
            n_nodes=t.column("n_nodes").to_numpy().astype(np.int32),
            edge_ptr=edge_ptr, src=src, rel=rel, dst=dst,
            query_u=t.column("query_u").to_numpy().astype(np.int32),
            query_v=t.column("query_v").to_numpy().astype(np.int32),
            target=t.column("target").to_numpy().astype(np.int32),
            desc_ptr=desc_ptr, descriptor=desc, path_ptr=path_ptr, path_nodes=path,
        )  # fmt: skip
    return out


def write_suite(root: str | Path, worlds: list[World], rules: list[Rule], cfg: GeneratorConfig) -> Path:
    """Write a generated suite (rules, world index with statistics, one graph file per world)."""
    root = Path(root)
    (root / "graphs").mkdir(parents=True, exist_ok=True)
    rule_id = {r: i for i, r in enumerate(rules)}
    _write(
        pa.table(
            {
                "rule_id": pa.array(range(len(rules)), pa.int32()),
                "body1": pa.array([r.body1 for r in rules], pa.int32()),
                "body2": pa.array([r.body2 for r in rules], pa.int32()),
                "head": pa.array([r.head for r in rules], pa.int32()),
                "text": pa.array([r.text() for r in rules], pa.string()),
            }
        ),
        root / "rules.parquet",
    )
    rows = []
    for w in worlds:
        _write(graphs_table(w.splits), root / "graphs" / f"{w.name}.parquet")
        rows.append(
            {
                **w.stats(),
                "index": w.index,
                "n_relations": w.n_relations,
                "rule_ids": [rule_id[r] for r in w.rules],
                "graph_nodes": w.graph_nodes,
                "graph_src": w.graph_src.tolist(),
                "graph_rel": w.graph_rel.tolist(),
                "graph_dst": w.graph_dst.tolist(),
            }
        )
    _write(pa.Table.from_pylist(rows), root / "worlds.parquet")
    (root / "config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")
    return root


class Suite:
    """A stored suite, read lazily: world metadata at once, each world's graphs on demand."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        for name in ("rules.parquet", "worlds.parquet"):
            if not (self.root / name).is_file():
                raise FileNotFoundError(
                    f"{self.root / name}: not a GraphLog suite (run `orch graphlog generate`)"
                )
        rt = pq.read_table(self.root / "rules.parquet").to_pydict()
        self.rules = [Rule(a, b, h) for a, b, h in zip(rt["body1"], rt["body2"], rt["head"], strict=True)]
        self.index = {row["world"]: row for row in pq.read_table(self.root / "worlds.parquet").to_pylist()}

    def worlds(self) -> list[str]:
        return sorted(self.index, key=lambda w: self.index[w]["index"])

    def with_role(self, role: str) -> list[str]:
        """The worlds marked ``role`` (train, valid or test, as in Table 6), in index order."""
        return [w for w in self.worlds() if self.index[w].get("role") == role]

    def meta(self, world: str) -> dict:
        if world not in self.index:
            raise KeyError(f"{self.root}: no world {world!r}; worlds are {', '.join(self.worlds()[:5])}, ...")
        return self.index[world]

    def stats(self) -> list[dict]:
        keep = ("graph_src", "graph_rel", "graph_dst", "rule_ids")
        return [{k: v for k, v in self.index[w].items() if k not in keep} for w in self.worlds()]

    def graph_file(self, world: str) -> Path:
        self.meta(world)
        return self.root / "graphs" / f"{world}.parquet"

    def load(self, world: str) -> World:
        m = self.meta(world)
        splits = graphs_from_table(pq.read_table(self.graph_file(world)))
        return World(
            name=world, index=m["index"], n_relations=m["n_relations"],
            rules=[self.rules[i] for i in m["rule_ids"]],
            graph_src=np.array(m["graph_src"], dtype=np.int32),
            graph_rel=np.array(m["graph_rel"], dtype=np.int32),
            graph_dst=np.array(m["graph_dst"], dtype=np.int32),
            graph_nodes=m["graph_nodes"], splits=splits, role=m["role"],
        )  # fmt: skip

    def fingerprint(self, world: str) -> str:
        h = hashlib.sha256()
        h.update(json.dumps(self.meta(world)["rule_ids"]).encode())
        h.update(self.graph_file(world).read_bytes())
        return h.hexdigest()[:16]
