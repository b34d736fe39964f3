"""Reader for the released GraphLog data (jsonl), so users who have it can run every learner on it.

We have no copy of the release, so this is the layout we assume (documented in docs/graphlog.md):

    DIR/WORLD/config.json        {"rules": [["r_1", "r_2", "r_5"], ...], ...}   body1, body2, head
    DIR/WORLD/train.jsonl        one query graph per line
    DIR/WORLD/valid.jsonl        (optional; "val.jsonl" and "validation.jsonl" are accepted too)
    DIR/WORLD/test.jsonl

A line is ``{"edges": [[src, dst, rel], ...], "query": [u, v], "target": rel,
"resolution_path": [...]}``. Accepted variants: edges as ``[src, dst]`` pairs with a parallel
``"edge_attr"`` list of relations; the target as the third element of ``query``; the resolution path
as a node list or as ``[src, dst, rel]`` edges. Relations are names like ``r_5``/``r5``/``5`` (the
trailing number is the relation id); node ids are any JSON scalars, renumbered per graph. Bad
input raises a ValueError naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np

from tasks.graphlog.generator import World
from tasks.graphlog.graphs import GraphSet, QueryGraph
from tasks.graphlog.rules import Rule

SPLIT_FILES = {"train": ("train",), "valid": ("valid", "val", "validation"), "test": ("test",)}
_NUM = re.compile(r"(\d+)$")


def relation_id(name: object, where: str) -> int:
    if isinstance(name, int):
        return name
    m = _NUM.search(str(name))
    if not m:
        raise ValueError(f"{where}: relation {name!r} has no numeric id (expected e.g. 'r_5')")
    return int(m.group(1))


def parse_line(obj: dict, where: str) -> QueryGraph:
    """One jsonl record -> a QueryGraph with nodes renumbered 0..n-1 in order of appearance."""
    try:
        raw_edges = obj["edges"]
        query = obj["query"]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{where}: a GraphLog record needs 'edges' and 'query' ({e})") from None
    attrs = obj.get("edge_attr")
    local: dict[object, int] = {}

    def node(x: object) -> int:
        return local.setdefault(json.dumps(x), len(local))

    edges = []
    for k, edge in enumerate(raw_edges):
        if len(edge) == 3:
            s, d, r = edge
        elif len(edge) == 2 and attrs is not None:
            (s, d), r = edge, attrs[k]
        else:
            raise ValueError(
                f"{where}: edge {edge!r} is neither [src, dst, rel] nor [src, dst] with edge_attr"
            )
        edges.append((node(s), relation_id(r, where), node(d)))
    if len(query) < 2:
        raise ValueError(f"{where}: query {query!r} needs two nodes")
    u, v = node(query[0]), node(query[1])
    target = obj.get("target", query[2] if len(query) > 2 else None)
    if target is None:
        raise ValueError(f"{where}: no target relation ('target' or query[2])")
    path = obj.get("resolution_path") or []
    if path and isinstance(path[0], list):
        nodes = [node(path[0][0])] + [node(p[1]) for p in path]
        desc = tuple(relation_id(p[2], where) for p in path if len(p) > 2)
    else:
        nodes = [node(x) for x in path]
        rel_of = {(s, d): r for s, r, d in edges}
        desc = tuple(rel_of[(a, b)] for a, b in zip(nodes, nodes[1:], strict=False) if (a, b) in rel_of)
    return QueryGraph(len(local), edges, (u, v), relation_id(target, where), desc, tuple(nodes))


def read_jsonl(path: str | Path) -> GraphSet:
    path = Path(path)
    graphs = []
    with path.open() as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: not JSON ({e.msg})") from None
            graphs.append(parse_line(obj, where))
    return GraphSet.from_graphs(graphs)


def read_rules(path: Path) -> list[Rule]:
    if not path.is_file():
        return []
    cfg = json.loads(path.read_text())
    rules = []
    for k, r in enumerate(cfg.get("rules", [])):
        where = f"{path}: rules[{k}]"
        if isinstance(r, dict):
            body, head = r.get("body", []), r.get("head")
        else:
            body, head = r[:-1], r[-1]
        if len(body) != 2 or head is None:
            raise ValueError(
                f"{where}: expected [body1, body2, head] or {{'body': [..], 'head': ..}}, got {r!r}"
            )
        rules.append(Rule(relation_id(body[0], where), relation_id(body[1], where), relation_id(head, where)))
    return rules


class ReleasedSuite:
    """The released layout read lazily, with the same face as :class:`tasks.graphlog.suite_files.Suite`."""

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._worlds = sorted(
            (d.name for d in self.root.iterdir() if d.is_dir() and (d / "train.jsonl").is_file()),
            key=_natural,
        )
        if not self._worlds:
            raise FileNotFoundError(f"{self.root}: no WORLD/train.jsonl found (released GraphLog layout)")

    def worlds(self) -> list[str]:
        return list(self._worlds)

    def with_role(self, role: str) -> list[str]:
        """None: the released layout marks no world roles."""
        return []

    def split_files(self, world: str) -> dict[str, Path]:
        if world not in self._worlds:
            raise KeyError(f"{self.root}: no world {world!r}")
        out = {}
        for split, names in SPLIT_FILES.items():
            for n in names:
                p = self.root / world / f"{n}.jsonl"
                if p.is_file():
                    out[split] = p
                    break
        return out

    def meta(self, world: str) -> dict:
        rules = read_rules(self.root / world / "config.json")
        return {"world": world, "rule_heads": sorted({r.head for r in rules})}

    def load(self, world: str) -> World:
        splits = {s: read_jsonl(p) for s, p in self.split_files(world).items()}
        rules = read_rules(self.root / world / "config.json")
        train = splits["train"]
        n_rel = 1 + max([int(train.rel.max(initial=0))] + [max(r.body1, r.body2, r.head) for r in rules])
        # The release has no world graph here: the representation module sees the training graphs'
        # disjoint union instead (node ids offset per graph).
        offsets = np.repeat(np.cumsum(np.r_[0, train.n_nodes[:-1]]), np.diff(train.edge_ptr)).astype(np.int32)
        return World(
            world, self._worlds.index(world), n_rel, rules, train.src + offsets, train.rel, train.dst + offsets,
            int(train.n_nodes.sum()), splits,
        )  # fmt: skip

    def fingerprint(self, world: str) -> str:
        h = hashlib.sha256()
        for _, p in sorted(self.split_files(world).items()):
            h.update(p.read_bytes())
        cfg = self.root / world / "config.json"
        if cfg.is_file():
            h.update(cfg.read_bytes())
        return h.hexdigest()[:16]


def _natural(name: str) -> tuple:
    m = _NUM.search(name)
    return (name[: m.start()] if m else name, int(m.group(1)) if m else -1)
