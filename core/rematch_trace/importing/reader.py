"""Bounded-memory JSONL reading: the one line reader every plugin uses.

:func:`read_source` is what a ``read_transcript`` hook usually returns: it opens
a claimed file (plain, gzip or zstd), skips to the resume offset and streams
its records, reporting a file it cannot open or decompress as a problem.

Lines are split in binary with a length cap and parsed one by one, so a
malformed line costs only that line. Ordinary lines go through orjson (falling
back to :mod:`json`, which accepts the lone-surrogate escapes real transcripts
contain). Lines up to :data:`WHOLE_LINE` (and the hard limit) are read whole
too, however long: a long line is one long string in practice (a tool's
output), and ijson's C backend holds such a token as bytes anyway while it
re-reads it at every buffer refill (7x orjson's time for a 52 MB line, and a
higher peak). A line longer than that, where a raised limit allows one, is
parsed straight from the file by ijson, never held as bytes. A line longer than
the hard limit is skipped; it is held up to the limit at most.
"""

from __future__ import annotations

import decimal
import io
import os
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

import ijson
import orjson

from rematch_trace.errors import RematchError
from rematch_trace.host.exactnum import exactify, parse_exact, parsed_exactly
from rematch_trace.host.exactnum import (
    loads_exact as loads_exact,  # for plugins: the exact parse of embedded JSON
)
from rematch_trace.host.source import Problem, RawRecord, Source

#: ijson's buffer for a line too long to read whole (and the least such line).
BIG_LINE = 4 * 1024 * 1024
#: Lines up to this size (or the hard limit, if lower) are read whole and parsed by orjson.
WHOLE_LINE = 64 * 1024 * 1024
#: Default hard limit on one line; longer lines are skipped and reported.
DEFAULT_MAX_LINE = 64 * 1024 * 1024
_CHUNK = 1024 * 1024
#: The problem reported for a last line still being written (it is not consumed).
TRUNCATED_TAIL = "truncated last line (incomplete write); left for the next run"
_BOM = b"\xef\xbb\xbf"
#: What reading a damaged (corrupt or cut-off) gzip or zstd stream raises.
DAMAGED = (OSError, EOFError, ValueError, zlib.error)


def max_line_bytes() -> int:
    """The hard line limit: ``REMATCH_MAX_LINE_MB`` mebibytes, else 64 MiB."""
    raw = os.environ.get("REMATCH_MAX_LINE_MB", "")
    try:
        mb = float(raw) if raw else 0.0
    except ValueError:
        mb = 0.0
    return int(mb * 1024 * 1024) if mb > 0 else DEFAULT_MAX_LINE


def require_c_backend() -> None:
    """Fail with the fix when ijson has no C backend (it would be 10-20x slower)."""
    if ijson.backend not in ("yajl2_c",):
        raise RematchError(
            f"ijson is using its {ijson.backend!r} backend; rematch needs the C backend "
            "(yajl2_c). Reinstall with: pip install --force-reinstall --no-binary=:none: ijson"
        )


