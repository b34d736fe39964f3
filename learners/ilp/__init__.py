"""ILP learners on clingo (ilasp, aspal, reference) and the symbolic evaluator."""
