"""The k-shot split that `orch graphlog train` and `orch graphlog sweep` share."""

from __future__ import annotations

import pytest

from orchestrator.graphlog.kshot import KShotError, kshot_worlds


def test_heldout_defaults_to_the_test_worlds_and_leaves_pretraining() -> None:
    assert kshot_worlds(["a", "b", "c"], [], ["c"]) == (["a", "b"], ["c"])
    assert kshot_worlds(["c", "a", "b"], ["a"], ["c"]) == (["c", "b"], ["a"])


@pytest.mark.parametrize(
    ("worlds", "heldout", "test", "message"),
    [
        (["a"], [], [], "needs --heldout"),
        (["a"], ["a"], [], "every pre-training world is also held out"),
    ],
)
def test_impossible_splits_say_why(worlds, heldout, test, message) -> None:
    with pytest.raises(KShotError, match=message):
        kshot_worlds(worlds, heldout, test)
