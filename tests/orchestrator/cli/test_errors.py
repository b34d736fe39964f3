"""One line per error, no traceback (``orch --debug`` shows it), the documented exit codes; strict
``.dat`` and ``.typ`` parsing; fuzzed inputs always give one line naming file:line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sweep_helpers import write_tiny_dataset
from typer.testing import CliRunner

from orchestrator.cli import app
from orchestrator.cli.errors import EXIT_INPUT, EXIT_INTERNAL, OrchError, report
from tasks.iggp import DatError, read_dat
from tasks.signature import SignatureError, parse_typ

pytestmark = pytest.mark.faults

READERS = [
    ["status"],
    ["report"],
    ["store", "compact"],
    ["select"],
    ["compare", "a", "b"],
    ["analyse", "predictive"],
    ["analyse", "compose"],
    ["graphlog", "results"],
]


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_a_missing_store_is_exit_2_for_every_command_that_reads_one(command, tmp_path):
    res = CliRunner().invoke(app, [*command, "--store", str(tmp_path / "typo")])
    assert res.exit_code == EXIT_INPUT, res.output
    assert "no results store at" in res.output and "typo" in res.output
    assert "Traceback" not in res.output


@pytest.fixture
def dataset(tmp_path) -> Path:
    return write_tiny_dataset(tmp_path / "ds", games=("alpha",))


def _learn(dataset: Path, *extra: str):
    return CliRunner().invoke(
        app, [*extra, "learn", "-d", str(dataset), "-g", "alpha", "-t", "next", "-l", "noop"]
    )


def test_a_malformed_atom_is_one_line_naming_file_and_line(dataset):
    path = dataset / "data" / "train" / "alpha_next_train.dat"
    lines = path.read_text().splitlines()
    lines.insert(4, "\tdoes(player, pressButton")
    path.write_text("\n".join(lines) + "\n")
    res = _learn(dataset)
    assert res.exit_code == EXIT_INPUT
    assert res.output.strip() == f"error: {path}:5: malformed atom 'does(player, pressButton'"
    debug = _learn(dataset, "--debug")
    assert debug.exit_code == EXIT_INPUT and "Traceback" in debug.output and "DatError" in debug.output


def test_binary_bytes_and_trailing_garbage_are_refused(tmp_path, dataset):
    good = (dataset / "data" / "test" / "alpha_next_test.dat").read_text()
    bad = tmp_path / "x.dat"
    bad.write_text(good.replace("true_p(a)", "true_value(0)))) ;; garbage", 1))
    with pytest.raises(DatError, match=r"x\.dat:\d+: malformed atom 'true_value\(0\)\)\)\) ;; garbage'"):
        read_dat(bad)
    bad.write_bytes(good.encode().replace(b"true_q", b"true_\xff\xfeq", 1))
    with pytest.raises(DatError, match=r"x\.dat:\d+: not UTF-8 text"):
        read_dat(bad)


def test_a_malformed_typ_is_an_error(dataset):
    (dataset / "types").mkdir()
    (dataset / "types" / "alpha.typ").write_text(
        "true_p :: thing -> bool.\nsucc(x) :: thing -> thing -> bool.\n"
    )
    res = _learn(dataset)
    assert res.exit_code == EXIT_INPUT
    assert res.output.strip().startswith(
        f"error: {dataset / 'types' / 'alpha.typ'}:2: malformed name 'succ(x)'"
    )


def test_the_error_mechanism_maps_errors_to_one_line_and_exit_codes(capsys):
    assert report(OrchError("the thing is wrong\nsecond line")) == EXIT_INPUT
    assert report(OrchError("failed", exit_code=1)) == 1
    assert report(ZeroDivisionError("boom")) == EXIT_INTERNAL
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "error: the thing is wrong" and err[1] == "error: failed"
    assert err[2].startswith("internal error: ZeroDivisionError: boom") and len(err) == 3


# --- fuzzing ---------------------------------------------------------------------------------------

_GOOD_DAT = "atoms:\n\tnext_p(a)\n\tnext_p(b)\n\n---\n\nstatics:\n\tsucc(a, b)\n\n---\n\nbackground:\n\ttrue_p(a)\n\n---\n\npositives:\n\tnext_p(b)\n\n---\n"
_NASTY = st.sampled_from(list("()[],;.:%~\"'\\ \t\x00\x7f") + ["é", "---", ":-", "\r", "((", "))"])
_TEXT = st.lists(st.one_of(_NASTY, st.text(alphabet="abcXYZ_019", min_size=1, max_size=4)), max_size=8).map(
    "".join
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.integers(min_value=0, max_value=17), junk=_TEXT, binary=st.binary(max_size=6))
def test_fuzzed_dat_files_load_or_fail_with_file_and_line(tmp_path, line, junk, binary):
    lines = _GOOD_DAT.split("\n")
    lines.insert(line, "\t" + junk)
    path = tmp_path / "f.dat"
    path.write_bytes("\n".join(lines).encode() + (binary if line % 2 else b""))
    try:
        read_dat(path)
    except DatError as e:
        msg = str(e)
        assert msg.startswith(f"{path}") and "\n" not in msg
        assert msg.startswith(f"{path}:") or "truncated" in msg or "not found" in msg
        return
    # accepted: then every atom is well formed (the junk was blank or itself a valid atom)


@settings(max_examples=150, deadline=None)
@given(
    text=st.lists(
        st.one_of(_TEXT, st.sampled_from(["::", "->", ":>", ".", "\n", "bool", "p", "q"])), max_size=12
    ).map("".join)
)
def test_fuzzed_typ_files_parse_or_fail_with_file_and_line(text):
    try:
        sig = parse_typ(text, name="fuzz.typ")
    except SignatureError as e:
        assert str(e).startswith("fuzz.typ:") and str(e).split(":")[1].isdigit(), e
        return
    for d in sig.declarations:  # accepted: every type is an identifier, every name a KIF symbol
        assert all(part.replace("_", "a").isalnum() for part in (*d.arg_types, d.result)), d
        assert d.name and not any(c.isspace() or c in "(),:;'\"" or ord(c) < 32 for c in d.name), d


def test_a_fuzzed_file_through_the_cli_is_one_line_and_exit_2(dataset):
    path = dataset / "data" / "validate" / "alpha_next_validate.dat"
    path.write_bytes(path.read_bytes().replace(b"true_q(b)", b"true_q(b))\x00;", 1))
    res = _learn(dataset)
    assert res.exit_code == EXIT_INPUT and len(res.output.strip().splitlines()) == 1
    assert f"{path}:" in res.output
