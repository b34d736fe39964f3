"""GraphLog generator invariants, Parquet round trip, the released-jsonl reader and the Task encoding."""

from __future__ import annotations

import json
from dataclasses import replace

import clingo
import numpy as np
import pytest

from tasks.graphlog import GraphLogSource
from tasks.graphlog.as_task import decode_split, world_task
from tasks.graphlog.generator import GeneratorConfig, generate_suite
from tasks.graphlog.released import ReleasedSuite, read_jsonl
from tasks.graphlog.rules import (
    consistent_rules,
    generate_rules,
    inverse_map,
    inverse_rule,
    partition_worlds,
    similarity,
)
from tasks.graphlog.suite_files import Suite, write_suite
from tasks.sources import open_source

SMALL = GeneratorConfig(n_train=80, n_valid=20, n_test=20, world_nodes=120)


@pytest.fixture(scope="module")
def worlds():
    return generate_suite(SMALL, worlds=[0, 5])


def test_inverse_map_is_an_involution_half_symmetric():
    inv = inverse_map(20)
    assert (inv[inv] == np.arange(20)).all()
    assert (inv == np.arange(20)).sum() == 10


def test_rule_generation_constraints_and_counts():
    allrules = consistent_rules(20, np.random.default_rng(0))
    assert len(allrules) == 380  # every ordered body except the 20 self-inverse ones (see rules.py)
    rules = generate_rules(20, 76, seed=0)
    assert len(rules) == 76
    bodies = [r.body for r in rules]
    assert len(set(bodies)) == len(bodies), "two rules share a body"
    assert all(r.head not in r.body for r in rules), "a head occurs in its own body"
    inv = inverse_map(20)
    kept = set(rules)
    assert (
        sum(inverse_rule(r, inv) in kept for r in rules) >= 74
    )  # closed under inversion (pairs kept together)
    worlds = partition_worlds(rules, 20, 1)
    assert len(worlds) == 57
    assert similarity(worlds[0], worlds[1]) == 19 and similarity(worlds[0], worlds[40]) == 0


def test_rules_are_seeded():
    assert generate_rules(seed=3) == generate_rules(seed=3)
    assert generate_rules(seed=3) != generate_rules(seed=4)


def _entailed(graphs, rules) -> list[set[int]]:
    """Per graph ``(edges, (u, v))``: the relations between u and v in the least model of its edges
    under the rules (clingo, all graphs in one program, each its own namespace ``G``).

    The rule semantics from first principles: ``[a, b] => h`` is ``r(h, X, Y) :- r(a, X, Z), r(b, Z, Y)``
    over the graph's edges as facts; nothing of the generator's own code is used.
    """
    text = []
    for g, (edges, (u, v)) in enumerate(graphs):
        text += [f"r({g},{r},{s},{d})." for s, r, d in edges] + [f"query({g},{u},{v})."]
    text += [f"r(G,{x.head},X,Y) :- r(G,{x.body1},X,Z), r(G,{x.body2},Z,Y)." for x in rules]
    text.append("q(G,R) :- query(G,U,V), r(G,R,U,V).\n#show q/2.")
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], "\n".join(text))
    ctl.ground([("base", [])])
    found: list[set[int]] = [set() for _ in graphs]

    def collect(model: clingo.Model) -> None:
        for atom in model.symbols(shown=True):
            found[atom.arguments[0].number].add(atom.arguments[1].number)

    ctl.solve(on_model=collect)
    return found


def _shortest_paths(n_nodes, edges, u, v) -> tuple[int | None, int]:
    """(length, number) of the shortest undirected paths u..v, by powers of the adjacency matrix.

    The number of walks of length k from u to v is (A^k)[u, v]; the first k where it is positive is
    the distance, and every walk of that length is a path.
    """
    adjacency = np.zeros((n_nodes, n_nodes), dtype=np.int64)
    for s, _, d in edges:
        adjacency[s, d] = adjacency[d, s] = 1
    walks = np.eye(n_nodes, dtype=np.int64)
    for k in range(1, n_nodes):
        walks = walks @ adjacency
        if walks[u, v]:
            return k, int(walks[u, v])
    return None, 0


