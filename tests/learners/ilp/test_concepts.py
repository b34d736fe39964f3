"""The concept library's atoms, computed vectorised for learning, are the atoms clingo derives
from the definitions a learned program carries: one meaning for training and prediction."""

from __future__ import annotations

import clingo
from hypothesis import given, settings
from hypothesis import strategies as st

from learners.ilp import concepts
from learners.ilp.coverage import facts_for, targets_for
from tasks.iggp import DatFile, task_from_dats
from tasks.signature import parse_typ

BOARDS_TYP = """
true :: prop -> bool.
terminal :: bool.
cell :: pos -> pos -> pos -> mark -> prop.
1, 2, 3, 4, 5 :: pos.
x, o :: mark.
"""

boards = st.lists(  # examples; each a set of (board, x, y, mark) cells, a cell holding one mark
    st.dictionaries(
        st.tuples(st.integers(1, 2), st.integers(1, 5), st.integers(1, 4)), st.sampled_from("xo"), max_size=24
    ),
    min_size=2,
    max_size=8,
)


def _derived(background: list[str], library: list[concepts.Concept], prefix: str) -> set[str]:
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], "".join(f"{a}.\n" for a in background) + "".join(c.definition for c in library))
    ctl.ground([("base", [])])
    shown: set[str] = set()
    with ctl.solve(yield_=True) as handle:
        for model in handle:
            shown = {str(s) for s in model.symbols(atoms=True) if s.name.startswith(prefix)}
    return shown


@settings(max_examples=25, deadline=None)
@given(boards)
def test_line_atoms_are_what_clingo_derives_from_the_definition(examples):
    """Lines over (x, y) with the board argument equal along them, and over the other integer
    pairs; rectangular 5x4 boards with gaps, so edges and both diagonals are exercised."""
    rows = []
    for cells in examples:
        background = [f"true_cell({b}, {x}, {y}, {m})" for (b, x, y), m in sorted(cells.items())]
        rows.append((background, ["terminal"] if len(cells) % 2 else []))
    dats = {"train": DatFile(["terminal"], [], rows)}
    task = task_from_dats("boards", "terminal", dats, signature=parse_typ(BOARDS_TYP, "boards.typ"))
    extended, library = concepts.extend(task)
    lines = [c for c in library if c.name.startswith("line_")]
    split = extended.split("train")
    names = extended.background_atoms.names
    kept = {n.replace(" ", "") for n in names if n.startswith("line_")}  # constant columns are dropped
    for i, (background, _) in enumerate(rows):
        mine = {names[j].replace(" ", "") for j in split.background_of(i) if names[j].startswith("line_")}
        assert mine == _derived(background, lines, "line_") & kept, background


def test_no_line_over_a_counter_nor_of_two_nor_with_lines_off():
    """A counter that spans more than a board has no line (``true_step(1, 1) .. (3, 3)`` is one,
    by the letter); two in a row is no line (``MIN_LINE``); ``lines=False`` adds none."""

    def lines(rows, typ, **kw):
        dats = {"train": DatFile(["terminal"], [], rows)}
        task = task_from_dats("g", "terminal", dats, signature=parse_typ(typ, "g.typ"))
        return [c.name for c in concepts.extend(task, **kw)[1] if c.name.startswith("line_")]

    steps = "true :: prop -> bool.\nterminal :: bool.\nstep :: n -> n -> prop.\n"
    diagonal = [f"true_step({k}, {k})" for k in (1, 2, 3)]
    assert lines([(diagonal, ["terminal"]), (["true_step(1, 2)"], [])], steps) == ["line_true_step_1_2"]
    assert lines([(diagonal, ["terminal"]), (["true_step(1, 100)"], [])], steps) == []
    row = [f"true_cell(1, 1, {y}, x)" for y in (1, 2, 3)]
    board = [(row, ["terminal"]), (row[:2], [])]
    assert "line_true_cell_2_3" in lines(board, BOARDS_TYP)
    assert lines([(row[:2], ["terminal"]), (row[:1], [])], BOARDS_TYP) == []
    assert lines(board, BOARDS_TYP, lines=False) == []


