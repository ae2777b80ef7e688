"""The token usage of the run a ``Stop`` hook ends, read from the end of the transcript.

Hooks carry no usage; the transcript does (claude-code-format.md 1.4). At a
``Stop`` (or ``SubagentStop``, from the subagent's own file) the plugin reads
the transcript **backwards from its end** to the run's prompt: exactly the
lines the run added since the previous stop, never the whole file, and only
one line at a time in memory (a line longer than :data:`MAX_LINE_BYTES` is
passed over, as is anything past :data:`MAX_SCAN_BYTES`). Each response
(``message.id``) counts once, with the usage of its line with the most
``output_tokens`` (the last line of a streamed response carries the final
count), as the importer counts it; the run's usage is their sum, so a live
``turn_end`` carries what the import's ``turn_end`` records of the same run add
up to.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from rematch_trace.host.text import clean
from rematch_trace.host.vocab import Usage

from .translate import SYNTHETIC_MODEL, _int, _usage
from .usertext import INTERRUPT_PREFIX

#: Bytes read per step from the end.
CHUNK_BYTES = 64 * 1024
#: A longer line is passed over (a huge tool result: it carries no usage).
MAX_LINE_BYTES = 16 << 20
#: At most this much of the file's end is read for one run.
MAX_SCAN_BYTES = 256 << 20


def open_regular(path: str) -> int | None:
    """A read-only descriptor of ``path`` when it is a regular file (a FIFO must not hang a hook)."""
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def lines_backward(fd: int, end: int, limit: int = MAX_SCAN_BYTES) -> Iterator[bytes]:
    """The lines before byte ``end``, last first, reading at most ``limit`` bytes.

    The first line of the window (cut by ``limit``) is not yielded; a line
    longer than :data:`MAX_LINE_BYTES` is skipped whole, never held past that
    bound. Linear in the bytes read whatever the lines' lengths: each step's
    chunk is searched once, and the part of a line read so far is kept as its
    chunks (joined once, when its start is found), never copied step after step.
    """
    start_of_scan = max(0, end - limit)
    pos = end
    pieces: list[bytes] = []  # the current line's chunks read so far, last first
    held = 0  # their length
    skipping = False  # the current line is over MAX_LINE_BYTES: its bytes are not kept
    while pos > start_of_scan:
        step = min(CHUNK_BYTES, pos - start_of_scan)
        pos -= step
        chunk = os.pread(fd, step, pos)
        if len(chunk) != step:
            return  # the file shrank under us
        hi = step  # chunk[:hi] is not handled yet
        cut = chunk.rfind(b"\n")
        while cut >= 0:
            # chunk[cut + 1:hi] is the start of the current line: the line is whole.
            if not skipping:
                line = chunk[cut + 1 : hi]
                if pieces:
                    pieces.append(line)
                    pieces.reverse()
                    line = b"".join(pieces)
                if line.strip():
                    yield line
            pieces, held, skipping = [], 0, False
            hi = cut
            cut = chunk.rfind(b"\n", 0, hi)
        if not skipping and hi:
            pieces.append(chunk[:hi] if hi < step else chunk)
            held += hi
            if held > MAX_LINE_BYTES:
                pieces, held, skipping = [], 0, True
    if pos == 0 and pieces and not skipping:
        pieces.reverse()
        line = b"".join(pieces)
        if line.strip():
            yield line


def _is_prompt(line: dict[str, Any]) -> bool:
    """A user line a person typed (not meta, a compaction summary, tool results or an interrupt marker)."""
    if line.get("isMeta") is True or line.get("isCompactSummary") is True:
        return False
    message = line.get("message")
    content = message.get("content") if type(message) is dict else None
    if type(content) is str:
        return bool(content.strip()) and not content.lstrip().startswith(INTERRUPT_PREFIX)
    if type(content) is list:
        blocks = [b for b in content if type(b) is dict]
        if any(b.get("type") == "tool_result" for b in blocks):
            return False
        return any(b.get("type") == "text" and type(b.get("text")) is str and b["text"].strip()
                   and not b["text"].lstrip().startswith(INTERRUPT_PREFIX) for b in blocks)
    return False


@dataclass(frozen=True)
class Response:
    """One model response of the run, as the import's ``turn_end`` of it would say."""

    model: str | None
    usage: Usage
    stop_reason: str | None
    text: str


def run_usage(path: str) -> Usage | None:
    """The summed usage of the responses after the transcript's last prompt; ``None`` when none is readable."""
    responses = run_responses(path)
    if not responses:
        return None
    i = o = cr = cw = hour = 0
    costs = [r.usage.cost for r in responses if r.usage.cost is not None]
    for r in responses:
        u = r.usage
        i, o, cr, cw, hour = (i + u.input, o + u.output, cr + u.cache_read, cw + u.cache_write,
                              hour + u.cache_write_1h)
    return Usage(i, o, cr, cw, i + o + cr + cw, sum(costs) if costs else None, hour)


def _texts(message: dict[str, Any]) -> str:
    content = message.get("content")
    if type(content) is str:
        return clean(content)
    if type(content) is not list:
        return ""
    return "\n".join(clean(b["text"]) for b in content
                     if type(b) is dict and b.get("type") == "text" and type(b.get("text")) is str and b["text"])


def run_responses(path: str) -> list[Response] | None:
    """The responses after the transcript's last prompt, oldest first; ``None`` when the file is unreadable.

    Each response (``message.id``) once: usage from its line with the most output tokens, the
    model, stop reason and texts its lines state (a streamed response spreads its blocks over
    several lines), as the importer groups them.
    """
    fd = open_regular(path)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        best: dict[str, tuple[int, list[int], float | None]] = {}
        facts: dict[str, list[Any]] = {}  # id -> [model, stop_reason, texts last first]
        for raw in lines_backward(fd, size):
            is_assistant = b'"assistant"' in raw
            if not is_assistant and b'"user"' not in raw:
                continue
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if type(line) is not dict or line.get("isSidechain") is True:
                continue
            typ = line.get("type")
            if typ == "user":
                if _is_prompt(line):
                    break
                continue
            if typ != "assistant":
                continue
            message = line.get("message")
            usage = message.get("usage") if type(message) is dict else None
            if type(usage) is not dict or type(message) is not dict:
                continue
            mid = message.get("id")
            key = mid if type(mid) is str and mid else f"line:{len(best)}"
            fact = facts.setdefault(key, [None, None, []])
            model = message.get("model")
            if fact[0] is None and type(model) is str and model and model != SYNTHETIC_MODEL:
                fact[0] = clean(model)
            stop = message.get("stop_reason")
            if fact[1] is None and type(stop) is str and stop:
                fact[1] = clean(stop)
            text = _texts(message)
            if text:
                fact[2].append(text)
            out_tokens = _int(usage.get("output_tokens"))
            cost = line.get("costUSD")
            cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
            # Read last first: a line replaces the one kept only with strictly more output tokens,
            # so among equals the later line wins, as in the importer's forward reading.
            if key not in best or out_tokens > best[key][0]:
                best[key] = (out_tokens, _usage(usage, out_tokens), cost)
    except OSError:
        return None
    finally:
        os.close(fd)
    out = []
    for key in reversed(list(best)):  # found last first
        _o, (a, b, c, d, hour), cost = best[key]
        model, stop, texts = facts[key]
        out.append(Response(model, Usage(a, b, c, d, a + b + c + d, cost, hour), stop, "\n".join(reversed(texts))))
    return out
