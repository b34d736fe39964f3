"""Placeholder: the aspal learner (ILP issue)."""