def loads(data: bytes) -> Any:
    """Parse one JSON document: orjson, then :mod:`json` for what orjson refuses.

    The :mod:`json` fallback keeps numbers exact
    (:func:`~rematch_trace.host.exactnum.parse_exact`); :func:`read_jsonl`
    also re-parses exactly the orjson lines whose numbers could be inexact.
    Raises :class:`ValueError` (with a short reason) when neither accepts it.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as first:
        try:
            # Decoded here, not by json: given bytes it guesses UTF-16/32 from NULs.
            return parse_exact(data.decode("utf-8"))
        except RecursionError:
            raise ValueError("JSON nested too deeply") from None
        except UnicodeDecodeError:
            raise ValueError("invalid UTF-8") from None
        except ValueError:
            raise ValueError(_reason(first)) from None


def _reason(err: Exception) -> str:
    msg = str(err).split(":", 1)[0].strip() or "invalid JSON"
    return f"invalid JSON ({msg})"


class _LineRest(io.RawIOBase):
    """A readable view of the rest of the current line, up to and incl. its ``\\n``.

    ``readline`` never reads past a newline, so the view never swallows the
    next line. Past ``limit`` bytes it reports end of input and sets ``over``.
    """

    def __init__(self, head: bytes, f: IO[bytes], limit: int) -> None:
        self._pending = memoryview(head)  # (sliced without copying: the head may be long)
        self._f = f
        self._done = False
        self.consumed = 0
        self.limit = limit
        self.over = False
        self.newline = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data: bytes | memoryview
        if self._pending:
            data, self._pending = self._pending[: len(b)], self._pending[len(b) :]
        elif self._done:
            return 0
        else:
            line = self._f.readline(min(len(b), _CHUNK))
            if not line:
                self._done = True
                return 0
            data = line
            if line.endswith(b"\n"):
                self._done = True
                self.newline = True
        self.consumed += len(data)
        if self.consumed > self.limit:
            self.over = True
            self._done = True
            return 0
        b[: len(data)] = data
        return len(data)

    def drain(self) -> int:
        """Skip the remainder of the line; return the bytes skipped."""
        n = len(self._pending)
        self._pending = memoryview(b"")
        while not self.newline:
            chunk = self._f.readline(_CHUNK)
            if not chunk:
                break
            n += len(chunk)
            self.newline = chunk.endswith(b"\n")
        self._done = True
        return n


def read_jsonl(
    f: IO[bytes],
    path: str,
    start: int = 0,
    *,
    max_line: int | None = None,
    objects_only: bool = True,
    skip: Callable[[bytes], bool] | None = None,
) -> Iterator[RawRecord | Problem]:
    """Yield a :class:`RawRecord` per parsed line and a :class:`Problem` per bad one.

    :param f: a binary stream positioned at byte ``start`` (decompressed).
    :param path: the name to report problems under.
    :param start: the byte offset ``f`` is at; offsets and ``line`` numbers
        count from the start of the file only when ``start`` is 0, so on a
        resume the line numbers reported are relative to the resume point.
    :param max_line: the hard line limit (default :func:`max_line_bytes`).
    :param objects_only: report lines that are not JSON objects as problems.
    :param skip: a cheap test on a line's raw bytes; lines it accepts are not
        parsed at all (a plugin's prefilter for record kinds it ignores).

    A last line without a newline that does not parse is reported as a
    truncated tail and not consumed, so a later run picks it up once the
    harness has finished writing it.
    """
    limit = max_line if max_line is not None else max_line_bytes()
    # Read whole up to the limit (a longer line is not held past it), streamed by ijson past WHOLE_LINE.
    whole = max(BIG_LINE, min(limit, WHOLE_LINE))
    offset = start
    lineno = 0
    if start == 0:
        head = f.peek(3)[:3] if hasattr(f, "peek") else b""
        if head == _BOM:
            f.read(3)
            offset = 3
    readline = f.readline
    orjson_loads = orjson.loads
    orjson_dumps = orjson.dumps
    decode_error = orjson.JSONDecodeError
    encode_error = orjson.JSONEncodeError
    exact = parsed_exactly
    # A RawRecord made as the tuple it is: its generated __new__ would add a Python call per line.
    new_tuple = tuple.__new__
    record = RawRecord
    while True:
        raw = readline(BIG_LINE)
        if not raw:
            return
        lineno += 1
        line_start = offset
        n = len(raw)
        if n == BIG_LINE and raw[-1] != 10:
            stream = whole == BIG_LINE
            if not stream:
                chunks, n = _rest_of_line(raw, f, whole)
                ended = chunks[-1][-1] == 10
                raw = b""
                if n > limit:  # dropped as soon as it is over, never joined
                    del chunks
                    offset += n if ended else n + _LineRest(b"", f, limit).drain()
                    yield _oversized(path, lineno, limit)
                    continue
                raw = b"".join(chunks)
                del chunks
                # Past WHOLE_LINE and still going (a raised limit): ijson streams the rest.
                stream = n > whole and not ended
            if stream:
                rec = _read_big(raw, f, path, lineno, line_start, limit, objects_only)
                if not isinstance(rec, RawRecord):  # (not "is a tuple": a RawRecord is one too)
                    problem, used = rec
                    if used < 0:
                        yield problem
                        return
                    offset += used
                    yield problem
                    continue
                offset = rec.end
                yield rec
                continue
        offset += n
        if n > limit:
            yield _oversized(path, lineno, limit)
            continue
        if skip is not None and skip(raw):
            continue
        try:
            value = orjson_loads(raw)  # orjson takes the newline, CR and spaces as they are
            try:
                again: bytes | None = orjson_dumps(value)
            except encode_error:  # deeper than orjson writes: parsed_exactly looks at the tokens
                again = None
            # parsed_exactly's first proof, inline for the usual compact line: written back byte for byte.
            if (again is None or len(again) != n - 1 or raw[-1] != 10 or not raw.startswith(again)) and not exact(
                raw, value
            ):
                # A number orjson may have rounded: parse the line again, exactly.
                try:
                    value = parse_exact(raw)
                except RecursionError:
                    yield Problem(path, lineno, "JSON nested too deeply to read its numbers exactly; skipped")
                    continue
        except decode_error:
            if not raw.strip():
                continue
            if lineno == 1 and raw.startswith(_BOM):  # a stream that could not be peeked
                raw = raw[3:]
            try:
                value = loads(raw)
            except ValueError as err:
                if raw[-1:] != b"\n":  # raw may be empty once a BOM is cut off
                    offset -= n
                    yield Problem(path, lineno, TRUNCATED_TAIL,
                                  "truncated_tail")
                    return
                yield Problem(path, lineno, str(err))
                continue
        if objects_only and type(value) is not dict:
            yield Problem(path, lineno, f"not a JSON object ({type(value).__name__})")
            continue
        yield new_tuple(record, (lineno, line_start, offset, value))


def _rest_of_line(head: bytes, f: IO[bytes], whole: int) -> tuple[list[bytes], int]:
    """A long line's chunks, from ``head`` up to its newline or ``whole + 1`` bytes; and their size.

    A size past ``whole`` says the line is longer than that (the rest is still in ``f``).
    """
    chunks = [head]
    size = len(head)
    while size <= whole:
        chunk = f.readline(min(BIG_LINE, whole + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk[-1] == 10:
            break
    return chunks, size


def _oversized(path: str, lineno: int, limit: int) -> Problem:
    """The problem of a line longer than ``limit``, skipped."""
    return Problem(path, lineno, f"line longer than the {limit / (1024 * 1024):g} MiB limit; skipped", "oversized")


def _read_big(
    head: bytes, f: IO[bytes], path: str, lineno: int, line_start: int, limit: int, objects_only: bool
) -> RawRecord | tuple[Problem, int]:
    """Parse a line longer than the reader reads whole straight from the stream with ijson."""
    rest = _LineRest(head, f, limit)
    try:
        # yajl re-copies a token split across reads, so small reads make a long string quadratic.
        # Decimals, not floats: numbers stay exact (exactify keeps floats where nothing is lost).
        value = exactify(next(ijson.items(io.BufferedReader(rest, _CHUNK), "", use_float=False, buf_size=BIG_LINE)))
        error: str | None = None
    except StopIteration:
        value, error = None, "empty line"
    except (ijson.JSONError, ijson.IncompleteJSONError) as err:
        value, error = None, f"invalid JSON ({str(err).splitlines()[0][:80]})"
    except (RecursionError, MemoryError):
        value, error = None, "JSON nested too deeply"
    except decimal.InvalidOperation:  # an exponent past 10^18: no decimal holds it
        value, error = None, "number out of range"
    except UnicodeDecodeError:
        value, error = None, "invalid UTF-8"
    used = rest.consumed + rest.drain()
    if error is not None and not rest.newline and not rest.over:
        return Problem(path, lineno, TRUNCATED_TAIL, "truncated_tail"), -1
    if rest.over:
        mib = limit // (1024 * 1024)
        return Problem(path, lineno, f"line longer than the {mib} MiB limit; skipped", "oversized"), used
    if error is not None:
        return Problem(path, lineno, error), used
    if objects_only and not isinstance(value, dict):
        return Problem(path, lineno, f"not a JSON object ({type(value).__name__})"), used
    return RawRecord(lineno, line_start, line_start + used, value)


def open_source(source: Source) -> IO[bytes]:
    """A claimed file's decompressed bytes (plain, ``gz`` or ``zst`` as ``source.compression`` says).

    The file may be local or at an fsspec URL (:mod:`rematch_trace.host.fs`).
    Raises :class:`OSError` when the file cannot be opened, and :class:`RematchError`
    for a ``.zst`` file without the ``zstandard`` package or a URL without its file system.
    """
    from rematch_trace.host.fs import open_gzip, open_raw

    if source.compression == "gz":
        return open_gzip(source.path)
    raw = open_raw(source.path)
    if source.compression == "zst":
        try:
            from rematch_trace.importing.streams import open_zstd

            return open_zstd(raw)
        except ImportError:
            raw.close()
            raise RematchError("a .zst transcript needs zstandard: pip install zstandard") from None
    return raw


def seek_to(f: IO[bytes], source: Source, start: int) -> None:
    """Move ``f`` (from :func:`open_source`) to decompressed byte ``start``."""
    if not start:
        return
    if not source.compression:
        f.seek(start)
        return
    # A decompressed stream cannot seek back or cheaply: read and drop up to the resume point.
    n = start
    while n > 0:
        got = f.read(min(n, _CHUNK))
        if not got:
            return
        n -= len(got)


def report_damage(source: Source, items: Iterator[RawRecord | Problem]) -> Iterator[RawRecord | Problem]:
    """Pass ``items`` on; a damaged compressed stream ends them with an ``unreadable`` problem."""
    try:
        yield from items
    except DAMAGED as err:
        if not source.compression:
            raise
        yield Problem(str(source.path), 0, f"cannot decompress: {err}", "unreadable")


def read_source(
    source: Source, start: int = 0, *, skip: Callable[[bytes], bool] | None = None
) -> Iterator[RawRecord | Problem]:
    """Stream a claimed file's records from decompressed byte ``start``, with :func:`read_jsonl`.

    A file that is gone or unreadable, or a compressed stream that is damaged,
    ends with an ``unreadable`` :class:`Problem` instead of an exception.

    :param skip: as for :func:`read_jsonl`: a cheap test of lines not to parse.
    """
    items = _read_source(source, start, skip)
    # Only a compressed stream can be damaged: a plain file's records need no wrapper to pass through.
    return report_damage(source, items) if source.compression else items


def _read_source(
    source: Source, start: int, skip: Callable[[bytes], bool] | None
) -> Iterator[RawRecord | Problem]:
    from rematch_trace.host.fs import source_name

    name = source_name(source.path)  # a URL's, not the Path's folded form
    try:
        f = open_source(source)
    except OSError as err:
        # A harness may delete old transcripts on its own schedule: a file may vanish after discovery.
        yield Problem(name, 0, f"cannot open: {err.strerror or err}", "unreadable")
        return
    except RematchError as err:
        yield Problem(name, 0, str(err), "unreadable")
        return
    with f:
        seek_to(f, source, start)
        yield from read_jsonl(f, name, start, skip=skip)
