"""The search index's rows that an import's workers read with the sources, held until the index takes them.

``rematch import``'s workers already parse every record of a source; each also runs them through the
plugin's ``conversation_items`` (:class:`~rematch_trace.importing.search_sources.ConversationRows`) and hands the
redacted rows back with the file's outcome. The importing process keeps them here, by the source's path
as the ledger stores it, until its index sync (:meth:`~rematch_trace.store.search_index.SearchIndex.sync`)
inserts them in the sources' order: the index's source pass then reads no transcript the import read.

Rows past a small budget go to an unlinked file in the data folder (private, gone with the process),
so an archive's text is never all in memory. What is held is the index's own text: already redacted.
"""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path
from typing import IO

from rematch_trace.store.search_rows import Handed, HandedTrace

#: What the rows of a trace are kept under (no source path begins so).
_TRACE = "\0trace:"

#: Bytes of rows held in memory; the rest is written to the spool file.
MEMORY_BYTES = 4 * 1024 * 1024


class HandedRows:
    """The index rows of the sources an import read, by source path (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        """Hold rows for a sync of the data folder at ``folder`` (where the spool file goes, if needed)."""
        self.folder = folder
        self._held: dict[str, bytes] = {}
        #: Each path's offset read from: what the sync checks before it takes the rows.
        self._start: dict[str, int] = {}
        self._spooled: dict[str, tuple[int, int]] = {}
        self._bytes = 0
        self._file: IO[bytes] | None = None

    def put(self, path: str, handed: Handed) -> None:
        """Keep ``handed``, the rows the import's reading of the source at ``path`` gave (replacing any)."""
        # Pickled: the rows are this run's own (its workers'); ids may hold lone surrogates, which JSON refuses.
        self._start[path] = handed[0]
        self._keep(path, pickle.dumps(handed, protocol=pickle.HIGHEST_PROTOCOL))

    def _keep(self, path: str, data: bytes) -> None:
        old = self._held.pop(path, None)
        if old is not None:
            self._bytes -= len(old)
        self._spooled.pop(path, None)
        if self._bytes + len(data) <= MEMORY_BYTES:
            self._held[path] = data
            self._bytes += len(data)
            return
        if self._file is None:
            # Closed by close(): it lives as long as the rows it holds.
            self._file = tempfile.TemporaryFile(dir=self.folder, prefix=".search-rows-")  # noqa: SIM115
        self._file.seek(0, 2)
        self._spooled[path] = (self._file.tell(), len(data))
        self._file.write(data)

    def put_trace(self, key: str, rows: HandedTrace) -> None:
        """Keep the rows a worker made of the trace ``key`` as it wrote it (replacing any)."""
        self._keep(_TRACE + key, pickle.dumps(rows, protocol=pickle.HIGHEST_PROTOCOL))

    def take_trace(self, key: str) -> HandedTrace | None:
        """The rows kept for the trace ``key`` (forgotten here), or ``None``."""
        data = self._take(_TRACE + key)
        if data is None:
            return None
        got: HandedTrace = pickle.loads(data)
        return got

    def start_of(self, path: str) -> int | None:
        """The offset the rows kept for ``path`` were read from, or ``None`` (none kept)."""
        return self._start.get(path)

    def take(self, path: str) -> Handed | None:
        """The rows kept for ``path`` (forgotten here), or ``None``; one source's at a time in memory."""
        self._start.pop(path, None)
        data = self._take(path)
        if data is None:
            return None
        got: Handed = pickle.loads(data)
        return got

    def _take(self, path: str) -> bytes | None:
        data = self._held.pop(path, None)
        if data is not None:
            self._bytes -= len(data)
            return data
        at = self._spooled.pop(path, None)
        if at is None or self._file is None:
            return None
        self._file.seek(at[0])
        return self._file.read(at[1])

    def __contains__(self, path: object) -> bool:
        return path in self._held or path in self._spooled

    def __len__(self) -> int:
        return len(self._held) + len(self._spooled)

    def close(self) -> None:
        """Drop every row still held, and the spool file."""
        self._held.clear()
        self._spooled.clear()
        self._start.clear()
        if self._file is not None:
            self._file.close()
            self._file = None
