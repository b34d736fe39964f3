"""The learner contract (docs/adding-a-learner.md), checked on every registered learner.

Each learner fits a tiny task within its budget, reports anytime models, predicts, and its model
serialises (pickle, as the worker ships it; ``program``/``description``, as the store keeps it).
Learners that say they do not apply to the IGGP task get a GraphLog one, and must apply to one of
the two. Also here: typed name parameters and third-party learners through entry points.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from typer.testing import CliRunner

import learners.base as base
from learners.base import Budget, Model, learner_applies, make_learner, registered, spec_for
from orchestrator.storage.schema import result_row
from orchestrator.storage.store import ResultStore
from tasks.asp import rejection

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = 10.0
TINY = {  # heavy families run in a tiny configuration; the name must still match the family
    "gnn-gat-egat": "gnn-param-rgcn-d8-e2",
    "gnn-iggp": "gnn-iggp-d8-e2",
    "aspal": "aspal1",
}
CONTRACT = [s for s in registered() if not s.testing] + [spec_for("template")[0]]


@pytest.fixture(scope="module")
def iggp_task():
    from tasks.sources import open_source

    return open_source("bundled").load_task("lights", "next").for_predicate("next_step")


@pytest.fixture(scope="module")
def graphlog_task():
    from tasks.graphlog.as_task import world_task
    from tasks.graphlog.generator import GeneratorConfig, generate_suite

    cfg = GeneratorConfig(n_train=20, n_valid=8, n_test=8, world_nodes=100)
    return world_task(generate_suite(cfg, worlds=[0])[0])


@pytest.mark.parametrize("spec", CONTRACT, ids=lambda s: TINY.get(s.example, s.example))
def test_every_registered_learner_keeps_the_contract(spec, iggp_task, graphlog_task, tmp_path):
    name = TINY.get(spec.example, spec.example)
    assert spec_for(name)[0] is spec, f"{name} is not a name of the {spec.example} family"
    if spec.resources.get("num_gpus"):
        pytest.importorskip("torch")
    learner = make_learner(name)
    fits = [t for t in (iggp_task, graphlog_task) if learner_applies(learner, t)[0]]
    assert fits, f"{name} applies to neither a bundled IGGP task nor a GraphLog world"
    task = fits[0]

    reported: list = []
    t0 = time.monotonic()
    model = learner.fit(task, Budget(BUDGET_S), reported.append)
    took = time.monotonic() - t0
    assert took < BUDGET_S * 1.5 + 5, f"{name} took {took:.1f}s on a {BUDGET_S:g}s budget"
    assert reported, f"{name} reported no model (report at least the one it returns)"
    assert all(isinstance(m, Model) for m in [*reported, model])

    test = task.split("test")
    pred = model.predict(task, test)
    assert isinstance(pred, np.ndarray | sp.spmatrix) and pred.shape == (
        test.n_examples,
        len(task.target_atoms),
    )

    shipped = pickle.loads(pickle.dumps(model))  # the worker ships models out of the learner's process
    assert (sp.csr_matrix(shipped.predict(task, test)) != sp.csr_matrix(pred)).nnz == 0
    description, program = model.describe(), model.rules()
    assert isinstance(description, str) and description.strip()
    if spec.symbolic:
        assert isinstance(program, str) and rejection(program) is None, f"{name}'s rules do not parse"
    else:
        assert program is None, f"{name} gives rules but is not registered symbolic=True"
    store = ResultStore(tmp_path)
    store.write([result_row("j", status="ok", learner=name, program=program, description=description)])
    assert store.read(["program", "description"]).to_pylist() == [
        {"program": program, "description": description}
    ]


def test_graphlog_only_learners_do_not_apply_to_iggp_tasks(iggp_task, graphlog_task):
    ok, reason = learner_applies(make_learner("gnn-gat-egat"), iggp_task)
    assert not ok and "GraphLog tasks only" in reason and "lights/next" in reason
    assert learner_applies(make_learner("gnn-gat-egat"), graphlog_task) == (True, "")
    assert learner_applies(make_learner("knn5"), graphlog_task) == (True, "")  # no hook: applies


def test_name_parameters_arrive_typed_and_job_params_stay_strings():
    knn = make_learner("knn13")
    assert knn.k == 13 and isinstance(knn.k, int)
    aspal = make_learner("aspal0_soft")
    assert aspal.settings.max_body == 0 and aspal.soft is True  # 0 is a value, not "absent"
    assert make_learner("aspal").settings.max_body == 5 and make_learner("aspal").soft is False
    assert make_learner("template_50").threshold == 50
    assert make_learner("sleep0.5").seconds == 0.5
    # the stored params (and so every job id) keep the name's text, as before
    assert base.learner_params("knn13") == {"k": "13"}
    assert base.learner_params("aspal3") == {"max_body": "3", "soft": None}


_PLUGIN = """
from learners.base import register
from learners.template import TemplateLearner


@register(r"echo(?P<n>\\d+)", description="third-party test learner", example="echo2")
class EchoLearner(TemplateLearner):
    def __init__(self, n: int) -> None:
        super().__init__(100)
        self.n = n
