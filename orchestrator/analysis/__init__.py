"""Read-only analyses of the store: report tables, task selection, comparisons, predictive, compose, HTML."""