def test_query_graphs_are_sound(worlds):
    """Each query graph entails its label under the world's rules, along a unique shortest path."""
    for w in worlds:
        queries = [g.graph(i) for g in w.splits.values() for i in range(len(g))]
        paths, wholes = [], []
        for q in queries:
            assert 2 <= len(q.descriptor) <= SMALL.max_path_length
            rel = {(s, d): r for s, r, d in q.edges}
            path = q.path_nodes
            assert (path[0], path[-1]) == q.query
            assert tuple(rel[(a, b)] for a, b in zip(path, path[1:], strict=False)) == q.descriptor
            assert (q.query not in rel) and (q.query[::-1] not in rel), "the hidden edge leaked"
            assert _shortest_paths(q.n_nodes, q.edges, *q.query) == (len(q.descriptor), 1), (
                "a rival shortest path"
            )
            paths.append(([(a, rel[(a, b)], b) for a, b in zip(path, path[1:], strict=False)], q.query))
            wholes.append((q.edges, q.query))
        for q, from_path, from_graph in zip(
            queries, _entailed(paths, w.rules), _entailed(wholes, w.rules), strict=True
        ):
            assert q.target in from_path, f"the rules do not derive r{q.target} from the path {q.descriptor}"
            assert q.target in from_graph, f"the rules do not derive r{q.target} from the graph"


def test_descriptors_disjoint_across_splits(worlds):
    for w in worlds:
        d = {s: g.descriptors() for s, g in w.splits.items()}
        assert d["train"] and d["valid"] and d["test"]
        assert not (d["train"] & d["test"]) and not (d["train"] & d["valid"]) and not (d["valid"] & d["test"])


def test_generation_is_deterministic(worlds):
    again = generate_suite(SMALL, worlds=[0])[0]
    for s in ("train", "test"):
        a, b = worlds[0].splits[s], again.splits[s]
        for col in ("src", "rel", "dst", "target", "descriptor", "n_nodes"):
            assert np.array_equal(getattr(a, col), getattr(b, col))
    other = generate_suite(replace(SMALL, seed=1), worlds=[0])[0]
    assert not np.array_equal(other.splits["train"].target, worlds[0].splits["train"].target)


def test_world_statistics(worlds):
    s = worlds[0].stats()
    assert s["descriptors"] == len(set().union(*(g.descriptors() for g in worlds[0].splits.values())))
    assert 2 <= s["avg_resolution_length"] <= 10
    assert s["avg_nodes"] >= s["avg_resolution_length"] + 1
    assert s["classes"] == len(set(np.concatenate([g.target for g in worlds[0].splits.values()]).tolist()))


def test_parquet_round_trip(worlds, tmp_path):
    write_suite(tmp_path, worlds, generate_rules(), SMALL)
    suite = Suite(tmp_path)
    assert suite.worlds() == ["rule_0", "rule_5"]
    back = suite.load("rule_5")
    assert back.rules == worlds[1].rules
    for s, g in worlds[1].splits.items():
        for col in ("n_nodes", "edge_ptr", "src", "rel", "dst", "query_u", "query_v", "target", "desc_ptr",
                    "descriptor", "path_ptr", "path_nodes"):  # fmt: skip
            assert np.array_equal(getattr(g, col), getattr(back.splits[s], col)), col
    assert np.array_equal(back.graph_src, worlds[1].graph_src)
    assert suite.stats()[1]["descriptors"] == worlds[1].stats()["descriptors"]
    assert suite.fingerprint("rule_0") == Suite(tmp_path).fingerprint("rule_0")
    assert suite.fingerprint("rule_0") != suite.fingerprint("rule_5")


def test_task_source_and_encoding(worlds, tmp_path):
    write_suite(tmp_path, worlds, generate_rules(), SMALL)
    src = open_source(f"graphlog:{tmp_path}")
    assert src.games() == ["rule_0", "rule_5"]
    assert src.targets("rule_0") == ["relation"]
    task = src.load_task("rule_0", "relation")
    assert src.predicates("rule_0", "relation") == task.predicates
    assert set(task.splits) == {"train", "validate", "test"}
    test = task.splits["test"]
    assert test.n_examples == SMALL.n_test
    assert (np.asarray(test.positives.sum(axis=1)).ravel() == 1).all()
    assert "query(u, v)" in task.background_atoms
    graphs, classes = decode_split(task, test)
    orig = worlds[0].splits["test"]
    assert np.array_equal(graphs.target, orig.target)
    assert np.array_equal(np.diff(graphs.edge_ptr), np.diff(orig.edge_ptr))
    one = task.for_predicate(task.predicates[0])
    assert len(one.target_atoms) == 1
    with pytest.raises(FileNotFoundError, match="no such directory"):
        GraphLogSource(tmp_path / "nope")


