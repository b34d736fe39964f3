"""Constrain: clingo chooses the optimal set of rules from the tested candidates.

Coverage is already known (each rule's covered positives and negatives, as keys), so clingo solves
only a weighted cover problem; it never grounds a rule body.

* :class:`RelevantCover` is the ILASP* step, multi-shot: each iteration adds the new rules and
  the new relevant example as a fresh program part; ``cov(E, K)`` accumulates step by step and
  the constraint "every relevant example is covered" of step ``K`` is switched on by the external
  ``act(K)`` (and the previous step's is released). Nothing is re-grounded. Only rules that cover
  no negative are given, so the optimum covers every coverable relevant example (priority 2) with
  the fewest literals (priority 1): ILASP's shortest hypothesis; among equally short ones, the
  fewest singleton variables (priority 0).
* :func:`best_partial_cover` is the fallback when no consistent hypothesis covers every training
  positive: over *all* training examples, minimise ``N*fn + P*fp`` (which is ``1 - balanced
  accuracy`` up to scale) then length, with rules that may cover negatives. Examples covered by
  the same set of rules are merged into one weighted atom, which keeps the program small.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import clingo
import numpy as np

from learners.ilp.meter import Meter
from tasks import arrays

MIN_CONFLICTS = 200
"""Counting work, a clingo call may use at least this many conflicts (a cover problem needs a few
to find its first model)."""


@dataclass
class ScoredRule:
    """A candidate rule with its coverage over all training examples (sorted keys)."""

    text: str
    length: int
    pos: np.ndarray
    neg: np.ndarray
    specificity: int = 0  # tie-break only (priority 0): see Clause.specificity


def _choice(r: int, rule: ScoredRule) -> str:
    """Rule ``r`` may be selected at the cost of its literals (priority 1) and, among equally short
    hypotheses, of its constants and singleton variables (priority 0: `Clause.specificity`)."""
    text = f"{{sel({r})}}. :~ sel({r}). [{rule.length}@1,{r}]"
    if rule.specificity:
        text += f" :~ sel({r}). [{rule.specificity}@0,s{r}]"
    return text


def _solve(ctl: clingo.Control, seconds: float, meter: Meter | None = None) -> tuple[list[int] | None, bool]:
    """The last (best) model's selected rule ids, and whether optimality was proven.

    With a ``meter`` that counts work, the solver also stops after the units left as conflicts
    (at least ``MIN_CONFLICTS``), and the conflicts it used are spent: where it stops is then the
    same on any machine (one solver thread, clasp's fixed default seed).
    """
    best: list[list[int]] = []
    counting = meter is not None and meter.counts_work
    if counting:
        assert meter is not None
        left = meter.left()
        solve = ctl.configuration.solve
        assert isinstance(solve, clingo.Configuration)
        solve.solve_limit = str(int(max(left, MIN_CONFLICTS))) if math.isfinite(left) else "umax"

    def on_model(model: clingo.Model) -> None:
        best[:] = [[s.arguments[0].number for s in model.symbols(shown=True)]]

    with ctl.solve(on_model=on_model, async_=True) as handle:
        if math.isfinite(seconds):
            finished = handle.wait(max(seconds, 0.05))
        else:
            handle.wait()
            finished = True
        if not finished:
            handle.cancel()
        result = handle.get()
    if counting:
        assert meter is not None
        meter.spend(int(ctl.statistics["solving"]["solvers"]["conflicts"]))
    return (best[0] if best else None), bool(finished and result.exhausted)


class RelevantCover:
    """The shortest set of consistent rules covering the relevant examples, grown incrementally."""

    def __init__(self) -> None:
        self.ctl = clingo.Control(["--opt-mode=opt", "--warn=none"])
        self.ctl.add("base", [], "#show sel/1.")
        self.ctl.ground([("base", [])])
        self.rules: list[ScoredRule] = []
        self.examples: list[int] = []
        self.step = 0

    def add(self, rules: Sequence[ScoredRule], examples: Sequence[int]) -> None:
        k = self.step = self.step + 1
        old_rules, old_examples = len(self.rules), len(self.examples)
        self.rules += list(rules)
        self.examples += list(examples)
        lines = [f"#external act({k})."]
        for r in range(old_rules, len(self.rules)):
            lines.append(_choice(r, self.rules[r]))
        ex = np.asarray(self.examples, dtype=np.int64)
        for r, rule in enumerate(self.rules):
            first = 0 if r >= old_rules else old_examples  # old rules: only the new examples
            hit = np.flatnonzero(arrays.isin(ex[first:], rule.pos)) + first
            lines += [f"cov({e},{k}) :- sel({r})." for e in hit]
        for e in range(len(self.examples)):
            if e < old_examples and k > 1:
                lines.append(f"cov({e},{k}) :- cov({e},{k - 1}).")
            lines.append(f":~ act({k}), not cov({e},{k}). [1@2,e{e}]")
        part = f"step{k}"
        self.ctl.add(part, [], "\n".join(lines))
        self.ctl.ground([(part, [])])
        if k > 1:
            self.ctl.release_external(clingo.Function("act", [clingo.Number(k - 1)]))
        self.ctl.assign_external(clingo.Function("act", [clingo.Number(k)]), True)

    def solve(self, seconds: float, meter: Meter | None = None) -> tuple[list[int], bool]:
        chosen, optimal = _solve(self.ctl, seconds, meter)
        return sorted(chosen or []), optimal


def greedy_cover(rules: Sequence[ScoredRule], positives: np.ndarray) -> list[int]:
    """Consistent rules picked greedily (most newly covered positives per literal) until none adds any.

    The cheap anytime hypothesis between the combine step's optimisations (a set cover within a
    factor ln(P) of the optimum; the optimisation at the end may improve it).
    """
    covered = np.zeros(len(positives), dtype=bool)
    idx = [np.searchsorted(positives, r.pos) for r in rules]
    chosen: list[int] = []
    while True:
        gains = [
            (int((~covered[i]).sum()) / rules[r].length, r) for r, i in enumerate(idx) if r not in chosen
        ]
        gain, best = max(gains, default=(0, -1))
        if gain <= 0:
            return sorted(chosen)
        chosen.append(best)
        covered[idx[best]] = True


def _classes(rules: Sequence[ScoredRule], attr: str) -> list[tuple[int, list[int]]]:
    """(count, covering rules) for each group of keys covered by exactly the same rules."""
    keys = [getattr(r, attr) for r in rules]
    if not any(len(k) for k in keys):
        return []
    allk = np.concatenate([k for k in keys])
    owner = np.concatenate([np.full(len(k), r, dtype=np.int64) for r, k in enumerate(keys)])
    order = np.lexsort((owner, allk))
    allk, owner = allk[order], owner[order]
    starts = np.flatnonzero(np.r_[True, allk[1:] != allk[:-1]])
    groups: dict[tuple[int, ...], int] = {}
    for s, e in zip(starts, np.r_[starts[1:], len(allk)], strict=True):
        sig = tuple(owner[s:e].tolist())
        groups[sig] = groups.get(sig, 0) + 1
    return [(n, list(sig)) for sig, n in groups.items()]


MAX_LINES = 30_000
"""Most ``covered :- sel`` lines in one cover program: grounding is not interruptible, so the
program is kept small enough to ground in about a second (the best-scoring rules are kept)."""


def best_partial_cover(
    rules: Sequence[ScoredRule], n_pos: int, n_neg: int, seconds: float, max_lines: int = MAX_LINES,
    meter: Meter | None = None, greedy: list[int] | None = None,
) -> list[int]:  # fmt: skip
    """Rules maximising training balanced accuracy (then fewest literals); see the module docstring.

    ``seconds`` bound the whole call, building and grounding the program included (a large pool
    grounds for longer than its solve: counted apart, the fallback's cover overran the reserve the
    loop left for it and the worker's hard stop cut the job). Anytime: the optimisation's best
    model, or the greedy cover (``greedy``, when the caller has it) where that is better - a
    solver stopped before its first model (a loaded machine, a large program) used to return no
    rule at all, and the learner then reported the empty program over a partial cover of 0.99.
    """
    until = time.monotonic() + seconds
    if greedy is None:
        greedy = greedy_partial_cover(rules, n_pos, n_neg)
    solved = _optimal_partial_cover(rules, n_pos, n_neg, until, max_lines, meter)
    return max((solved, greedy), key=lambda ids: _partial_score(rules, ids, n_pos, n_neg))


def greedy_partial_cover(
    rules: Sequence[ScoredRule], n_pos: int, n_neg: int, max_rules: int = 64
) -> list[int]:
    """Rules added one at a time by the best balanced-accuracy gain (new positives over P less new
    negatives over N, per literal) while that gain is positive: the cheap answer the optimisation
    must beat."""
    if not rules:
        return []
    pos_ids, neg_ids = _compact([r.pos for r in rules]), _compact([r.neg for r in rules])
    pos_hit = np.zeros(max((int(i.max()) + 1 for i in pos_ids if len(i)), default=0), dtype=bool)
    neg_hit = np.zeros(max((int(i.max()) + 1 for i in neg_ids if len(i)), default=0), dtype=bool)
    p, n = max(n_pos, 1), max(n_neg, 1)
    chosen: list[int] = []
    while len(chosen) < max_rules:
        gains = [
            ((int((~pos_hit[pi]).sum()) / p - int((~neg_hit[ni]).sum()) / n) / rules[r].length, r)
            for r, (pi, ni) in enumerate(zip(pos_ids, neg_ids, strict=True))
            if r not in chosen
        ]
        gain, best = max(gains, default=(0.0, -1))
        if gain <= 0:
            break
        chosen.append(best)
        pos_hit[pos_ids[best]] = True
        neg_hit[neg_ids[best]] = True
    return sorted(chosen)


def _compact(keys: list[np.ndarray]) -> list[np.ndarray]:
    """Each key array as indices into the sorted union of all of them.

    One stable argsort of the concatenation gives every key's rank among the distinct keys; a
    search of each array in the union costs more than the sort itself (measured: 0.48 s of 0.75 s
    for 15 rules of 5M keys, 0.40 s in all this way). Ranks are int32: a union never has 2^31 keys.
    """
    if not any(len(k) for k in keys):
        return [np.zeros(0, dtype=np.int64) for _ in keys]
    flat = np.concatenate(keys)
    order = np.argsort(flat, kind="stable")  # timsort: merges the arrays' sorted runs
    ordered = flat[order]
    del flat
    new = np.empty(len(ordered), dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    del ordered
    ranks = np.empty(len(order), dtype=np.int32)
    ranks[order] = np.cumsum(new, dtype=np.int32) - 1
    return np.split(ranks, np.cumsum([len(k) for k in keys])[:-1])


def _partial_score(rules: Sequence[ScoredRule], ids: list[int], n_pos: int, n_neg: int) -> tuple[float, int]:
    """Training balanced accuracy of the rules ``ids``, then fewer literals."""
    tp = len(arrays.union([rules[i].pos for i in ids]))
    fp = len(arrays.union([rules[i].neg for i in ids]))
    tpr = tp / n_pos if n_pos else 1.0
    tnr = 1 - fp / n_neg if n_neg else 1.0
    return (tpr + tnr) / 2, -sum(rules[i].length for i in ids)


def _optimal_partial_cover(
    rules: Sequence[ScoredRule], n_pos: int, n_neg: int, until: float, max_lines: int, meter: Meter | None
) -> list[int]:
    """The clingo optimisation of :func:`best_partial_cover` (its best model when the monotonic
    clock reaches ``until``)."""
    if not rules:
        return []
    size = sum(len(r.pos) + len(r.neg) for r in rules)
    if size > max_lines:  # keep the best rules (BA gain) whose coverage fits the line budget
        p, n = max(n_pos, 1), max(n_neg, 1)
        order = sorted(range(len(rules)), key=lambda i: len(rules[i].neg) / n - len(rules[i].pos) / p)
        kept: list[int] = []
        total = 0
        for i in order:
            c = len(rules[i].pos) + len(rules[i].neg)
            if total + c > max_lines and kept:
                continue
            kept.append(i)
            total += c
        kept.sort()
        limit = max_lines if len(kept) < len(rules) else 1 << 62  # one huge rule: nothing to drop
        sub = _optimal_partial_cover([rules[i] for i in kept], n_pos, n_neg, until, limit, meter)
        return [kept[i] for i in sub]
    pos_classes, neg_classes = _classes(rules, "pos"), _classes(rules, "neg")
    biggest = max([n for n, _ in pos_classes + neg_classes] + [1])
    # weights proportional to N (a missed positive) and P (a covered negative), scaled so that
    # every weak-constraint weight stays well inside clingo's 32-bit terms
    scale = max(1, (biggest * max(n_pos, n_neg)) // 10**9 + 1)
    w_pos, w_neg = max(1, n_neg // scale), max(1, n_pos // scale)
    lines = ["#show sel/1."]
    for r, rule in enumerate(rules):
        lines.append(_choice(r, rule))
    for c, (n, owners) in enumerate(pos_classes):
        lines += [f"p({c}) :- sel({r})." for r in owners]
        lines.append(f":~ not p({c}). [{n * w_pos}@2,p{c}]")
    for c, (n, owners) in enumerate(neg_classes):
        lines += [f"n({c}) :- sel({r})." for r in owners]
        lines.append(f":~ n({c}). [{n * w_neg}@2,n{c}]")
    ctl = clingo.Control(["--opt-mode=opt", "--warn=none"])
    ctl.add("base", [], "\n".join(lines))
    ctl.ground([("base", [])])
    chosen, _ = _solve(ctl, until - time.monotonic(), meter)
    return sorted(chosen or [])
