"""The token usage of the run a ``Stop`` hook ends, read from the end of the transcript.

Hooks carry no usage; the transcript does (claude-code-format.md 1.4). At a
``Stop`` (or ``SubagentStop``, from the subagent's own file) the plugin reads
the transcript **backwards from its end** to the run's prompt (or to the
``Stop hook feedback:`` line a blocking ``Stop`` hook left, which the import
also reads as a run's start): exactly the
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
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from rematch_trace.host.files import open_regular as open_regular  # re-exported for the live modules
from rematch_trace.host.text import clean
from rematch_trace.host.vocab import Usage

from .translate import SYNTHETIC_MODEL, _int, _usage
from .usertext import INTERRUPT_PREFIX, is_stop_feedback

#: Bytes read per step from the end.
CHUNK_BYTES = 64 * 1024
#: A longer line is passed over (a huge tool result: it carries no usage).
MAX_LINE_BYTES = 16 << 20
#: At most this much of the file's end is read for one run.
MAX_SCAN_BYTES = 256 << 20


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


#: At most this many runs (stretches between prompts or blocked stops) are passed over, newest
#: first, looking for the one a ``Stop`` payload's last text ends (a Stop is captured within a loop or
#: two of its own; each poll of a mismatching text reads this many runs, so it stays small).
MAX_RUNS_BACK = 4


def run_responses(path: str, last_text: str | None = None, skip_prompt: str | None = None) -> list[Response] | None:
    """The responses of the transcript's last run, oldest first; ``None`` when the file is unreadable.

    A run is what lies between two starts (a prompt, or the ``Stop hook feedback:`` line of a
    blocked stop). With ``last_text`` (the ``Stop`` payload's last message), the run is the newest
    one whose last response says that text: the service captures a ``Stop`` after the hook
    returned, by when a blocking hook's feedback, or the next prompt, and the responses after
    them may be in the file. ``[]`` when no run within :data:`MAX_RUNS_BACK` ends so (the last
    response is not written yet): :func:`run_matches` tells the two apart. With ``skip_prompt``
    (a prompt just submitted), a newest run that is that prompt's alone, with no response yet,
    is passed over: the run before it is wanted (the one an Esc aborted).

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
        runs = 0
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
                if _is_prompt(line) or is_stop_feedback(line):
                    # The run's start: its prompt, or the blocked stop it goes on from.
                    found = _gather(best, facts)
                    if (skip_prompt is not None and runs == 0 and not found
                            and _prompt_text(line) == skip_prompt.strip()):
                        runs += 1  # the new prompt itself: the aborted run is before it
                        continue
                    if last_text is None or run_matches(found, last_text):
                        return found
                    runs += 1
                    if runs >= MAX_RUNS_BACK:
                        return []
                    best, facts = {}, {}
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
    found = _gather(best, facts)  # the file's start: the first run
    if last_text is None or run_matches(found, last_text):
        return found
    return []


def _prompt_text(line: dict[str, Any]) -> str:
    """A prompt line's text, stripped (its text blocks joined)."""
    message = line.get("message")
    return _texts(message).strip() if type(message) is dict else ""


def interrupted_results(path: str, skip_prompt: str) -> list[tuple[str, str, int, str]]:
    """The calls of the last run (before ``skip_prompt``) whose result is Claude Code's interrupt marker.

    An Esc during a call: Claude Code writes the call's ``tool_result`` as ``[Request
    interrupted by user for tool use]`` and runs no ``PostToolUse``. Each as (call id, tool,
    the result's bytes, its head), oldest first; read backwards to the run's prompt.
    """
    fd = open_regular(path)
    if fd is None:
        return []
    results: list[tuple[str, int, str]] = []
    names: dict[str, str] = {}
    try:
        skipped = False
        for raw in lines_backward(fd, os.fstat(fd).st_size):
            if b'"assistant"' not in raw and b'"user"' not in raw:
                continue
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if type(line) is not dict or line.get("isSidechain") is True:
                continue
            message = line.get("message")
            content = message.get("content") if type(message) is dict else None
            if line.get("type") == "user":
                if _is_prompt(line) or is_stop_feedback(line):
                    if not skipped and not results and _prompt_text(line) == skip_prompt.strip():
                        skipped = True
                        continue
                    break
                for b in content if type(content) is list else ():
                    if type(b) is dict and b.get("type") == "tool_result" and type(b.get("tool_use_id")) is str:
                        body = b.get("content")
                        text = body if type(body) is str else _texts({"content": body}) if type(body) is list else ""
                        if text.lstrip().startswith(INTERRUPT_PREFIX):
                            results.append((clean(b["tool_use_id"]), len(text.encode()), clean(text)))
            elif line.get("type") == "assistant" and type(content) is list:
                for b in content:
                    if type(b) is dict and b.get("type") == "tool_use" and type(b.get("id")) is str \
                            and type(b.get("name")) is str:
                        names[clean(b["id"])] = clean(b["name"])
    except OSError:
        return []
    finally:
        os.close(fd)
    return [(cid, names.get(cid, ""), n, head) for cid, n, head in reversed(results)]


def run_matches(found: list[Response] | None, last_text: str) -> bool:
    """Whether ``found`` ends with a response saying ``last_text`` (any run does, when it is empty)."""
    if not last_text.strip():
        return True
    return bool(found) and found is not None and found[-1].text.strip() == last_text.strip()


def _gather(best: dict[str, tuple[int, list[int], float | None]], facts: dict[str, list[Any]]) -> list[Response]:
    """One run's responses, oldest first, from what the backward reading kept of them."""
    out = []
    for key in reversed(list(best)):  # found last first
        _o, (a, b, c, d, hour), cost = best[key]
        model, stop, texts = facts[key]
        out.append(Response(model, Usage(a, b, c, d, a + b + c + d, cost, hour), stop, "\n".join(reversed(texts))))
    return out