def test_two_hop_chain_rules_are_exact_in_clingo(worlds):
    """On the Task encoding, rel_rk(X, Y) :- ri(X, Z), rj(Z, Y) derives exactly the target for 2-hop queries."""
    w = worlds[0]
    task = world_task(w)
    split = task.splits["train"]
    program = "\n".join(f"rel_r{r.head}(X, Y) :- r{r.body1}(X, Z), r{r.body2}(Z, Y)." for r in w.rules)
    checked = 0
    g = w.splits["train"]
    for i in range(split.n_examples):
        if len(g.graph(i).descriptor) != 2:
            continue
        facts = " ".join(f"{task.background_atoms[a]}." for a in split.background_of(i))
        ctl = clingo.Control(["--warn=none"])
        ctl.add("base", [], facts + "\n" + program)
        ctl.ground([("base", [])])
        with ctl.solve(yield_=True) as models:
            derived = {str(s) for m in models for s in m.symbols(atoms=True) if s.name.startswith("rel_")}
        want = task.target_atoms[split.positives_of(i)[0]].replace(" ", "")
        assert {d for d in derived if d.endswith("(u,v)")} == {want}
        checked += 1
    assert checked > 0


def _write_release(root, lines, rules=(("r_1", "r_2", "r_3"),)):
    d = root / "world_a"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"rules": [list(r) for r in rules]}))
    for split in ("train", "valid", "test"):
        (d / f"{split}.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return d


RELEASED_LINES = [
    {"edges": [[10, 11, "r_1"], [11, 12, "r_2"], [12, 13, "r_4"]], "query": [10, 12], "target": "r_3",
     "resolution_path": [10, 11, 12]},
    {"edges": [["a", "b"], ["b", "c"]], "edge_attr": ["r_1", "r_2"], "query": ["a", "c", "r_3"],
     "resolution_path": [["a", "b", "r_1"], ["b", "c", "r_2"]]},
]  # fmt: skip


def test_released_jsonl_reader(tmp_path):
    d = _write_release(tmp_path, RELEASED_LINES)
    g = read_jsonl(d / "train.jsonl")
    assert len(g) == 2
    first, second = g.graph(0), g.graph(1)
    assert first.edges == [(0, 1, 1), (1, 2, 2), (2, 4, 3)] and first.query == (0, 2) and first.target == 3
    assert first.descriptor == (1, 2)
    assert second.edges == [(0, 1, 1), (1, 2, 2)] and second.target == 3 and second.descriptor == (1, 2)
    src = open_source(f"graphlog:{tmp_path}")
    assert isinstance(src.suite, ReleasedSuite)
    assert src.games() == ["world_a"]
    assert src.predicates("world_a", "relation") == ["rel_r3"]
    task = src.load_task("world_a", "relation")
    assert task.splits["test"].n_examples == 2


def test_released_reader_names_the_bad_line(tmp_path):
    d = tmp_path / "w"
    d.mkdir()
    (d / "train.jsonl").write_text(json.dumps(RELEASED_LINES[0]) + "\n" + '{"edges": [[1, 2, "r_1"]]}\n')
    with pytest.raises(ValueError, match=r"train\.jsonl:2: .*'query'"):
        read_jsonl(d / "train.jsonl")
    (d / "train.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match=r"train\.jsonl:1: not JSON"):
        read_jsonl(d / "train.jsonl")


def test_cli_generate_and_stats(tmp_path):
    from typer.testing import CliRunner

    from orchestrator.cli import app

    runner = CliRunner()
    res = runner.invoke(app, ["graphlog", "generate", str(tmp_path), "--worlds", "2,3", "--train", "30",
                              "--valid", "10", "--test", "10", "--seed", "7"])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["graphlog", "stats", str(tmp_path), "--similarity", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [w["world"] for w in out["worlds"]] == ["rule_2", "rule_3"]
    assert out["similarity"]["rule_2"]["rule_3"] == 19
    assert out["worlds"][0]["train_graphs"] == 30
    res = runner.invoke(app, ["graphlog", "generate", str(tmp_path / "x"), "--worlds", "99"])
    assert res.exit_code == 2 and "out of range" in res.output
