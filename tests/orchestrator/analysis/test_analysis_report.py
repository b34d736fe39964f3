"""orch select / compare / the HTML report, over a real Parquet store of hand-made job rows.

The HTML page is opened in a real headless browser (Debian chromium) when one is installed.
"""

from __future__ import annotations

import datetime as dt
import html as html_lib
import json
import random
import re
import shutil
import subprocess

import pytest
from typer.testing import CliRunner

from orchestrator.analysis.compare import Side, compare
from orchestrator.analysis.htmlreport import write_html
from orchestrator.cli import app
from orchestrator.storage.store import ResultStore

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
        program="",
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
    dom = _dump_dom(probe, flags)
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


def _two_learner_store(store, tmp_path):
    rows = [r for r in store.latest().to_pylist() if r["learner"] in ("weak", "strong")]
    two = ResultStore(tmp_path / "two")
    two.write(rows)
    return two


def test_selection_and_correlation_need_three_learners_and_say_so(store, tmp_path):
    page = write_html(_two_learner_store(store, tmp_path), tmp_path / "two.html", k=3).read_text()
    assert "Not shown: needs at least 3 learners with complete tasks" in page
    assert "this store has 2: strong, weak" in page and "Kendall" not in page
    assert not (tmp_path / "two_figures" / "task_correlation.png").exists()
    assert (
        "Not in this report" in page and "orch analyse predictive" in page
    )  # absent analyses, one line each


def _dump_dom(probe, flags: list[str]) -> str:
    """The DOM of ``probe`` after its scripts ran, read in headless chromium."""
    return subprocess.run(
        [CHROMIUM, *flags, "--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom",
         probe.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout  # fmt: skip


def _visible_text(page, tmp_path) -> str:
    """The page's text as a person sees it (``innerText`` after layout), read in headless chromium."""
    probe = tmp_path / "text_probe.html"
    probe.write_text(
        f"<!doctype html><body><iframe id=f src='{page.name}' width=1200 height=800></iframe><pre id=o></pre>"
        "<script>document.getElementById('f').onload=function(){"
        "document.getElementById('o').textContent=this.contentDocument.body.innerText;};</script></body>"
    )
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile2'}"]  # fmt: skip
    dom = _dump_dom(probe, flags)
    start = dom.index('<pre id="o">') + len('<pre id="o">')
    return html_lib.unescape(dom[start : dom.index("</pre>", start)])


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)")
def test_html_report_reads_right_in_chromium(store, tmp_path):
    """The sections and numbers as a browser shows them: percent balanced accuracy and perfectly
    solved as count/total (share) in every table, published rows in the same format, and the
    selection section replaced by its reason with two learners."""
    from orchestrator.analysis.report import percent, perfect_cell, report_tables

    two = _two_learner_store(store, tmp_path)
    page = write_html(two, tmp_path / "page.html", k=3)
    text = _visible_text(page, tmp_path)
    lines = text.splitlines()
    headings = ["Learners (IGGP Table 3)", "Like for like", "By target (Tables 4 and 5)", "Balanced accuracy per game",
                "Time to solve", "Task selection by information gain and task correlation",
                "By game (Table 5 style)", "Not in this report"]  # fmt: skip
    assert [h for h in lines if h in headings] == headings
    header = lines.index("Learners (IGGP Table 3)") + 1
    assert lines[header].split("\t")[:5] == [
        "learner",
        "tasks",
        "incomplete",
        "balanced accuracy",
        "perfectly solved",
    ]
    table = lines[header + 1 : lines.index("Like for like")]
    shown = {c[0]: c for c in (line.split("\t") for line in table)}
    for row in report_tables(two, by=("learner",))["learner"]:
        cells = shown[row["learner"]]
        assert cells[1] == str(row["tasks"]) and cells[3] == percent(row["balanced_accuracy"])
        assert cells[4] == perfect_cell(row["perfect"], row["tasks"]) and "/" in cells[4]
    assert not any("ILASP*" in c for c in shown)  # published rows only from an --anchor file
    assert "Not shown: needs at least 3 learners" in text
    # no fraction anywhere a balanced accuracy or a share is shown
    for line in lines:
        cells = line.split("\t")
        assert not any(re.fullmatch(r"0\.\d+|1\.0+", c) for c in cells), line


def test_select_with_two_learners_says_why_every_gain_is_one_bit(store, tmp_path):
    two = _two_learner_store(store, tmp_path)
    result = CliRunner().invoke(app, ["select", "--store", two.root, "--k", "3", "--samples", "50"])
    assert result.exit_code == 0, result.output
    assert "note: with 2 learners" in result.output and "from 3 learners" in result.output
    three = CliRunner().invoke(app, ["select", "--store", store.root, "--k", "3", "--samples", "50"])
    assert three.exit_code == 0 and "note:" not in three.output


def test_compare_a_misspelt_learner_is_an_error_with_suggestions(store):
    result = CliRunner().invoke(app, ["compare", "stornge", "WEAK", "--store", store.root])
    assert result.exit_code == 2
    text = " ".join(result.output.replace("│", " ").split())
    assert "no learner 'stornge' in the store" in text and "did you mean strong?" in text
    ok = CliRunner().invoke(app, ["compare", "STRONG", "weak", "--store", store.root, "--format", "json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["summary"][0]["tasks"] == 16


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
    from orchestrator.analysis.anchor import read_anchor
    from orchestrator.analysis.htmlreport import published_rows
    from orchestrator.analysis.report import report_tables

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
