"""The conversation rows an import stored of each source: what ``show --conversation`` and the report read.

The import's worker already runs a source's records through its plugin's ``conversation_items`` (for the
search index); it keeps every item it gets, redacted with the events' redactor, in
``conversations/<digest of the source path>.rows`` (:func:`write`). The readers (the conversation view, the
report's pages, the Markdown export) read them back here (:func:`read`) and never read the transcript
again. Only this module knows how they are stored.

A file is a magic line, then one *frame* per reading of the source: a header line (JSON: the offsets the
reading went from and to, the compressed length) and that many bytes of zlib-compressed JSON lines, one
item each. A continued import (a grown file) adds a frame that starts where the last one ended; a frame
that does not (the import went back to an earlier offset) drops the frames from there on first. A file
whose frames do not chain, are cut short or do not parse is not read at all (``None``: the reader says
so and falls back), never read in part. Every file is written whole beside its target and renamed over
it, so a killed import leaves the old rows or the new.

Each text is cut to :data:`TEXT_CHARS` characters (a note says how many more there were): the report's
page shows no more of a text, and the rows stay a fraction of the transcripts.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.store.datafolder import DataDir, write_atomic

#: The folder of the data folder that holds them.
FOLDER = "conversations"
#: The first line of every file (its format's version).
MAGIC = b"rematch conversation rows 1\n"
#: Characters of one text kept (a prompt, a piece of the assistant's text, an output, a compaction summary).
TEXT_CHARS = 200_000
#: zlib's level: the worker compresses as it imports; 1 is several times faster than 6 for a few % more bytes.
LEVEL = 1


def path_of(data: DataDir, source: str) -> Path:
    """Where the rows of the source at ``source`` (its path as the ledger stores it) are kept."""
    name = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return data.root / FOLDER / f"{name}.rows"


def _cut(text: str) -> str:
    if len(text) <= TEXT_CHARS:
        return text
    return f"{text[:TEXT_CHARS]}\n… {len(text) - TEXT_CHARS:,} more characters not kept by rematch"


def encode(item: Any, redact: Any) -> list[Any] | None:
    """One conversation item as a stored row (its texts cut and redacted by ``redact``, a
    :class:`~rematch_trace.security.redact.Redactor`), or ``None`` for an item of no known type."""
    from rematch_trace.host.conversation import Called, Compacted, Returned, Said, Spawned
    from rematch_trace.host.vocab import Session

    if isinstance(item, Said):
        return ["u" if item.role == "user" else "a", item.stream, item.t, redact.redact_text(_cut(item.text))]
    if isinstance(item, Called):
        return ["c", item.stream, item.t, item.call_id, redact.redact_text(str(item.name)),
                redact.redact_value(item.input)]
    if isinstance(item, Returned):
        return ["r", item.stream, item.t, item.call_id, redact.redact_text(_cut(item.output)), item.is_error]
    if isinstance(item, Compacted):
        return ["k", item.stream, item.t, item.trigger, redact.redact_text(_cut(item.summary))]
    if isinstance(item, Spawned):
        return ["p", item.stream, item.t, item.call_id, item.session_id]
    if isinstance(item, Session):
        return ["s", item.stream, item.t, item.session_id, item.parent_session_id]
    return None


def decode(row: list[Any]) -> Any:
    """A stored row as the conversation item it was (raises ``ValueError`` on a row of no known shape)."""
    from rematch_trace.host.conversation import Called, Compacted, Returned, Said, Spawned
    from rematch_trace.host.vocab import Session

    try:
        kind = row[0]
        if kind in ("u", "a"):
            return Said(row[1], row[2], "user" if kind == "u" else "assistant", row[3])
        if kind == "c":
            return Called(row[1], row[2], row[3], row[4], row[5])
        if kind == "r":
            return Returned(row[1], row[2], row[3], row[4], row[5])
        if kind == "k":
            return Compacted(row[1], row[2], row[3], row[4])
        if kind == "p":
            return Spawned(row[1], row[2], row[3], row[4])
        if kind == "s":
            return Session(row[1], row[2], row[3], parent_session_id=row[4])
    except (IndexError, TypeError) as err:
        raise ValueError(f"a stored conversation row of the wrong shape: {err}") from None
    raise ValueError(f"a stored conversation row of no known kind {kind!r:.20}")


def _line(row: list[Any]) -> bytes:
    try:
        return orjson.dumps(row) + b"\n"
    except TypeError:
        # A lone surrogate (orjson refuses it): the standard library spells it as an escape it reads back.
        return json.dumps(row, ensure_ascii=True, default=str).encode() + b"\n"


def _frames(blob: bytes) -> list[tuple[int, int, bytes]] | None:
    """The frames of a file's bytes, ``(start, end, compressed)`` each; ``None`` when they are damaged."""
    if not blob.startswith(MAGIC):
        return None
    out: list[tuple[int, int, bytes]] = []
    at = len(MAGIC)
    while at < len(blob):
        nl = blob.find(b"\n", at)
        if nl < 0:
            return None
        try:
            head = orjson.loads(blob[at:nl])
            start, end, size = int(head["s"]), int(head["e"]), int(head["n"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None
        body = blob[nl + 1:nl + 1 + size]
        if len(body) != size or (out and out[-1][1] != start) or (not out and start != 0):
            return None
        out.append((start, end, body))
        at = nl + 1 + size
    return out


def _frame(start: int, end: int, rows: Iterable[list[Any]]) -> bytes:
    body = zlib.compress(b"".join(_line(r) for r in rows), LEVEL)
    return orjson.dumps({"s": start, "e": end, "n": len(body)}) + b"\n" + body


def write(data: DataDir, source: str, start: int, end: int, rows: list[list[Any]]) -> bool:
    """Keep ``rows`` (:func:`encode`'s) of the reading of ``source`` from offset ``start`` to ``end``;
    whether the file now holds the source's whole conversation up to ``end``.

    ``start`` 0 replaces the file. A later ``start`` adds a frame after the one that ends there (the
    frames after it dropped); when no frame ends there the file is removed (it would lack a part):
    the readers then say so and read the transcript.
    """
    target = path_of(data, source)
    folder = target.parent
    if not folder.is_dir():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    kept: list[tuple[int, int, bytes]] = []
    if start:
        try:
            old = _frames(target.read_bytes())
        except OSError:
            old = None
        cut = next((i for i, f in enumerate(old or ()) if f[1] == start), None)
        if old is None or cut is None:
            target.unlink(missing_ok=True)
            return False
        kept = old[:cut + 1]
    blob = [MAGIC]
    for s, e, body in kept:
        blob.append(orjson.dumps({"s": s, "e": e, "n": len(body)}) + b"\n" + body)
    blob.append(_frame(start, end, rows))
    write_atomic(target, b"".join(blob))
    return True


def _rows(body: bytes) -> Iterator[list[Any]]:
    for line in zlib.decompress(body).splitlines():
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            row = json.loads(line)  # a lone surrogate's escape, which orjson refuses to read back
        if not isinstance(row, list):
            raise ValueError("a stored conversation row that is not a list")
        yield row


def read(data: DataDir, source: str) -> list[Any] | None:
    """The conversation items the import stored of ``source`` (its path as the ledger stores it), in the
    order the plugin gave them; ``None`` when none are stored or the file is damaged (see the module)."""
    try:
        with open(path_of(data, source), "rb") as f:
            blob = f.read()
    except OSError:
        return None
    frames = _frames(blob)
    if frames is None:
        return None
    try:
        return [decode(r) for _, _, body in frames for r in _rows(body)]
    except (zlib.error, ValueError, UnicodeDecodeError):
        return None


def forget(data: DataDir, source: str) -> None:
    """Remove the rows of ``source`` (``rematch forget``: the text of a forgotten session is not kept)."""
    try:
        os.unlink(path_of(data, source))
    except OSError:
        pass
