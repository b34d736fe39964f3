"""Placeholder: the ilasp learner (ILP issue)."""
