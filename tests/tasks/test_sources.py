"""The task-source registry: schemes resolve lazily, and an unknown spec names the known ones."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tasks.sources import PLUGINS, TaskSource, UnknownSource, open_source


@pytest.mark.parametrize("scheme", sorted(PLUGINS))
def test_every_plugin_entry_names_an_opener(scheme: str) -> None:
    module, _, attribute = PLUGINS[scheme].partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))


def test_a_scheme_opens_its_family(tmp_path: Path) -> None:
    from tasks.graphlog.generator import GeneratorConfig, generate_suite
    from tasks.graphlog.rules import generate_rules
    from tasks.graphlog.suite_files import write_suite

    cfg = GeneratorConfig(n_train=4, n_valid=2, n_test=2, seed=0)
    write_suite(tmp_path / "worlds", generate_suite(cfg, [0]), generate_rules(seed=cfg.seed), cfg)
    source = open_source(f"graphlog:{tmp_path / 'worlds'}")
    assert isinstance(source, TaskSource) and source.games() == ["rule_0"]


def test_an_unknown_spec_lists_the_schemes(tmp_path: Path) -> None:
    with pytest.raises(UnknownSource, match="graphlog:"):
        open_source(str(tmp_path / "missing"))
