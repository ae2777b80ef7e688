"""The search index's reading of source transcripts: each assistant text and tool output of a source, through
the plugin that claims it (``conversation_items``), cut to its bound and redacted by the events' redactor.

Two drivers read sources for the index: the import's worker, on the records it has just parsed
(:class:`ConversationRows`, made as it reads, handed over with the file's outcome), and a sync reading what no import
handed it (a cluster's import, ``watch``, live capture's sessions, a source past the handover's bound):
:func:`read_all`, registered with the index (:func:`~rematch_trace.store.search_index.register_source_reader`)
when this module is loaded, since the store reads no transcript itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from rematch_trace.store.search_index import (
    OUTPUT_CHARS,
    SAID_CHARS,
    Handed,
    SaidRow,
    SourceRows,
    SourceTask,
    keyed,
    register_source_reader,
)
from rematch_trace.store.search_rows import valid

#: The plugin host of a process reading sources (made once per process; a forked worker inherits it).
_HOST: list[Any] = []
#: Fewer sources than this are read in this process: a pool costs more than it saves.
POOL_MIN = 8


def source_items(host: Any, path: str, harness: str, start: int = 0,
                 end: list[int] | None = None, kept: Any = None,
                 problems: list[Any] | None = None) -> tuple[str, str, Iterator[Any] | None]:
    """``(status, note, items)`` of a source file read from ``start`` through its plugin.

    ``end``, when given, holds the offset just past the last whole record read so far (the search
    index reads a grown file on from there). ``kept``: the source as the import claimed it (no
    plugin is asked to detect it again). ``problems``, when given, gets the reader's problems as
    the items are read (a source that cannot be read at all gives no item, and says so there).
    """
    from rematch_trace.host.source import Problem, RawRecord

    def whole(records: Iterator[Any]) -> Iterator[Any]:
        for r in records:
            if isinstance(r, RawRecord):
                if end is not None and r.end > end[0]:
                    end[0] = r.end
                yield r
            elif problems is not None and isinstance(r, Problem):
                problems.append(r)

    p = Path(path)
    if not path or not os.path.isfile(p):
        return "gone", f"the source transcript {path or '(none)'} is gone: only the trace's records are shown", None
    source = kept if kept is not None else host.detect(p, harness)
    if source is None:
        return "unclaimed", f"no installed plugin reads {path}", None
    items = host.conversation(source, whole(host.read(source, start)))
    if items is None:
        return "no_plugin", f"no conversation from this plugin ({source.plugin or source.harness})", None
    return "ok", "", items


def _kept(host: Any, path: str, saved: bytes | None) -> Any:
    """The source as the import claimed it (its saved state), or ``None`` to detect it again."""
    if saved is None:
        return None
    from rematch_trace.importing.claimed import kept_source
    from rematch_trace.store.states import load_saved

    try:
        state = load_saved(saved)
    except ValueError:
        return None
    hint = state.detected.hint if state.detected is not None else None
    return kept_source(host, state, Path(path), hint, state.offset)


def said_rows(items: Iterable[Any], out: list[SaidRow], redact: Callable[[str], tuple[str, int]] | None = None) -> None:
    """Append to ``out`` the rows of a source's conversation items: each stream's opening, and each assistant
    text and tool output cut to its bound and redacted by the events' redactor (``redact``: its ``redact``,
    or one that gives the same; raises what the plugin raises)."""
    from rematch_trace.security.redact import default_redactor

    if redact is None:
        redact = default_redactor().redact
    for it in items:
        said_row(it, redact, out)


def said_row(it: Any, redact: Callable[[str], Any], out: list[SaidRow]) -> None:
    """Append to ``out`` the row of one conversation item, if it makes one (see :func:`said_rows`)."""
    from rematch_trace.host.conversation import Returned, Said
    from rematch_trace.host.vocab import Session

    if isinstance(it, Session):
        out.append((it.stream, "session", it.session_id, None, ""))
        return
    call: str | None = None
    if isinstance(it, Said) and it.role == "assistant":
        kind, body = "assistant", it.text[:SAID_CHARS]
    elif isinstance(it, Returned) and it.output.strip():
        kind, body, call = "output", it.output[:OUTPUT_CHARS], it.call_id
    else:
        return
    body = redact(body)[0]
    if body.strip():
        out.append((it.stream, kind, call, it.t, valid(body)))


#: Kept first when the plugin gives no conversation (no ``conversation_items``): there is nothing to store.
NO_CONVERSATION: list[Any] = ["none"]


class _Remembered:
    """The events' redactor, remembering the last text it redacted: the store's row of an item is made just
    before the index's, and an output or answer within both bounds is the same string object in both, so it
    is redacted once (the index's text is what the redactor gives it either way)."""

    def __init__(self) -> None:
        from rematch_trace.security.redact import default_redactor

        self.red = default_redactor()
        self.last: tuple[str, str] | None = None

    def redact_text(self, text: str) -> str:
        """:meth:`~rematch_trace.security.redact.Redactor.redact_text`, remembered."""
        out = self.red.redact_text(text)
        self.last = (text, out)
        return out

    def redact_value(self, value: Any) -> Any:
        """:meth:`~rematch_trace.security.redact.Redactor.redact_value`."""
        return self.red.redact_value(value)

    def redact(self, text: str) -> tuple[str, int]:
        """:meth:`~rematch_trace.security.redact.Redactor.redact` (the count is not the index's concern)."""
        if self.last is not None and self.last[0] is text:
            return self.last[1], 0
        return self.red.redact(text)


def _stored(items: Iterable[Any], keep: list[list[Any]], red: _Remembered, held: list[int]) -> Iterator[Any]:
    """``items``, each also kept in ``keep`` as the conversation store's row (store/conversation_rows.py);
    ``held[0]`` grows by the characters of the rows' texts (what holding them costs)."""
    from rematch_trace.store.conversation_rows import encode

    for it in items:
        row = encode(it, red)
        if row is not None:
            keep.append(row)
            held[0] += sum(len(x) for x in row if type(x) is str)
        yield it


class ConversationRows:
    """The index's rows of a source's conversation items, made as the import reads the source: the plugin's
    ``conversation_items`` pulls the raw records the translation has pulled (``itertools.tee`` of the one
    reading), and is advanced after each translated record, so neither holds the file's records.

    Driven by :class:`~rematch_trace.importing.source_import.SourceImport`: :meth:`step` after each record
    the translation gave, :meth:`finish` once its input ran out. A plugin failing in its
    ``conversation_items`` costs the rows alone (``failed``: the index reads the source again); the
    reading's own failure is the import's, raised there.
    """

    def __init__(self, host: Any, source: Any, records: Iterator[Any], start: int,
                 keep: list[list[Any]] | None = None) -> None:
        self.start = start
        self.end = start
        self.rows: list[SaidRow] = []
        self.failed = False
        self.taken = 0
        #: Characters of the rows' texts held so far (the index's and the store's): past the import's bound
        #: the rows are let go (``SourceImport._taken``). Counted from the rows, not the records' positions,
        #: which are a plugin's own (a database's times, a document's record numbers) rather than bytes.
        self._held = [0]
        red = _Remembered()
        self._redact: Callable[[str], tuple[str, int]] = red.redact
        self._records: Iterator[Any] | None = records
        try:
            items = host.conversation(source, self._counted(records))
        except Exception:
            items, self.failed = None, True
        if keep is not None and not self.failed:
            # ``keep`` gets every item as the conversation store keeps it (redacted; the same pass): an
            # output or answer is redacted once for both the stored row and the index's.
            if items is None:
                keep.append(NO_CONVERSATION)  # the plugin gives none: nothing is stored
            else:
                items = _stored(items, keep, red, self._held)
        self._items: Iterator[Any] | None = iter(items) if items is not None else None

    def _counted(self, records: Iterator[Any]) -> Iterator[Any]:
        for r in records:
            self.taken += 1
            if r.end > self.end:
                self.end = r.end
            yield r

    def step(self, read: int) -> None:
        """Advance the plugin's items until it has taken the ``read`` records the translation took."""
        items = self._items
        if items is None:
            return
        try:
            while self.taken < read:
                it = next(items, None)
                if it is None:
                    self._stop()
                    return
                before = len(self.rows)
                said_row(it, self._redact, self.rows)
                if len(self.rows) > before:
                    self._held[0] += len(self.rows[-1][4])
        except Exception:  # a plugin failing on its own file: what it gave so far is kept, the source read again
            self.failed = True
            self._stop()

    @property
    def held(self) -> int:
        """Characters of the rows' texts held so far."""
        return self._held[0]

    def finish(self) -> Handed:
        """The rows of the whole reading (the plugin's remaining items taken)."""
        self.step(1 << 62)
        return self.start, self.end, self.rows, self.failed

    def _stop(self) -> None:
        # The tee's branch let go: the reading no longer keeps records for it.
        self._items = self._records = None


def _source_rows(task: SourceTask) -> SourceRows:
    """Read one source through its plugin's ``conversation_items`` hook: each assistant text and tool
    output, cut to its bound and redacted by the events' redactor (in a worker, or in this process)."""
    path, harness, start, streams, by_id, main, saved = task
    if not _HOST:
        from rematch_trace.importing.claimed import worker_host

        _HOST.append(worker_host())
    end = [start]
    said: list[SaidRow] = []
    failed = False
    try:
        _, _, items = source_items(_HOST[0], path, harness, start, end, kept=_kept(_HOST[0], path, saved))
        said_rows(items or (), said)
    except Exception:  # a plugin failing on its own file: the trace's text stays searchable
        failed = True
    return keyed(said, streams, by_id, main), end[0], streams, failed


def read_all(todo: list[SourceTask], jobs: int) -> Iterator[SourceRows]:
    """:func:`_source_rows` of each task, in order: in ``jobs`` forked workers when there are enough.

    Only the reading and the redaction are parallel; the one writer (the caller) inserts, in the
    order of ``todo``, so the index is the same whatever ``jobs`` is.
    """
    if jobs <= 1 or len(todo) < POOL_MIN:
        yield from map(_source_rows, todo)
        return
    import gc
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from rematch_trace.security.redact import default_redactor

    if not _HOST:
        from rematch_trace.importing.claimed import worker_host

        _HOST.append(worker_host())  # made before the fork: each worker inherits it
    default_redactor()  # its patterns compiled once, here, not in each worker
    done = 0
    # fork: the workers inherit the loaded plugins (the import's pool forks too); they never
    # touch the parent's SQLite connection. A worker that dies breaks the pool (it does not
    # hang it): what is left is read here.
    # The parent's objects frozen first: a worker's collector then leaves them alone, so it does
    # not copy the pages of a parent grown large by the import it just ran.
    gc.freeze()
    try:
        with ProcessPoolExecutor(min(jobs, len(todo)), mp_context=multiprocessing.get_context("fork")) as pool:
            for got in pool.map(_source_rows, todo, chunksize=2):
                done += 1
                yield got
    except BrokenProcessPool:
        yield from map(_source_rows, todo[done:])
    finally:
        gc.unfreeze()




register_source_reader(read_all)
