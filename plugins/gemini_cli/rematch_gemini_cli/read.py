"""Reading a Gemini CLI session: the JSON-lines log, or the JSON document of older versions.

A log (``.jsonl``, 0.61 and later) is read by the core's line reader, resumed at a byte
offset as it grows. A document (``.json``) is rewritten whole by the harness as the chat
grows, so it is read whole (up to :data:`MAX_DOCUMENT` bytes) and given as records: its
metadata (the document less ``messages``) then each message, each record's ``offset`` and
``end`` being its position among the records, not a byte offset (the source is
``rewritten``: the core hands back these positions and compares no bytes). Every record
is given on every read: the translation checks that the ones it already imported are
still the document's first records (see :mod:`rematch_gemini_cli.translate`).
"""

from __future__ import annotations

from collections.abc import Iterator

from rematch_trace.host.source import Problem, RawRecord, Source
from rematch_trace.importing.reader import loads, open_source, read_source

#: The largest document read (Gemini CLI's own documents are a few MB).
MAX_DOCUMENT = 256 * 1024 * 1024


def read(source: Source, start: int) -> Iterator[RawRecord | Problem]:
    """The records of ``source`` (a log from byte ``start``; a document whole)."""
    if not source.path.name.endswith(".json"):
        yield from read_source(source, start)
        return
    path = str(source.path)
    try:
        with open_source(source) as f:
            data = f.read(MAX_DOCUMENT + 1)
    except OSError as err:
        yield Problem(path, 0, f"cannot read: {err}", "unreadable")
        return
    if len(data) > MAX_DOCUMENT:
        yield Problem(path, 0, f"document larger than {MAX_DOCUMENT} bytes", "oversized")
        return
    try:
        doc = loads(data)
    except ValueError as err:
        # A document caught mid-rewrite (the harness writes it in place in older versions), or
        # one nested past the parser's stack (the core's loads says so): that session is lost, one line.
        yield Problem(path, 0, f"not a JSON document: {err}", "malformed")
        return
    if not isinstance(doc, dict):
        yield Problem(path, 0, "not a JSON object", "malformed")
        return
    messages = doc.pop("messages", None)
    records: list[object] = [doc, *(messages if isinstance(messages, list) else [])]
    for i, value in enumerate(records):
        yield RawRecord(i + 1, i, i + 1, value)
