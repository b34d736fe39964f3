"""Ablation arms: a results file whose learner switches features off is compared with the file of
the learner itself, task by task on the tasks both have, and kept out of the whole-benchmark tables."""

from __future__ import annotations

from store_rows import row

from orchestrator.analysis.ablation import split_arms
from orchestrator.analysis.results import export, read_rows
from orchestrator.analysis.results_docs import render
from orchestrator.storage.store import ResultStore

PERFECT, WRONG = (1, 0, 3, 0), (1, 1, 2, 0)  # balanced accuracy 1.0 and 0.833


def _row(learner: str, game: str, target: str, counts, budget_s: float = 60.0):
    extra = {"all_false": {"test_tp": 0, "test_fp": 0, "test_tn": 4, "test_fn": 2}, "fallback": False}
    values = dict(zip(("test_tp", "test_fp", "test_tn", "test_fn"), counts, strict=True))
    return row(f"{learner}-{game}-{target}-{budget_s}", game=game, target=target, predicate=f"{target}_a",
               learner=learner, budget_s=budget_s, extra=extra, learn_s=1.0, **values)  # fmt: skip


def _files(tmp_path, rows):
    store = ResultStore(tmp_path / "s")
    store.write(rows)
    out = tmp_path / "res"
    return out, [(p, read_rows(p)) for p in export(store, out, commit="abc")]


def test_an_arm_belongs_to_the_longest_learner_it_switches_off_at_the_same_budget(tmp_path):
    _, files = _files(
        tmp_path,
        [
            _row("ilasp", "g", "next", PERFECT),
            _row("ilasp_w100", "g", "next", PERFECT),
            _row("ilasp_w100_noframe_nooffsets", "g", "next", WRONG),
            _row("ilasp_noframe", "g", "next", WRONG, budget_s=10.0),  # no ilasp at 10 s: a whole file
            _row("knn5", "g", "next", WRONG),
        ],
    )
    whole, arms = split_arms(files)
    assert sorted(rows[0]["learner"] for _, rows in whole) == ["ilasp", "ilasp_noframe", "ilasp_w100", "knn5"]
    assert [(rows[0]["learner"], base[0]["learner"]) for _, rows, base in arms] == [
        ("ilasp_w100_noframe_nooffsets", "ilasp_w100")
    ]


def test_docs_compare_an_arm_on_the_tasks_both_files_have_and_name_the_moved_tasks(tmp_path):
    out, _ = _files(
        tmp_path,
        [
            _row("ilasp", "a", "next", PERFECT),
            _row("ilasp", "b", "next", WRONG),
            _row("ilasp", "c", "next", WRONG),
            _row("ilasp", "a", "legal", PERFECT),  # the arm did not run legal: not compared
            _row("ilasp_noframe", "a", "next", WRONG),
            _row("ilasp_noframe", "b", "next", PERFECT),
            _row("ilasp_noframe", "c", "next", WRONG),
        ],
    )
    text = render(out)
    whole, section = text.split("### Ablation: features switched off, on the same tasks")
    assert "ilasp_noframe" not in whole  # an arm is no whole benchmark: not in the main tables
    assert "| ilasp | frame | 60s | next | 3 | 1 | 88.9% | 1 | 88.9% | 1 | 1 | abc |" in section
    assert "legal" not in section
    assert (
        "- `ilasp_noframe` (`ilasp_noframe_60s.csv`): worse without (1): a/next 1.000 -> 0.833; "
        "better without (1): b/next 0.833 -> 1.000." in section
    )


def test_no_arm_no_ablation_section(tmp_path):
    out, _ = _files(tmp_path, [_row("ilasp", "a", "next", PERFECT), _row("knn5", "a", "next", WRONG)])
    assert "Ablation" not in render(out)
