"""ILP learners on clingo and the one symbolic evaluation path for every rule-based model.

Modules, one stage each (Popper-style):

* ``program``: spelling between flattened atoms and clingo terms; rule checks.
* ``evaluate``: rules + backgrounds -> predictions (``RuleModel``), ground once per model and task.
* ``bias``: the language bias, generated only from the task's type signature.
* ``relations``, ``coverage``: numpy joins that test a candidate rule on every training example.
* ``search``: candidate rules from the typed bottom clauses of relevant examples (generate).
* ``frame``: frame-style candidates ``h(X..) :- b(X..), not ...``, literals chosen as a set.
* ``solve``: the relevant-space cover on clingo's multi-shot API (constrain and choose).
* ``ilasp``: the ILASP* loop (relevant examples, relevant hypothesis space) and the combine step,
  anytime (docs/ilp.md: the hypothesis language and its switches).
* ``aspal``: the plain meta-level encoding, the whole hypothesis space in one program.
* ``reference``: the game's own GDL rules, bridged to the flattened language (an upper bound).
"""

from learners.ilp import aspal, ilasp, reference  # noqa: F401  (they register themselves)
