"""The HTML report on a GraphLog store (issue 28): the right sections and titles, tables within 1,400 px.

The page is laid out by a real headless browser (Debian chromium) when one is installed, as the
IGGP page is in test_analysis_report.py; the text checks run without it.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from store_rows import row

from orchestrator.analysis.htmlreport import write_html
from orchestrator.storage.store import ResultStore
from tasks.graphlog.as_task import target_predicate
from tasks.graphlog.generator import GeneratorConfig, generate_suite
from tasks.graphlog.rules import generate_rules
from tasks.graphlog.suite_files import write_suite

CFG = GeneratorConfig(n_train=30, n_valid=10, n_test=40, seed=0)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH = 1400


@pytest.fixture(scope="module")
def graphlog_store(tmp_path_factory) -> ResultStore:
    """Rule rows (a program per class), GNN rows and KNN rows on two worlds of a generated suite."""
    root = tmp_path_factory.mktemp("suite")
    worlds = generate_suite(CFG, [0, 1])
    write_suite(root, worlds, generate_rules(seed=CFG.seed), CFG)
    dataset = f"graphlog:{root}"
    store = ResultStore(tmp_path_factory.mktemp("store") / "st")
    rows = []
    for world in worlds:
        heads = sorted({r.head for r in world.rules})
        for h in heads:
            pred = target_predicate(h)
            program = "\n".join(
                f"{pred}(X,Y) :- r{r.body1}(X,Z), r{r.body2}(Z,Y)." for r in world.rules if r.head == h
            )
            common = dict(dataset=dataset, game=world.name, target="relation", predicate=pred)
            rows += [
                row(f"ilasp-{world.name}-{pred}", learner="ilasp", program=program, **common,
                    extra=json.dumps({"fallback": False})),
                row(f"gnn-{world.name}-{pred}", learner="gnn-gat-egat", program=None,
                    description="gnn-gat-egat, 64 dims", params={"model": "gat-egat"}, **common),
                row(f"knn-{world.name}-{pred}", learner="knn5", program=None, description="knn", **common),
            ]  # fmt: skip
    store.write(rows)
    return store


def test_graphlog_page_has_graphlog_titles_and_knows_its_gnn(graphlog_store, tmp_path) -> None:
    page = write_html(graphlog_store, tmp_path / "report.html", k=2).read_text()
    assert "IGGP Table 3" not in page and "Tables 4 and 5" not in page
    assert "GraphLog worlds" in page
    assert "no GNN learner" not in page  # gnn-gat-egat ran: the page says so instead
    assert "gnn-gat-egat ran in this store" in page
    assert "errored_predicates" not in page and "perfect_ci95" not in page  # prose column names


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)")
def test_graphlog_page_fits_1400_px_in_headless_chromium(graphlog_store, tmp_path) -> None:
    out = write_html(graphlog_store, tmp_path / "report.html", k=2)
    probe = tmp_path / "probe.html"
    probe.write_text(
        f"<!doctype html><body><iframe id=f src='{out.name}' width={WIDTH} height=900></iframe><pre id=o></pre>"
        "<script>document.getElementById('f').onload=function(){var d=this.contentDocument;"
        "var t=[...d.querySelectorAll('table')].map(x=>Math.ceil(x.getBoundingClientRect().width));"
        "var h=[...d.querySelectorAll('h2')].map(x=>x.textContent);"
        "document.getElementById('o').textContent=JSON.stringify({tables:t,headings:h,"
        "page:d.documentElement.scrollWidth});};</script></body>"
    )
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
             "--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom"]  # fmt: skip
    dom = subprocess.run(
        [CHROMIUM, *flags, probe.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    start = dom.index('<pre id="o">') + len('<pre id="o">')
    seen = json.loads(dom[start : dom.index("</pre>", start)].replace("&quot;", '"'))
    assert seen["tables"] and max(seen["tables"]) <= WIDTH, seen
    assert seen["page"] <= WIDTH, seen  # nothing sticks out sideways
    assert not any("IGGP" in h for h in seen["headings"]), seen["headings"]
