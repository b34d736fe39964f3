"""The learner contract: ``Learner.fit(task, budget, report) -> Model`` and ``Model.predict(task, split)``.

Why this shape:

* ``fit`` sees a :class:`tasks.task.Task` (usually restricted to one flattened predicate by the
  orchestrator) built by :meth:`tasks.task.Task.learning_view`: train and validate (for model
  selection) only. The test split is not in that object, so no learner can read it; callers of
  ``fit`` (the worker, ``orch learn``, the benches) must pass the view, never the whole task.
* ``predict`` maps every example of a split to a boolean matrix over the task's target atoms
  (n_examples x |target_atoms|). Metrics only look at the split's ``candidates`` columns.
* Anytime learning: ``report(model)`` hands each improving model to whoever runs the learner. The
  orchestrator ships it out of the worker immediately, so a job stopped at its budget still has
  the best model found so far (a timeout is a result, never a silent zero).
* ``Model.describe()`` says what the model is; symbolic models also give ``rules()`` as
  clingo-readable text, which is stored with the results.

Learners register themselves by name with :func:`register`. A name may carry parameters, matched by
a regular expression (``knn(?P<k>\\d+)`` accepts ``knn1``, ``knn5``, ``knn13``); the registry converts
each to the type the factory annotates (``k: int``) once, so factories never parse strings.

A learner may say that it does not apply to a task (``applies(task) -> (bool, reason)``, see
:func:`learner_applies`): the orchestrator then records the job as ``not_applicable`` with the reason,
instead of running it into an error.

Families outside this repository register through the Python entry-point group ``orch.learners``
(:data:`ENTRY_POINT_GROUP`): each entry point names a module that calls :func:`register` when
imported. The whole contract, with a template, is in docs/adding-a-learner.md.
"""

from __future__ import annotations

import inspect
import re
import time
import typing
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
import scipy.sparse as sp

from tasks.task import Split, Task

Predictions: TypeAlias = np.ndarray | sp.spmatrix
"""Boolean (n_examples x |target_atoms|) predictions, dense or sparse."""


@dataclass(frozen=True)
class Budget:
    """A wall-clock budget. ``seconds=None`` means unlimited.

    The orchestrator enforces budgets from outside (it kills the worker); the budget object lets a
    cooperative learner stop early and return its best model itself.
    """

    seconds: float | None = None
    started: float = field(default_factory=time.monotonic)

    @property
    def deadline(self) -> float:
        return float("inf") if self.seconds is None else self.started + self.seconds

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0


@runtime_checkable
class Model(Protocol):
    """A learned hypothesis that predicts target atoms from backgrounds."""

    def predict(self, task: Task, split: Split) -> Predictions:
        """Boolean predictions for every example of ``split`` over ``task.target_atoms``."""
        ...

    def describe(self) -> str:
        """What this model is, in a line or a paragraph (k and neighbours, a constant, ...)."""
        ...

    def rules(self) -> str | None:
        """clingo-readable rules for symbolic models; None for the others."""
        ...


Report = Callable[[Model], None]


def ignore_report(model: Model) -> None:
    """The default ``report``: nobody is listening."""


@runtime_checkable
class Learner(Protocol):
    """Learns a :class:`Model` for a task within a budget, reporting improving models as it goes.

    Optionally a learner also has ``applies(task) -> (bool, reason)`` (see :func:`learner_applies`).
    """

    name: str

    def fit(self, task: Task, budget: Budget, report: Report = ignore_report) -> Model:
        """Learn from ``task`` (a :meth:`~tasks.task.Task.learning_view`: no test split) within ``budget``.

        Optionally ``fit`` also takes ``seed: int | None`` (the job's seed, :func:`fit_with_seed`),
        and the learner has ``prepare()``: a warm-up (imports) run before the budget starts.
        """
        ...


def prepared_learner(name: str) -> Learner:
    """``make_learner(name)`` with the learner's optional warm-up (``prepare()``: slow imports such
    as torch) done: what a job's process builds before its budget starts."""
    learner = make_learner(name)
    warm_up = getattr(learner, "prepare", None)
    if warm_up is not None:
        warm_up()
    return learner


