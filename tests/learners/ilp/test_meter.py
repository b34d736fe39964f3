"""The work meter: a search bounded by units of work takes the same steps on any machine.

Why: with a wall-clock deadline, where a seed's search stops depends on how loaded the machine
is, and so does every choice after it; a sweep run twice stored different programs. Here a search
with a work meter of ``N`` units is run twice, once with a thread burning CPU beside it and a
different (large) wall-clock budget, and must test the same candidates and return the same
clauses, stopping once the units run out. :class:`learners.ilp.meter.Meter` itself is checked too.
"""

from __future__ import annotations

import math
import threading

import numpy as np
from ilp_tasks import make_task

from learners.base import Budget, budget_cut, make_learner
from learners.ilp.bias import bias_for
from learners.ilp.coverage import example_atoms, facts_for, targets_for
from learners.ilp.frame import _sequential_cover, frame_step
from learners.ilp.loop import reserve
from learners.ilp.meter import WORK_PER_SECOND, Meter, Work
from learners.ilp.search import Bottom, Search, SearchResult
from tasks.signature import parse_typ
from tasks.task import Task, parse_atom

CELLS = range(1, 7)
BOARD_TYP = """
true, next :: prop -> bool.
does :: agent -> action -> bool.
cell :: pos -> mark -> prop.
mark :: pos -> action.
succ :: pos -> pos -> bool.
p :: agent.
1, 2, 3, 4, 5, 6 :: pos.
x, o, b :: mark.
"""


def board_task() -> Task:
    """Six cells (x, o or blank); the player marks a cell. ``next_cell`` keeps most cells but,
    with some noise, so that no short clause is exact and the search runs long."""
    rng = np.random.default_rng(7)
    rows = []
    for _ in range(60):
        board = {c: str(rng.choice(["x", "o", "b"])) for c in CELLS}
        move = int(rng.choice(list(CELLS)))
        background = [f"true_cell({c}, {m})" for c, m in board.items()] + [f"does(p, mark({move}))"]
        after = {c: ("x" if c == move else m) for c, m in board.items()}
        positives = [f"next_cell({c}, {m})" for c, m in after.items() if rng.random() > 0.15 or c == move]
        rows.append((background, positives))
    atoms = [f"next_cell({c}, {m})" for c in CELLS for m in ("x", "o", "b")]
    statics = [f"succ({c}, {c + 1})" for c in CELLS if c + 1 in CELLS]
    task = make_task({"train": rows}, atoms, statics=statics, target="next")
    task.signature = parse_typ(BOARD_TYP)
    return task.for_predicate("next_cell")


def _search(task: Task, meter: Meter, seed_index: int = 0) -> SearchResult:
    """One seed's beam search over the whole training split."""
    train = task.split("train")
    facts = facts_for(task, train)
    targets = targets_for(task, train, facts.constants)
    seed = int(targets.positives[seed_index])
    ex, atom = divmod(seed, targets.n_atoms)
    bottom = Bottom.of(example_atoms(task, train, ex), [parse_atom(a) for a in task.static_atoms()])
    bias = bias_for(task)
    return Search(bias, facts, targets, bottom, meter).run(
        bias.head_pred, parse_atom(task.target_atoms.names[atom])[1]
    )


def _texts(result: SearchResult) -> tuple[list[str], list[str]]:
    return [c.text() for c in result.consistent], [c.text() for c in result.partial]


class _Burner:
    """A thread that keeps a core busy while the search runs (a loaded machine)."""

    def __enter__(self) -> _Burner:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._burn, daemon=True)
        self.thread.start()
        return self

    def _burn(self) -> None:
        x = 0
        while not self.stop.is_set():
            x = (x * 31 + 7) % 1_000_003

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def test_a_work_meter_cuts_the_search_at_the_same_step_on_a_loaded_machine():
    task = board_task()
    unbounded = _search(task, Meter(Budget()))
    assert not unbounded.timed_out and unbounded.tested > 50, unbounded
    units = unbounded.tested // 2
    quiet = _search(task, Meter.of(Budget(3600), units))
    with _Burner():
        loaded = _search(task, Meter.of(Budget(7200), units))
    assert quiet.timed_out and loaded.timed_out
    assert quiet.tested == loaded.tested
    assert quiet.tested == units  # the meter is checked before each candidate: none past it
    assert _texts(quiet) == _texts(loaded)


def test_a_work_meter_large_enough_changes_nothing():
    """Spending units is all a work meter does: with room to spare, the same search as unbounded."""
    task = board_task()
    unbounded = _search(task, Meter(Budget()))
    metered = _search(task, Meter.of(Budget(3600), 10 * unbounded.tested))
    assert not metered.timed_out
    assert (metered.tested, _texts(metered)) == (unbounded.tested, _texts(unbounded))


