"""The project's own GDL games (written by the team), the embedded default task source.

Placeholder until the tasks issue fills it: ``dataset()`` generates the bundled games' tasks once
into a cache directory in the published IGGP layout and returns a :class:`tasks.iggp.Dataset`.
"""
