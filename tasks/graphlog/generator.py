"""GraphLog worlds: the world graph (Algorithm 3) and the query-graph sampler (Algorithm 4).

The world graph grows by *expanding* edges: an edge (u, rt, v) is replaced, in meaning, by a path
(u, ri, y), (y, rj, v) for a rule [ri, rj] => rt and a fresh node y (the edge itself stays). We
record every expansion, so the resolution paths of an edge are exactly the ways of unfolding its
expansions recursively, and each one resolves to the edge's relation by the rules (sound by
construction; Algorithm 4's "all walks between the ends of an edge" would also admit walks that
no rule resolves). A descriptor is the relation sequence of a resolution path of length >= 2.

Descriptors are split train/valid/test *before* graphs are built, so a test graph's resolution
path is a relation combination never seen in training. A query graph is the path plus BFS
neighbourhoods of its nodes taken with decaying probability, minus any edge that would give u and
v another path of the same or shorter length (so the resolution path is the unique shortest one).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from tasks.graphlog.graphs import GraphSet, QueryGraph
from tasks.graphlog.rules import Rule, generate_rules, partition_worlds

SPLIT_NAMES = ("train", "valid", "test")


@dataclass(frozen=True)
class GeneratorConfig:
    """Every knob with the paper's default where it gives one (appendix E.1)."""

    n_relations: int = 20
    n_rules: int | None = 76
    world_width: int = 20
    world_stride: int = 1
    n_train: int = 5000
    n_valid: int = 1000
    n_test: int = 1000
    world_nodes: int = 300  # the node pool N of Algorithm 3 (tuned: ND, ARL, AN near Table 6)
    max_expansions: int = 10  # s: steps per generation cycle are rand(2, s)
    rule_decay: float = 0.8  # gamma of Algorithm 3
    max_path_length: int = 10  # e of Algorithm 4; Table 2: resolution paths have length 2..10
    neighbour_decay: float = 0.5  # BFS selection probability decay in Algorithm 4
    neighbour_depth: int = 2
    seed: int = 0

    def split_sizes(self) -> dict[str, int]:
        return {"train": self.n_train, "valid": self.n_valid, "test": self.n_test}


@dataclass
class WorldGraph:
    """Edges by (u, v) with their relation, and the recorded expansions (u, v) -> [y, ...]."""

    n_nodes: int = 0
    edges: dict[tuple[int, int], int] = field(default_factory=dict)
    expansions: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        keys = list(self.edges)
        src = np.array([k[0] for k in keys], dtype=np.int32)
        dst = np.array([k[1] for k in keys], dtype=np.int32)
        rel = np.array([self.edges[k] for k in keys], dtype=np.int32)
        return src, rel, dst


@dataclass
class World:
    """One logical world: its rules, its world graph and its train/valid/test query graphs."""

    name: str
    index: int
    n_relations: int
    rules: list[Rule]
    graph_src: np.ndarray
    graph_rel: np.ndarray
    graph_dst: np.ndarray
    graph_nodes: int
    splits: dict[str, GraphSet]
    role: str = "train"  # the world's own split in the suite (Table 6: train / valid / test worlds)

    def stats(self) -> dict[str, float | int | str]:
        """Table 6 row: classes (NC), descriptors (ND), ARL, AN, AE over all the world's graphs."""
        per = {s: g.stats() for s, g in self.splits.items()}
        total = sum(p["graphs"] for p in per.values()) or 1
        classes = set()
        descriptors = set()
        for g in self.splits.values():
            classes.update(g.classes().tolist())
            descriptors |= g.descriptors()

        def avg(key: str) -> float:
            return sum(p[key] * p["graphs"] for p in per.values()) / total

        return {
            "world": self.name,
            "role": self.role,
            "rules": len(self.rules),
            "classes": len(classes),
            "descriptors": len(descriptors),
            "avg_resolution_length": avg("avg_resolution_length"),
            "avg_nodes": avg("avg_nodes"),
            "avg_edges": avg("avg_edges"),
            "world_nodes": self.graph_nodes,
            "world_edges": len(self.graph_src),
            **{f"{s}_graphs": int(p["graphs"]) for s, p in per.items()},
            **{f"{s}_descriptors": int(p["descriptors"]) for s, p in per.items()},
        }


