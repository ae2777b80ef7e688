"""The watcher's one-line status on a terminal, and its messages everywhere.

On a terminal the status line (transcripts followed, sessions, the last
import and its lag) is redrawn in place after each import, and a message is
printed above it. Elsewhere (a service's journal) only the messages are
written, one line each; ``verbose`` adds a line per import.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import IO

import attrs


@attrs.define
class Figures:
    """What the status line shows."""

    #: Transcript files under the watched roots that are imported (whole or continued).
    followed: int = 0
    sessions: int = 0
    flagged: int = 0
    #: Wall time of the last import that wrote something, and how many files it took.
    last_at: float | None = None
    last_files: int = 0
    #: Seconds from the newest write of those files to their ledger commit.
    lag: float | None = None


class Status:
    """Draws :class:`Figures` (on a terminal) and prints messages (anywhere)."""

    def __init__(self, stream: IO[str] | None = None, *, tty: bool | None = None, verbose: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.verbose = verbose
        self.figures = Figures()
        self._drawn = False

    def line(self) -> str:
        """The status line of the current figures."""
        f = self.figures
        text = f"watching: {f.followed} transcripts, {f.sessions} sessions ({f.flagged} flagged)"
        if f.last_at is None:
            return text + "; no import yet"
        text += f"; last import {time.strftime('%H:%M:%S', time.localtime(f.last_at))}"
        text += f" ({f.last_files} file{'s' if f.last_files != 1 else ''})"
        if f.lag is not None:
            text += f", lag {f.lag:.2f}s"
        return text

    def update(self) -> None:
        """Redraw the status line (a terminal), or log the import (``verbose``)."""
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            self.stream.write("\r\x1b[K" + self.line()[: max(10, width - 1)])
            self.stream.flush()
            self._drawn = True
        elif self.verbose:
            self.message(self.line())

    def message(self, text: str) -> None:
        """One line above the status line."""
        if self._drawn:
            self.stream.write("\r\x1b[K")
        from rematch_trace.host.text import one_line

        # Paths and reasons come from the watched folders: one line, hidden characters escaped.
        self.stream.write(f"rematch: {one_line(text)}\n")
        self.stream.flush()
        if self._drawn:
            self._drawn = False
            self.update()

    def close(self) -> None:
        """End the status line, so the shell prompt starts on a line of its own."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
