"""Messages between a parent and its child: length-prefixed pickles over one end of a socket pair.

Why not :mod:`multiprocessing.connection`: a spawned child is started by :mod:`subprocess` (its own
process group, no resource tracker, no re-import of ``__main__``) and gets its end as a plain file
descriptor; the same framing then serves forked and spawned children alike. Reads never block past
a deadline, so a supervisor can keep its clock while a child is silent.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import time
from collections import deque
from typing import Any

_HEADER = struct.Struct("!Q")
_CHUNK = 1 << 20
_SLICE_S = 3600.0
"""select() takes no infinite timeout: an unlimited wait waits in one-hour slices."""


class Channel:
    """One end of a duplex byte stream carrying pickled messages (a socket pair's file descriptor)."""

    def __init__(self, fd: int) -> None:
        self.fd: int | None = fd
        self._buf = bytearray()
        self._ready: deque[Any] = deque()
        self.eof = False
        """The other end closed (the child exited, or closed its end): no message will follow."""

    def fileno(self) -> int:
        if self.fd is None:
            raise ValueError("the channel is closed")
        return self.fd

    def send(self, message: Any) -> None:
        """Pickle ``message`` and write it whole (blocks while the reader's buffer is full)."""
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(_HEADER.pack(len(data)) + data)
        while view:
            view = view[os.write(self.fileno(), view) :]

    def _fill(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for bytes, read what is there and decode whole messages.

        True if something arrived (bytes or the end of the stream)."""
        ready, _, _ = select.select([self.fileno()], [], [], max(0.0, min(timeout, _SLICE_S)))
        if not ready:
            return False
        chunk = os.read(self.fileno(), _CHUNK)
        if not chunk:
            self.eof = True
        self._buf += chunk
        while len(self._buf) >= _HEADER.size:
            (n,) = _HEADER.unpack_from(self._buf)
            if len(self._buf) < _HEADER.size + n:
                break
            self._ready.append(pickle.loads(bytes(self._buf[_HEADER.size : _HEADER.size + n])))
            del self._buf[: _HEADER.size + n]
        return True

    def read(self, deadline: float) -> list[Any] | None:
        """Messages that arrived before ``deadline`` (monotonic), maybe none when only part of one
        came or the stream ended; None once the deadline passed with nothing new."""
        if not self._ready:
            wait = deadline - time.monotonic()
            if wait <= 0 or self.eof or not self._fill(wait):
                return None if not self.eof else []
        out = list(self._ready)
        self._ready.clear()
        return out

    def poll(self, timeout: float | None = 0.0) -> bool:
        """Whether a message (or the end of the stream) is there within ``timeout`` s (None: wait)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ready and not self.eof:
            wait = _SLICE_S if deadline is None else deadline - time.monotonic()
            if not self._fill(max(wait, 0.0)) and deadline is not None and time.monotonic() >= deadline:
                return False
        return True

    def recv(self) -> Any:
        """The next message, waiting for it; EOFError once the other end closed without one."""
        self.poll(None)
        if self._ready:
            return self._ready.popleft()
        raise EOFError("the other end of the channel closed")

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