def test_a_fit_says_which_budget_cut_it():
    """A work-bound fit stopped by its bound says ``work`` (the same on any machine); one stopped
    by the wall clock says ``clock`` (one that ended on its own: tests/orchestrator/scheduling/test_budget.py)."""
    task = board_task().learning_view()
    cut = make_learner("ilasp_w20").fit(task, Budget(3600))
    assert cut.budget_cut and budget_cut(cut) == "work", cut.note
    timed = make_learner("ilasp").fit(task, Budget(0.05))
    assert timed.budget_cut and budget_cut(timed) == "clock", timed.note


def test_a_meter_in_work_units_spends_what_the_search_tests():
    task = board_task()
    meter = Meter.of(Budget(3600), 10**9)
    result = _search(task, meter)
    assert meter.work is not None and meter.work.done == result.tested


def test_frame_step_spends_one_unit_per_literal_and_cover_step_and_is_repeatable():
    task = board_task()
    train = task.split("train")
    facts = facts_for(task, train)
    targets = targets_for(task, train, facts.constants)
    bias = bias_for(task)
    runs = []
    for seconds in (3600, 7200):
        meter = Meter.of(Budget(seconds), 40)
        single, several = frame_step(bias, facts, targets, 10**6, meter)
        assert meter.work is not None
        runs.append(([c.text() for c in single], [c.text() for c in several], meter.work.done))
    assert runs[0] == runs[1]
    assert runs[0][0], runs  # the base clause at least
    # 40 literals, then the cover's grace of a quarter of them (10 steps, and one clause's worth)
    assert 40 <= runs[0][2] <= 40 + 10 + 2 * bias.settings.max_body


def test_sequential_cover_stops_starting_clauses_once_the_meter_is_spent():
    from learners.ilp.frame import _Rows

    is_pos = np.array([True, True, False, False])
    # literal 0 removes row 2, literal 1 row 3, literal 2 row 1
    removed = [np.array(r, dtype=bool) for r in ([0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0])]
    rows = _Rows.of(removed)
    assert _sequential_cover(rows, is_pos, 3) == [[0, 1]]
    meter = Meter.of(Budget(), 0)
    assert _sequential_cover(rows, is_pos, 3, meter) == []
    meter = Meter.of(Budget(), 1)
    assert _sequential_cover(rows, is_pos, 3, meter) == [[0, 1]]  # a clause started is finished
    assert meter.work is not None and meter.work.done == 2


def test_meter_part_never_ends_later_than_its_parent():
    work = Meter.of(Budget(), 100)
    assert work.part(500).left() == 100
    assert work.part(30).left() == 30
    seconds = Meter(Budget(10))
    assert seconds.part(100).end == seconds.end
    assert seconds.part(1).end <= seconds.end


def test_meter_spend_counts_only_work_units():
    seconds = Meter(Budget(100))
    seconds.spend(1000)
    assert seconds.work is None and not seconds.counts_work and not seconds.expired()
    work = Meter.of(Budget(), 3)
    assert work.counts_work
    work.spend(2)
    assert work.left() == 1 and not work.expired()
    part = work.part(10)
    part.spend()
    assert work.expired() and part.expired()  # one counter for the whole fit


def test_meter_share_of_unbounded_is_unbounded_and_grace_extends():
    assert Meter(Budget()).share(0.1).left() == math.inf
    assert Meter(Budget(), Work()).share(0.25).left() == math.inf
    work = Meter.of(Budget(), 8)
    assert work.share(0.25).left() == 2
    work.spend(8)
    assert work.expired()
    grace = work.grace(2)
    assert grace.left() == 2 and not grace.expired()
    assert work.grace(0).expired()


def test_the_loop_keeps_a_tenth_for_the_final_stages_at_least_a_second_at_most_a_quarter():
    """The loop's reserve (`loop.reserve`): 10% of a long allowance, where the fixed quarter kept
    before left every budget-cut job a quarter of its budget unused; a floor of about a second
    of work, and never more than a quarter, so short allowances keep what they had."""
    long = Meter.of(Budget(), 100 * WORK_PER_SECOND)
    assert reserve(long) == 10 * WORK_PER_SECOND
    assert long.less(reserve(long)).left() == 90 * WORK_PER_SECOND
    assert reserve(Meter.of(Budget(), 5 * WORK_PER_SECOND)) == WORK_PER_SECOND
    assert reserve(Meter.of(Budget(), 2 * WORK_PER_SECOND)) == WORK_PER_SECOND / 2
    assert reserve(Meter(Budget(), Work())) == 0.0  # unbounded: the loop has it all
    assert Meter(Budget(), Work()).less(5).left() == math.inf
