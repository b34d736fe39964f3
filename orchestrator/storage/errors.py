"""What can go wrong with a results store, as exception types the CLI maps to one line and exit 2.

In a module of their own (the bottom of :mod:`orchestrator.storage`) so that every part of the
store (location, reading, writing, claims) raises the same types without importing each other.
"""

from __future__ import annotations


class StoreError(RuntimeError):
    """Anything wrong with the store itself: unreadable or foreign files, a full or read-only disk."""


class StoreMissing(StoreError):
    """A command that reads a store was pointed at a location holding none (exit 2, not "no results")."""


class StoreUnreadable(StoreMissing):
    """The location exists but cannot be listed (permissions): "cannot read", never "no store"."""


class StoreFenced(StoreError):
    """A write whose file another driver fenced out (:meth:`ResultStore.fence_out`): nothing was stored."""