def world_graph(rules: list[Rule], cfg: GeneratorConfig, rng: np.random.Generator) -> WorldGraph:
    """Algorithm 3: grow the world graph by recursive rule expansions until the node pool is spent."""
    by_head: dict[int, list[int]] = {}
    for i, r in enumerate(rules):
        by_head.setdefault(r.head, []).append(i)
    heads = sorted(by_head)
    prob = np.ones(len(rules))
    used = np.zeros(len(rules), dtype=bool)
    pool = list(rng.permutation(cfg.world_nodes).tolist())
    g = WorldGraph(n_nodes=cfg.world_nodes)

    def expand(edge: tuple[int, int], added: list[tuple[int, int]]) -> None:
        choices = by_head.get(g.edges[edge])
        if not choices or not pool:
            return
        p = prob[choices] / prob[choices].sum()
        i = choices[int(rng.choice(len(choices), p=p))]
        prob[i] *= cfg.rule_decay
        used[i] = True
        y = pool.pop()
        u, v = edge
        g.edges[(u, y)] = rules[i].body1
        g.edges[(y, v)] = rules[i].body2
        g.expansions.setdefault(edge, []).append(y)
        added += [(u, y), (y, v)]

    while pool:
        steps = int(rng.integers(2, max(cfg.max_expansions, 2) + 1))
        added: list[tuple[int, int]] = []
        for step in range(steps):
            if step == 0:
                if not g.edges or (len(pool) >= 3 and rng.random() < 0.5):
                    if len(pool) < 3:
                        return g
                    u, v = pool.pop(), pool.pop()
                    g.edges[(u, v)] = heads[int(rng.integers(len(heads)))]
                    edge = (u, v)
                else:
                    keys = list(g.edges)
                    edge = keys[int(rng.integers(len(keys)))]
                added.append(edge)
            else:
                edge = added[int(rng.integers(len(added)))]
            expand(edge, added)
            if not pool:
                break
        if used.all():  # every rule used at least once: a new cycle with fresh probabilities
            prob[:] = 1.0
            used[:] = False
    return g


def resolution_paths(g: WorldGraph, max_length: int, cap: int = 4000) -> dict[tuple[int, int], list[tuple]]:
    """For every expanded edge, its resolution paths as node sequences (length 2..max_length)."""
    memo: dict[tuple[int, int], list[tuple]] = {}

    def paths(edge: tuple[int, int]) -> list[tuple]:
        if edge in memo:
            return memo[edge]
        memo[edge] = [edge]  # guards against re-entry; expansions form a tree, so this never binds
        out: list[tuple] = [edge]
        u, v = edge
        for y in g.expansions.get(edge, []):
            for left in paths((u, y)):
                for right in paths((y, v)):
                    if len(left) + len(right) - 2 <= max_length and len(out) < cap:
                        out.append(left + right[1:])
        memo[edge] = out
        return out

    return {e: [p for p in paths(e) if len(p) > 2] for e in g.expansions}


def _shortest(adj: dict[int, set[int]], s: int, t: int) -> tuple[int, int]:
    """Undirected shortest-path length from s to t and the number of shortest paths."""
    dist, count = {s: 0}, {s: 1}
    q = deque([s])
    while q:
        x = q.popleft()
        for y in adj.get(x, ()):
            if y not in dist:
                dist[y], count[y] = dist[x] + 1, count[x]
                q.append(y)
            elif dist[y] == dist[x] + 1:
                count[y] += count[x]
    return dist.get(t, -1), count.get(t, 0)


def query_graph(
    path: tuple,
    target: int,
    g: WorldGraph,
    adj: dict[int, list[tuple[tuple[int, int], int]]],
    cfg: GeneratorConfig,
    rng: np.random.Generator,
) -> QueryGraph:
    """Algorithm 4's inner loop: the path, BFS neighbours, no rival path; nodes relabelled at random."""
    u, v = path[0], path[-1]
    length = len(path) - 1
    chosen: dict[tuple[int, int], int] = {
        (a, b): g.edges[(a, b)] for a, b in zip(path, path[1:], strict=False)
    }
    und: dict[int, set[int]] = {}
    for a, b in chosen:
        und.setdefault(a, set()).add(b)
        und.setdefault(b, set()).add(a)
    for start in path:
        frontier, p = [start], cfg.neighbour_decay
        for _ in range(cfg.neighbour_depth):
            nxt = []
            for x in frontier:
                for key, y in adj.get(x, ()):
                    if key in chosen or {key[0], key[1]} == {u, v} or rng.random() >= p:
                        continue
                    if y in und.get(x, ()):
                        continue  # at most one edge between two nodes
                    und.setdefault(x, set()).add(y)
                    und.setdefault(y, set()).add(x)
                    if _shortest(und, u, v) != (length, 1):
                        und[x].discard(y)
                        und[y].discard(x)
                        continue
                    chosen[key] = g.edges[key]
                    nxt.append(y)
            frontier, p = nxt, p * cfg.neighbour_decay
    nodes = sorted({n for k in chosen for n in k})
    local = dict(zip(nodes, rng.permutation(len(nodes)).tolist(), strict=True))
    edges = [(local[a], r, local[b]) for (a, b), r in chosen.items()]
    order = rng.permutation(len(edges))
    return QueryGraph(
        n_nodes=len(nodes),
        edges=[edges[i] for i in order],
        query=(local[u], local[v]),
        target=target,
        descriptor=tuple(g.edges[(a, b)] for a, b in zip(path, path[1:], strict=False)),
        path_nodes=tuple(local[n] for n in path),
    )


