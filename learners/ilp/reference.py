"""Placeholder: the reference learner (ILP issue)."""
