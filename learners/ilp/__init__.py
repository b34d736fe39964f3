"""ILP learners on clingo and the one symbolic evaluation path for every rule-based model.

Modules: ``evaluate`` (rules + backgrounds -> predictions, ground once per model and task),
``reference`` (the game's own GDL rules as an upper bound), ``bias`` (the language bias from the
type signature), ``ilasp`` (ILASP*-style relevant examples + relevant hypothesis space) and
``aspal`` (the plain meta-level encoding).
"""

from learners.ilp import aspal, ilasp, reference  # noqa: F401  (they register themselves)