CUT_BY_CLOCK = "clock"
CUT_BY_WORK = "work"


def budget_cut(model: Model) -> str:
    """What cut the search of ``model``'s learner: ``""`` (nothing: it ended on its own),
    :data:`CUT_BY_WORK` (a deterministic work bound the learner counts, ``ilasp_w<N>``) or
    :data:`CUT_BY_CLOCK` (the wall-clock budget).

    A learner says so with an optional ``budget_cut`` attribute (true when the budget stopped it)
    and ``cut_by`` (which budget; the clock if it does not say). A learner that stops itself at its
    budget and returns its best model so far has been stopped by the budget all the same, so its
    job is stored as ``timeout``, not ``ok``; which budget is stored with it, because a work bound's
    cut is the same on every machine and a clock's is not.
    """
    if not getattr(model, "budget_cut", False):
        return ""
    return CUT_BY_WORK if getattr(model, "cut_by", "") == CUT_BY_WORK else CUT_BY_CLOCK


def fit_with_seed(learner: Learner, task: Task, budget: Budget, report: Report, seed: int | None) -> Model:
    """``learner.fit``, handing the job's seed to a learner whose ``fit`` takes one (``seed=``).

    The seed is explicit for learners that sample (the GNNs' initialisation and batch order): a
    learner that draws from its own generator seeded here reruns identically, whatever else used
    the process's global generators. Learners without the parameter get the job's seed through the
    global generators (numpy, random, torch), which the worker seeds per job anyway.
    """
    if seed is not None and "seed" in inspect.signature(learner.fit).parameters:
        return learner.fit(task, budget, report=report, seed=seed)  # type: ignore[call-arg]
    return learner.fit(task, budget, report=report)


def learner_applies(learner: Learner, task: Task) -> tuple[bool, str]:
    """Whether ``learner`` can learn ``task`` at all, and if not why (one line, for the skip record).

    Learners without an ``applies`` method apply to every task. A learner that cannot apply (a
    GraphLog-only GNN on an IGGP game) says so here, so its job is recorded as ``not_applicable`` with the
    reason rather than failing inside ``fit`` as an error.
    """
    check = getattr(learner, "applies", None)
    if check is None:
        return True, ""
    ok, reason = check(task)
    return bool(ok), "" if ok else str(reason or f"{learner.name} does not apply to {task.name}")


@dataclass(frozen=True)
class Requirements:
    """What a learner family needs beyond orch itself, declared as data in its registration.

    Why: a sweep that asks for a learner whose packages are missing should stop before Ray starts,
    with one line saying what to install, instead of failing job by job with ``ModuleNotFoundError``;
    and a learner that learns one kind of task source only (GraphLog worlds) should be refused on
    another kind before anything runs. The orchestrator reads these fields; the learner is never
    imported or built to check them.

    * ``modules``: top-level modules that must be importable (checked with
      :func:`importlib.util.find_spec`, which imports nothing);
    * ``extra``: the ``orch`` extra that installs them (``pip install 'orch[gnn]'``);
    * ``gpu``: ``"never"``, ``"preferred"`` (uses one when its worker has one, else the CPU) or
      ``"required"``;
    * ``sources``: the task source kinds it learns (``"iggp"``: a directory in the IGGP layout or the
      bundled games; ``"graphlog"``: ``graphlog:DIR``); empty means every kind.
    """

    modules: tuple[str, ...] = ()
    extra: str = ""
    gpu: str = "never"
    sources: tuple[str, ...] = ()

    def missing(self) -> list[str]:
        """The required modules that cannot be imported here (in declaration order)."""
        import importlib.util

        out = []
        for module in self.modules:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):  # a parent package that is missing or broken
                found = False
            if not found:
                out.append(module)
        return out

    def install_hint(self) -> str:
        """What to run to get the missing modules: ``pip install 'orch[gnn]'`` or the module names."""
        if self.extra:
            return f"pip install 'orch[{self.extra}]'"
        return "pip install " + " ".join(self.missing() or self.modules)

    def applies_to(self, kind: str) -> bool:
        """Whether the family learns tasks of the task source kind ``kind`` (``iggp``, ``graphlog``)."""
        return not self.sources or kind in self.sources


