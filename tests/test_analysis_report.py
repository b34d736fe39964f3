"""orch select / compare / the HTML report, over a real Parquet store of hand-made job rows.

The HTML page is opened in a real headless browser (Debian chromium) when one is installed.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.compare import Side, compare
from orchestrator.htmlreport import write_html
from orchestrator.store import ResultStore

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SKILL = {"weak": 0.4, "mid": 0.7, "strong": 0.95}


def _row(game, target, pred, learner, repeat, tp, fp, fn, learn_s=1.0, extra="{}"):
    return dict(
        job_id=f"{game}-{target}-{pred}-{learner}-{repeat}",
        sweep="s",
        game=game,
        target=target,
        predicate=pred,
        learner=learner,
        seed=0,
        repeat=repeat,
        budget_s=60.0,
        status="ok",
        attempt=1,
        test_tp=tp,
        test_fp=fp,
        test_tn=100 - fp,
        test_fn=fn,
        validate_tp=tp,
        validate_fp=fp,
        validate_tn=100 - fp,
        validate_fn=fn,
        learn_s=learn_s,
        eval_s=0.1,
        peak_rss=1,
        node="n",
        started=NOW,
        finished=NOW,
        model="",
        error=None,
        extra=extra,
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = random.Random(0)
    rows = []
    for g in range(8):
        for target in ("legal", "next"):
            for learner, skill in SKILL.items():
                for repeat in range(3):
                    for pred in (f"{target}_a", f"{target}_b"):
                        noisy = skill + (0.3 * rng.random() if g % 2 else 0.0)
                        fn = round(10 * (1 - min(noisy, 1.0)))
                        fp = 0 if noisy >= 0.95 else rng.randint(1, 3)
                        curve = json.dumps(
                            {"learning_curve": [{"epoch": e, "valid_acc": 0.5 + 0.05 * e} for e in range(5)]}
                        )
                        rows.append(
                            _row(
                                f"game{g}",
                                target,
                                pred,
                                learner,
                                repeat,
                                10 - fn,
                                fp,
                                fn,
                                learn_s=rng.uniform(0.1, 5),
                                extra=curve if learner == "mid" else "{}",
                            )
                        )
    s = ResultStore(tmp_path_factory.mktemp("store"))
    s.write(rows)
    return s


def test_select_cli_prints_tasks_gain_and_tau(store):
    result = CliRunner().invoke(
        app, ["select", "--store", store.root, "--k", "3", "--json", "--samples", "100"]
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert len(out["selected"]) == 3
    gains = [r["cumulative_gain"] for r in out["selected"]]
    assert 0 < gains[0] <= out["max_gain"] + 1e-3
    assert out["learners"] == ["mid", "strong", "weak"] and out["min_runs"] == 3
    assert -1 <= out["kendall_tau"] <= 1


def test_select_rejects_unknown_metric(store):
    result = CliRunner().invoke(app, ["select", "--store", store.root, "--metrics", "ba,speed"])
    assert result.exit_code != 0 and "unknown metric" in result.output


def test_compare_counts_wins_losses_ties(store):
    c = compare(Side.parse("strong", store), Side.parse("weak", store))
    assert c.wins + c.losses + c.ties == len(c.rows) == 16
    assert c.wins > c.losses
    same = compare(Side.parse("mid", store), Side.parse("mid@s", store))
    assert same.ties == len(same.rows) and same.wins == same.losses == 0
    result = CliRunner().invoke(app, ["compare", "strong", "weak", "--store", store.root, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["summary"][0]["a_wins"] == c.wins


def test_html_report_is_self_contained_with_pngs(store, tmp_path):
    out = write_html(store, tmp_path / "report.html", k=3)
    page = out.read_text()
    assert page.count("<table>") >= 4 and "published" in page
    assert page.count("data:image/png;base64,") >= 4  # heatmap, time to solve, gnn curves, correlation
    assert "src='http" not in page and 'src="http' not in page  # nothing fetched from elsewhere
    figures = sorted(p.name for p in (tmp_path / "report_figures").iterdir())
    assert figures == ["gnn_curves.png", "heatmap_ba.png", "task_correlation.png", "time_to_solve.png"]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)")
def test_html_report_renders_in_headless_chromium(store, tmp_path):
    out = write_html(store, tmp_path / "report.html", k=3)
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    # The page's own script-free DOM after rendering, and the natural size of every image.
    probe = tmp_path / "probe.html"
    probe.write_text(
        "<!doctype html><body><iframe id=f src='report.html' width=1200 height=800></iframe><pre id=o></pre><script>"
        "document.getElementById('f').onload=function(){var d=this.contentDocument;"
        "var imgs=[...d.images].map(i=>i.complete&&i.naturalWidth>0);"
        "document.getElementById('o').textContent=JSON.stringify({tables:d.querySelectorAll('table').length,"
        "images:imgs.length,loaded:imgs.filter(x=>x).length,title:d.title});};</script></body>"
    )
    dom = subprocess.run(
        [
            CHROMIUM,
            *flags,
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    start = dom.index('<pre id="o">') + len('<pre id="o">')
    seen = json.loads(dom[start : dom.index("</pre>", start)].replace("&quot;", '"'))
    assert seen["title"] == "orch report"
    assert seen["tables"] >= 4
    assert seen["images"] >= 4 and seen["loaded"] == seen["images"]
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1200,2000", out.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.exists() and shot.stat().st_size > 10_000


def _anchor_file(tmp_path):
    lines = ["game,target,pub_test_ba,perfect"]
    lines += [
        f"game{g},{t},{0.5 if g == 0 else 1.0},{int(g != 0)}" for g in range(8) for t in ("legal", "next")
    ]
    lines.append("elsewhere,goal,0.0,0")  # a task no learner ran: must never enter a published row
    path = tmp_path / "pub.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_published_rows_come_from_a_named_file_on_the_learners_tasks_only(store, tmp_path):
    from orchestrator.anchor import read_anchor
    from orchestrator.htmlreport import published_rows
    from orchestrator.report import report_tables

    anchor = read_anchor(_anchor_file(tmp_path))
    rows = published_rows(report_tables(store, by=("task",))["task"], [anchor])
    assert {r["learner"] for r in rows} == {f"pub on {n}'s tasks" for n in SKILL}
    for r in rows:
        assert (r["tasks"], r["perfect"]) == (16, 14)
        assert r["balanced_accuracy"] == pytest.approx((2 * 0.5 + 14 * 1.0) / 16)
        assert str(anchor.path) in r["source"]
    page = write_html(store, tmp_path / "r.html", k=3, anchors=[anchor]).read_text()
    assert "pub on strong&#x27;s tasks" in page and "Like for like" in page


def test_compare_with_an_anchor_counts_wins_losses_and_ties(store, tmp_path):
    result = CliRunner().invoke(
        app, ["compare", "strong", "--anchor", str(_anchor_file(tmp_path)), "--store", store.root,
              "--format", "json", "--all"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    summary = out["summary"][0]
    assert summary["tasks"] == 16 and summary["only_anchor"] == 1
    assert summary["wins"] + summary["losses"] + summary["ties"] == 16
    by_task = {(r["game"], r["target"]): r for r in out["tasks"]}
    for (game, target), r in by_task.items():
        expected = (
            "tie"
            if r["learner_ba"] == r["anchor_ba"]
            else ("win" if r["learner_ba"] > r["anchor_ba"] else "loss")
        )
        assert r["outcome"] == expected, (game, target)
    assert out["counted"][0]["errored predicates (scored false)"] == 0
