"""Where a store is: a local directory or any pyarrow filesystem URI, and listing what is there.

Why a part of its own: every other part of the store (reading, writing, claims) needs the same
three things — the filesystem, the root path under it, and a way to name a path in a message
without leaking credentials — and "is there a store at all, and can it be read" must be answered
the same way by every command (a typo in ``--store`` must not look like an empty store, and a
store that cannot be listed must say "cannot read", not "no store").
"""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from orchestrator.storage.credentials import scrub
from orchestrator.storage.errors import StoreError, StoreMissing, StoreUnreadable

RESULTS, MANIFESTS, ANALYSES, TMP = "results", "manifests", "analyses", "_tmp"


class StoreLocation:
    """The filesystem and root of one store, and the committed files under it."""

    def __init__(
        self,
        uri: str | Path,
        *,
        filesystem: pafs.FileSystem | None = None,
        must_exist: bool = False,
    ) -> None:
        """``uri``: a local directory or a pyarrow filesystem URI; with ``filesystem``, a path in it.

        ``must_exist``: raise :class:`StoreMissing` unless a store is there (commands that only read:
        a typo in ``--store`` must not look like an empty store).
        """
        uri = str(uri)
        if filesystem is not None:
            self.fs, root = filesystem, uri
        elif "://" in uri:
            try:
                self.fs, root = pafs.FileSystem.from_uri(uri)
            except (pa.ArrowException, ValueError, OSError) as e:
                raise StoreError(f"cannot open store {scrub(uri)}: {scrub(str(e))}") from e
        else:
            self.fs, root = pafs.LocalFileSystem(), str(Path(uri).expanduser().resolve())
        self.uri = scrub(uri)
        self.root = root.rstrip("/")
        self.local = isinstance(self.fs, pafs.LocalFileSystem)
        if must_exist and not self.exists():
            reason = self._unreadable_reason()
            if reason:
                raise StoreUnreadable(f"cannot read the store at {self.display(self.root)}: {reason}")
            raise StoreMissing(f"no results store at {self.display(self.root)} (check --store)")

    def exists(self) -> bool:
        """Whether a store is there: something (results, manifests, GraphLog rows, ...) is under its root."""
        try:
            return bool(self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True)))
        except OSError:
            return False

    def _unreadable_reason(self) -> str | None:
        """Why the root cannot be listed though something is there (e.g. permission denied), if so."""
        try:
            self.fs.get_file_info(pafs.FileSelector(self.root, allow_not_found=True))
        except FileNotFoundError:
            return None
        except OSError as e:
            return scrub(e.strerror or str(e)) or type(e).__name__
        return None

    def path(self, *parts: str) -> str:
        """The full path of ``parts`` under the root."""
        return "/".join([self.root, *parts])

    def display(self, path: str) -> str:
        """``path`` for a message: local paths as they are, others after the (scrubbed) URI."""
        return path if self.local else f"{self.uri} ({path})"

    def files(self, subdir: str = RESULTS) -> list[str]:
        """Paths of the committed Parquet files under ``subdir``, oldest name first.

        A listing can fail when a file vanishes under it (a concurrent compaction deleted it, or
        the folder was just made): that is retried; a store that cannot be listed is a StoreError.
        """
        for attempt in range(5):
            try:
                infos = self.fs.get_file_info(pafs.FileSelector(self.path(subdir), allow_not_found=True))
                break
            except FileNotFoundError:
                if attempt == 4:
                    raise StoreError(
                        f"{self.display(self.path(subdir))}: files keep vanishing while being listed"
                    ) from None
                time.sleep(0.01 * (attempt + 1))
            except OSError as e:
                raise StoreError(
                    f"cannot list the store at {self.display(self.path(subdir))}: {scrub(str(e))}"
                ) from e
        return sorted(
            i.path
            for i in infos
            if i.type == pafs.FileType.File
            and i.base_name.endswith(".parquet")
            and i.base_name[0] not in "._"
        )

    def published(self, name: str) -> bool:
        """Whether the results file ``name`` is committed (visible to readers)."""
        try:
            return self.fs.get_file_info(self.path(RESULTS, name)).type == pafs.FileType.File
        except OSError as e:
            raise StoreError(f"cannot read the store at {self.display(self.root)}: {scrub(str(e))}") from e