@dataclass(frozen=True)
class LearnerSpec:
    """A registered learner family: how its names look and what it needs to run."""

    pattern: str
    factory: Callable[..., Learner]
    description: str
    params: str = ""
    resources: dict[str, float] = field(default_factory=lambda: {"num_cpus": 1})
    example: str = ""
    testing: bool = False
    symbolic: bool = False
    types: dict[str, Callable[[str], Any]] = field(default_factory=dict)
    origin: str = ""
    requires: Requirements = field(default_factory=lambda: Requirements())
    oracle: bool = False

    def match(self, name: str) -> dict[str, str] | None:
        """The name's parameters as written (strings; None for an absent optional group)."""
        m = re.fullmatch(self.pattern, name)
        return None if m is None else m.groupdict()

    def typed(self, params: Mapping[str, str | None]) -> dict[str, Any]:
        """The parameters as the factory's keyword arguments, converted to its annotated types.

        An absent optional group is left out, so the factory's own default applies.
        """
        out = {}
        for key, text in params.items():
            if text is None:
                continue
            convert = self.types.get(key, str)
            try:
                out[key] = convert(text)
            except ValueError as e:
                raise UnknownLearner(f"learner parameter {key}={text!r}: {e}") from None
        return out


def _flag(text: str) -> bool:
    """A bool name parameter: the group matched (``aspal_soft``), so it is on."""
    return bool(text)


_CONVERTERS: dict[Any, Callable[[str], Any]] = {int: int, float: float, bool: _flag, str: str}


def _param_types(factory: Callable[..., Any], pattern: str) -> dict[str, Callable[[str], Any]]:
    """Converters for the pattern's named groups, from the factory's annotations (``k: int``).

    ``int | None`` and ``Optional[int]`` convert like ``int``; an unannotated parameter stays str.
    """
    target = factory.__init__ if inspect.isclass(factory) else factory
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # noqa: BLE001 (annotations that do not resolve: fall back to strings)
        hints = {}
    out = {}
    for group in re.compile(pattern).groupindex:
        hint = hints.get(group, str)
        args = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
        out[group] = _CONVERTERS.get(args[0], str)
    return out


_REGISTRY: dict[str, LearnerSpec] = {}


def register(
    pattern: str,
    *,
    description: str,
    params: str = "",
    resources: dict[str, float] | None = None,
    example: str = "",
    testing: bool = False,
    symbolic: bool = False,
    requires: Requirements | Sequence[str] = (),
    extra: str = "",
    oracle: bool = False,
) -> Callable[[Callable[..., Learner]], Callable[..., Learner]]:
    """Class/function decorator: make a learner family available by name.

    ``pattern`` is a full-match regular expression; its named groups become the factory's keyword
    arguments, converted to the types the factory annotates (``int``, ``float``, ``bool`` for a
    flag group, else ``str``); a group that did not match is left out. ``testing`` marks learners
    that exist to test the orchestrator (they stay usable, but listings leave them out).
    ``symbolic``: the family's models give rules (``Model.rules()``), stored as ``program``.
    ``requires``: what the family needs (:class:`Requirements`), or just the module names, with
    ``extra`` naming the ``orch`` extra that installs them (``requires=("torch",), extra="gnn"``).
    ``oracle``: the family reads the answer (the game's own rules) instead of learning it: an upper
    bound that checks the data, never counted as a learner solving a task.
    """
    needs = requires if isinstance(requires, Requirements) else Requirements(tuple(requires), extra)

    def deco(factory: Callable[..., Learner]) -> Callable[..., Learner]:
        _REGISTRY[pattern] = LearnerSpec(
            pattern, factory, description, params, resources or {"num_cpus": 1}, example or pattern,
            testing, symbolic, _param_types(factory, pattern), getattr(factory, "__module__", ""), needs,
            oracle,
        )  # fmt: skip
        return factory

    return deco