def test_a_task_and_its_extension_each_read_their_own_target_arguments():
    """The extension shares the task's target vocabulary but interns constants anew (its concept
    atoms bring new ones, so ``100`` gets another id): each must read the targets with its own
    constants. A cache keyed by the vocabulary alone handed the extension the plain task's
    reading, and every ``goal`` search over the library ran on scrambled target arguments."""
    typ = BOARDS_TYP + "goal :: mark -> score -> bool.\n0, 100 :: score.\n"
    row = [f"true_cell(1, 1, {y}, x)" for y in (1, 2, 3)]
    targets = ["goal(x, 0)", "goal(x, 100)"]
    rows = [(row, ["goal(x, 100)"]), (row[:2], ["goal(x, 0)"])]
    task = task_from_dats(
        "g", "goal", {"train": DatFile(targets, [], rows)}, signature=parse_typ(typ, "g.typ")
    )
    for t in (task, concepts.extend(task)[0]):  # the plain task first: its reading is cached
        train = t.split("train")
        table = targets_for(t, train, facts_for(t, train).constants).table
        constants = facts_for(t, train).constants.names
        read = [
            (constants[table.cols[("a", 0)][i]], constants[table.cols[("a", 1)][i]]) for i in range(table.n)
        ]
        assert read == [("x", "0"), ("x", "100")]


GRAPHS_TYP = """
true :: prop -> bool.
terminal :: bool.
edge :: node -> node -> prop.
link :: node -> node -> bool.
{nodes} :: node.
"""

graphs = st.lists(  # examples; each a set of directed edges over 6 nodes (cycles and loops included)
    st.sets(st.tuples(st.integers(1, 6), st.integers(1, 6)), max_size=12), min_size=2, max_size=6
)


@settings(max_examples=25, deadline=None)
@given(graphs, st.sets(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=10))
def test_closure_atoms_are_what_clingo_derives_from_the_definition(examples, links):
    """Reachability over a fluent (per example) and over a static relation (once), as clingo
    derives it from the ``_plus`` definitions a learned program carries."""
    statics = [f"link({a}, {b})" for a, b in sorted(links)]
    rows = [([f"true_edge({a}, {b})" for a, b in sorted(edges)], ["terminal"] if len(edges) % 2 else [])
            for edges in examples]  # fmt: skip
    typ = GRAPHS_TYP.format(nodes=", ".join(map(str, range(1, 7))))
    dats = {"train": DatFile(["terminal"], statics, rows)}
    task = task_from_dats("graphs", "terminal", dats, signature=parse_typ(typ, "graphs.typ"))
    extended, library = concepts.extend(task)
    names = extended.background_atoms.names
    static_plus = {
        names[int(j)].replace(" ", "") for j in extended.statics if names[int(j)].startswith("link_plus")
    }
    assert static_plus == _derived(statics, library, "link_plus")
    split = extended.split("train")
    for i, (background, _) in enumerate(rows):
        mine = {
            names[j].replace(" ", "") for j in split.background_of(i) if names[j].startswith("true_edge_plus")
        }
        assert mine == _derived(background, library, "true_edge_plus")


def test_a_long_static_order_is_closed_and_a_longer_one_left_out():
    """A 300-step successor relation gives its 44,850 ordered pairs (the set-based closure took
    minutes on a 200-step one); past ``MAX_CLOSURE_NODES`` constants no closure is offered."""
    for n, closed in ((300, True), (concepts.MAX_CLOSURE_NODES + 1, False)):
        typ = (
            "true :: prop -> bool.\nterminal :: bool.\nstep :: num -> prop.\nsucc :: num -> num -> bool.\n"
            + (", ".join(map(str, range(n + 1))) + " :: num.\n")
        )
        statics = [f"succ({i}, {i + 1})" for i in range(n)]
        rows = [([f"true_step({i})"], ["terminal"] if i % 2 else []) for i in range(4)]
        task = task_from_dats("order", "terminal", {"train": DatFile(["terminal"], statics, rows)},
                              signature=parse_typ(typ, "order.typ"))  # fmt: skip
        extended, library = concepts.extend(task)
        names = extended.background_atoms.names
        plus = [names[int(j)] for j in extended.statics if names[int(j)].startswith("succ_plus")]
        assert ("succ_plus" in {c.name for c in library}) == closed
        assert len(plus) == (n * (n + 1) // 2 if closed else 0)
