"""The call id of a tool payload that carries none (Claude Code before 2.0.43), read from the transcript.

Payloads of ``PreToolUse``/``PostToolUse``/``PostToolUseFailure``/``PermissionDenied`` name their
call (``tool_use_id``) from Claude Code 2.0.43 on. Before, they carry the tool's name and input
only; the transcript's assistant line with the ``tool_use`` block carries the id. The newest
``tool_use`` of that name whose input equals the payload's is the call (a hook runs for the call
being made). The transcript is read backwards from its end, at most :data:`SCAN_BYTES`; an id
not found (the line not written yet, or past that) is looked for again for at most
:data:`WAIT_S`, then given up: the caller records what it can and the core logs the rest.
"""

from __future__ import annotations

import os
import time
from typing import Any

import orjson

from rematch_trace.host.text import clean

from .runusage import lines_backward, open_regular

#: How much of the transcript's end is searched for the call.
SCAN_BYTES = 8 << 20
#: How long a payload waits for its call's line to reach the transcript, and how often it looks.
WAIT_S = 0.3
POLL_S = 0.02


def _find(path: str, name: str, tool_input: Any) -> str | None:
    fd = open_regular(path)
    if fd is None:
        return None
    needle = orjson.dumps(name)
    try:
        for raw in lines_backward(fd, os.fstat(fd).st_size, SCAN_BYTES):
            if b'"tool_use"' not in raw or needle not in raw:
                continue
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            message = line.get("message") if type(line) is dict else None
            content = message.get("content") if type(message) is dict else None
            if type(content) is not list:
                continue
            for block in reversed(content):
                if (type(block) is dict and block.get("type") == "tool_use" and block.get("name") == name
                        and block.get("input") == tool_input and type(block.get("id")) is str and block["id"]):
                    return clean(block["id"])
    except OSError:
        return None
    finally:
        os.close(fd)
    return None


def call_id_from_transcript(path: str, name: str, tool_input: Any) -> str | None:
    """The id of the newest ``tool_use`` named ``name`` with input ``tool_input``; ``None`` when none is found."""
    if not path or not name:
        return None
    end = time.monotonic() + WAIT_S
    while True:
        found = _find(path, name, tool_input)
        if found is not None or time.monotonic() >= end:
            return found
        time.sleep(POLL_S)


#: A subagent file modified longer ago than this is not searched (its agent made no call just now).
RECENT_S = 120.0
#: How much of a subagent file's end is searched for the call.
SUB_TAIL_BYTES = 256 * 1024
#: At most this many subagent files are searched for one payload.
MAX_SUB_FILES = 16


def _candidates(transcript: str, session_id: str) -> list[str]:
    """The session's subagent files written to lately: ``<sid>/subagents/agent-*.jsonl`` (2.1),
    ``agent-*.jsonl`` beside the transcript (2.0), newest first."""
    folder = os.path.dirname(transcript)
    found: list[tuple[float, str]] = []
    now = time.time()
    for d in (os.path.join(folder, session_id, "subagents"), folder):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for n in names:
            if n.startswith("agent-") and n.endswith(".jsonl"):
                p = os.path.join(d, n)
                try:
                    mtime = os.stat(p).st_mtime
                except OSError:
                    continue
                if now - mtime <= RECENT_S:
                    found.append((mtime, p))
    found.sort(reverse=True)
    return [p for _m, p in found[:MAX_SUB_FILES]]


def subagent_of_call(transcript: str, session_id: str, call_id: str) -> str | None:
    """The subagent (its file's ``agent-<id>``) whose file holds the call ``call_id``; ``None`` when none does.

    For a tool payload without ``agent_id`` (versions that did not name the subagent in its
    tool payloads): such a payload carries the main session's id, and its call is in the
    subagent's file, not in the main transcript. Only the session's subagent files written to in
    the last :data:`RECENT_S` seconds are searched, each at its end: a main session's call costs
    a folder listing when no subagent is running.
    """
    if not transcript or not session_id or not call_id:
        return None
    needle = b'"' + call_id.encode("utf-8", "replace") + b'"'
    sid_needle = b'"sessionId":"' + session_id.encode("utf-8", "replace") + b'"'
    for path in _candidates(transcript, session_id):
        fd = open_regular(path)
        if fd is None:
            continue
        try:
            size = os.fstat(fd).st_size
            tail = os.pread(fd, SUB_TAIL_BYTES, max(0, size - SUB_TAIL_BYTES))
        except OSError:
            continue
        finally:
            os.close(fd)
        for raw in tail.split(b"\n"):
            if needle in raw and b'"tool_use"' in raw and (sid_needle in raw or b"/subagents/" in path.encode()):
                name = os.path.basename(path)[len("agent-"):-len(".jsonl")]
                return clean(name) or None
    return None