class UnknownLearner(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


ENTRY_POINT_GROUP = "orch.learners"
"""The one entry-point group every learner family registers through, orch's own (declared in
orch's pyproject.toml) and third parties' alike: each entry point names a module to import."""

OWN_DISTRIBUTION = "orch"
"""Entry points of this distribution are orch's own families: one that fails to import is a bug and
is raised; a third party's is skipped with a warning."""

_plugins: dict[str, str] | None = None  # entry point name -> module, once loaded


class RegistryError(RuntimeError):
    """The registry is inconsistent: two families claim one name, or orch's own are not installed."""


def load_entry_points() -> dict[str, str]:
    """Import every ``orch.learners`` entry point (again: for packages installed since), then check
    that no two families claim one name. A third-party plugin that fails to import is skipped with a
    warning naming it, never taking orch down with it."""
    global _plugins
    from importlib.metadata import entry_points

    loaded: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        own = ep.dist is not None and ep.dist.name == OWN_DISTRIBUTION
        try:
            ep.load()
        except Exception as e:
            if own:
                raise
            warnings.warn(
                f"learner plugin {ep.name!r} ({ep.value}) failed to load: {type(e).__name__}: {e}",
                stacklevel=2,
            )
            continue
        loaded[ep.name] = ep.value
    if not any(spec.origin.startswith("learners.") for spec in _REGISTRY.values()):
        raise RegistryError(
            "orch's own learners are not registered: install orch (`pip install -e .` in the repository) "
            f"so that its {ENTRY_POINT_GROUP!r} entry points exist"
        )
    check_overlaps(list(_REGISTRY.values()))
    _plugins = loaded
    return loaded


def check_overlaps(specs: list[LearnerSpec]) -> None:
    """Fail when two families' name patterns overlap, checked on each family's example name (and
    when a name is resolved, on the name itself: :func:`spec_for`). First-registered-wins would
    let a plugin silently shadow a built-in, or the reverse."""
    for spec in specs:
        others = [o for o in specs if o is not spec and o.match(spec.example) is not None]
        if others:
            raise RegistryError(_overlap_message(spec.example, [spec, *others]))


def _overlap_message(name: str, specs: list[LearnerSpec]) -> str:
    claims = "; ".join(f"{s.pattern!r} from {s.origin or '?'}" for s in specs)
    return (
        f"learner name {name!r} is claimed by {len(specs)} families ({claims}): make their patterns disjoint"
    )


def _load_plugins() -> None:
    """Register every learner family through the entry points, once."""
    if _plugins is None:
        load_entry_points()


def spec_for(name: str) -> tuple[LearnerSpec, dict[str, str]]:
    _load_plugins()
    matches = [(spec, params) for spec in _REGISTRY.values() if (params := spec.match(name)) is not None]
    if len(matches) > 1:
        raise RegistryError(_overlap_message(name, [spec for spec, _ in matches]))
    if matches:
        return matches[0]
    known = ", ".join(s.example for s in registered())
    raise UnknownLearner(f"unknown learner {name!r}; known learners: {known}")


def make_learner(name: str) -> Learner:
    """Instantiate a learner by registry name, e.g. ``make_learner("knn5")`` (the factory gets ``k=5``)."""
    spec, params = spec_for(name)
    learner = spec.factory(**spec.typed(params))
    learner.name = name
    return learner


def registered(include_testing: bool = False) -> list[LearnerSpec]:
    """Every registered learner family (test learners only when asked)."""
    _load_plugins()
    return [s for s in _REGISTRY.values() if include_testing or not s.testing]


def learner_params(name: str) -> dict[str, Any]:
    """The parameters encoded in a learner name, as written (for the results store's ``params``
    column and so for job ids, which must not change when a factory's types do)."""
    _, params = spec_for(name)
    return dict(params)