"""


def _plugin(root: Path, entry: str = "echo = orch_echo_plugin") -> Path:
    """A tiny installed distribution: a module and its dist-info declaring an orch.learners entry point."""
    (root / "orch_echo_plugin.py").write_text(_PLUGIN)
    info = root / "orch_echo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: orch-echo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[orch.learners]\n{entry}\n")
    (info / "RECORD").write_text("")
    return root


def test_third_party_learners_register_through_entry_points(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # leave the registry as it was
    monkeypatch.setattr(base, "_plugins", None)
    with pytest.raises(base.UnknownLearner):
        spec_for("echo3")  # not installed yet
    monkeypatch.syspath_prepend(str(_plugin(tmp_path)))
    monkeypatch.delitem(sys.modules, "orch_echo_plugin", raising=False)
    assert base.load_entry_points()["echo"] == "orch_echo_plugin"
    learner = make_learner("echo3")
    assert learner.n == 3 and spec_for("echo3")[0].origin == "orch_echo_plugin"

    # and from a fresh process, as a user runs it: `orch learners list` and `orch learn` find it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    listed = subprocess.run(
        [sys.executable, "-c", "from orchestrator.cli import app; app()", "learners", "list", "--json"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert "echo2" in [r["name"] for r in json.loads(listed.stdout)]


def test_a_broken_plugin_is_skipped_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(base, "_plugins", None)
    monkeypatch.syspath_prepend(str(_plugin(tmp_path, "broken = orch_no_such_module")))
    with pytest.warns(UserWarning, match="learner plugin 'broken'.*ModuleNotFoundError"):
        assert "broken" not in base.load_entry_points()
    assert make_learner("knn5").k == 5  # orch itself still works


def test_the_template_and_the_doc_agree():
    doc = (ROOT / "docs" / "adding-a-learner.md").read_text()
    for needle in ("learners/template.py", "orch.learners", "applies", "report", "symbolic", "not_applicable",
                   "tests/learners/test_learner_contract.py"):  # fmt: skip
        assert needle in doc, needle
    runner = CliRunner()
    from orchestrator.cli import app

    out = runner.invoke(app, ["learners", "list", "--all", "--json"])
    assert "template" in [r["name"] for r in json.loads(out.stdout)]
    assert textwrap.dedent(base.__doc__ or "").count("docs/adding-a-learner.md") == 1


def test_orchs_own_families_register_through_the_entry_point_group():
    """One registration path: orch's families are entry points of the orch distribution, as a
    third party's are of theirs (no separate built-in list)."""
    from importlib.metadata import entry_points

    own = {
        ep.value for ep in entry_points(group=base.ENTRY_POINT_GROUP) if ep.dist and ep.dist.name == "orch"
    }
    assert {"learners.baselines", "learners.knn", "learners.ilp", "learners.gnn"} <= own
    # every family defined in orch's own package comes from a module one of those entry points names
    ours = {
        spec.origin for spec in base.registered(include_testing=True) if spec.origin.startswith("learners.")
    }
    assert ours and all(any(o == m or o.startswith(m + ".") for m in own) for o in ours), ours - own
    assert not hasattr(base, "BUILTIN_MODULES")


def test_overlapping_name_patterns_are_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    monkeypatch.setattr(base, "_plugins", None)
    root = tmp_path
    (root / "orch_shadow_plugin.py").write_text(
        "from learners.base import register\nfrom learners.template import TemplateLearner\n\n"
        "@register(r'knn(?P<k>\\d+)x?', description='shadows knnK', example='knn3x')\n"
        "class Shadow(TemplateLearner):\n    def __init__(self, k: int) -> None:\n        super().__init__(1)\n"
    )
    info = root / "orch_shadow_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: orch-shadow-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[orch.learners]\nshadow = orch_shadow_plugin\n")
    (info / "RECORD").write_text("")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, "orch_shadow_plugin", raising=False)
    with pytest.raises(base.RegistryError, match=r"'knn3x'|'knn\d+'.*claimed by 2 families"):
        base.load_entry_points()
    # and a name two patterns both match is refused when resolved, never given to the first
    monkeypatch.setattr(base, "_plugins", {})
    with pytest.raises(base.RegistryError, match="claimed by 2 families"):
        spec_for("knn5")


def test_the_jobs_seed_reaches_a_learner_whose_fit_takes_one(iggp_task):
    """``fit_with_seed`` passes ``seed=`` only to a learner that declares it; others fit as before."""
    from learners.base import Budget, fit_with_seed
    from learners.template import TemplateLearner

    seen: list[int | None] = []

    class Seeded(TemplateLearner):
        def fit(self, task, budget, report=base.ignore_report, seed=None):
            seen.append(seed)
            return super().fit(task, budget, report)

    task = iggp_task
    fit_with_seed(Seeded(50), task, Budget(5), base.ignore_report, 1234)
    fit_with_seed(TemplateLearner(50), task, Budget(5), base.ignore_report, 1234)  # no seed parameter
    assert seen == [1234]