def split_descriptors(
    descriptors: list[tuple[int, ...]], cfg: GeneratorConfig, rng: np.random.Generator
) -> dict[str, list[tuple[int, ...]]]:
    """Disjoint train/valid/test descriptor sets, in proportion to the requested graph counts."""
    if len(descriptors) < 3:
        raise ValueError(f"only {len(descriptors)} descriptors: too few to split train/valid/test")
    order = [descriptors[i] for i in rng.permutation(len(descriptors))]
    sizes = cfg.split_sizes()
    total = sum(sizes.values())
    n_valid = max(1, round(len(order) * sizes["valid"] / total))
    n_test = max(1, round(len(order) * sizes["test"] / total))
    n_train = len(order) - n_valid - n_test
    return {
        "train": order[:n_train],
        "valid": order[n_train : n_train + n_valid],
        "test": order[n_train + n_valid :],
    }


def generate_world(name: str, index: int, rules: list[Rule], cfg: GeneratorConfig, seed: int) -> World:
    """One world: its world graph, descriptor split and query graphs (seeded by ``seed``)."""
    rng = np.random.default_rng(seed)
    g = world_graph(rules, cfg, rng)
    paths = resolution_paths(g, cfg.max_path_length)
    instances: dict[tuple[int, ...], list[tuple[tuple, int]]] = {}
    for edge in sorted(paths):
        for p in paths[edge]:
            desc = tuple(g.edges[(a, b)] for a, b in zip(p, p[1:], strict=False))
            instances.setdefault(desc, []).append((p, g.edges[edge]))
    by_split = split_descriptors(sorted(instances), cfg, rng)
    adj: dict[int, list[tuple[tuple[int, int], int]]] = {}
    for a, b in g.edges:
        adj.setdefault(a, []).append(((a, b), b))
        adj.setdefault(b, []).append(((a, b), a))
    splits = {}
    for split, n in cfg.split_sizes().items():
        descs = by_split[split]
        graphs = []
        for _ in range(n):
            inst = instances[descs[int(rng.integers(len(descs)))]]
            path, target = inst[int(rng.integers(len(inst)))]
            graphs.append(query_graph(path, target, g, adj, cfg, rng))
        splits[split] = GraphSet.from_graphs(graphs)
    src, rel, dst = g.arrays()
    return World(name, index, cfg.n_relations, rules, src, rel, dst, g.n_nodes, splits)


def world_name(i: int) -> str:
    return f"rule_{i}"


def generate_suite(cfg: GeneratorConfig = GeneratorConfig(), worlds: list[int] | None = None) -> list[World]:
    """The whole suite (or the listed world indices): rules, worlds, their graphs. Seeded by cfg.seed.

    World roles follow Table 6: the last 6 worlds are 3 validation and 3 test worlds (for
    multi-task pre-training and adaptation); with fewer than 8 worlds all are training worlds.
    """
    rules = generate_rules(cfg.n_relations, cfg.n_rules, cfg.seed)
    windows = partition_worlds(rules, cfg.world_width, cfg.world_stride)
    chosen = range(len(windows)) if worlds is None else worlds
    out = []
    for i in chosen:
        if not 0 <= i < len(windows):
            raise ValueError(f"world index {i} out of range: this configuration has {len(windows)} worlds")
        w = generate_world(world_name(i), i, windows[i], cfg, seed=cfg.seed * 100_003 + i + 1)
        w.role = world_role(i, len(windows))
        out.append(w)
    return out


def world_role(i: int, n_worlds: int) -> str:
    if n_worlds < 8:
        return "train"
    return "train" if i < n_worlds - 6 else ("valid" if i < n_worlds - 3 else "test")
