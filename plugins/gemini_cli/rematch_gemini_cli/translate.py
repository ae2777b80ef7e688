"""Gemini CLI records to the core's neutral vocabulary.

A session log restates a message each time the harness changes it (a model message
gets its token counts, then its tool calls with their results), under the same
``id``: the newest statement is the message. So a model message is held until a
record of another message follows (or the input runs out: then it is given after
the core's snapshot, and held in the saved state as a :class:`Sealed` reference to
its line, read again by a continuation). A message already given that is restated
later gives only what is new in it (tool calls, results). ``$set`` records update
the metadata; a ``$set`` of ``messages`` (a resume restating the history) gives
only messages not seen before. ``$rewindTo`` (the user rewound the chat) takes
nothing back: the trace says what happened.

A document (older versions) is continued only while the records already imported
are still its first records: the state keeps their count and a running digest, and
a document whose first records differ is imported again whole.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

from rematch_trace.errors import RestartImport
from rematch_trace.host.fs import open_raw
from rematch_trace.host.sealed import Sealed, value_digest
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.text import clean, utf8_len
from rematch_trace.host.timestamps import iso_ms
from rematch_trace.host.vocab import (
    OUTPUT_HEAD_CHARS,
    AssistantMessage,
    ModelRef,
    Neutral,
    Session,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from rematch_trace.importing.reader import read_source

#: The statuses of a finished tool call.
_DONE = ("success", "error", "cancelled")
#: The line Gemini CLI adds to a shell command's output when it exits non-zero.
_EXIT = re.compile(r"(?m)^Exit Code: [1-9][0-9]*$")
#: The opening of the context Gemini CLI injects as the session's first user message.
_CONTEXT = "<session_context>"


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _parts_text(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` of its parts, joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    return "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))


def _responses(content: Any) -> list[dict[str, Any]]:
    """The ``functionResponse`` objects among a content's parts."""
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return []
    out = []
    for p in content:
        fr = p.get("functionResponse") if isinstance(p, dict) else None
        if isinstance(fr, dict):
            out.append(fr)
    return out


def _response_text(response: Any) -> str:
    """A function response's output: its ``output`` or ``error`` text, else its JSON."""
    if isinstance(response, dict):
        for key in ("output", "error"):
            if isinstance(response.get(key), str):
                return str(response[key])
    if isinstance(response, str):
        return response
    try:
        return json.dumps(response, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):  # nested past the encoder's stack: what it is, not its text
        return "(a response nested too deeply to show)"


def _failed(tc: dict[str, Any], out: str) -> bool:
    """Whether a finished call failed: its status, or (a shell command, whose status says only that it
    ran) the ``Exit Code:`` line Gemini CLI adds to the output of a command that exited non-zero."""
    if tc.get("status") != "success":
        return True
    return tc.get("name") == "run_shell_command" and _EXIT.search(out) is not None


def _stable(value: Any) -> Any:
    """What a document's record is compared by: a message whole; the metadata by the fields that
    never change (``lastUpdated``, ``summary`` and the like are rewritten as the chat goes on)."""
    if isinstance(value, dict) and not isinstance(value.get("id"), str):
        return {k: value.get(k) for k in ("sessionId", "projectHash", "startTime", "kind")}
    return value


def _usage(tokens: Any) -> Usage | None:
    """Gemini's counts: ``input`` includes the cached part; thinking is billed as output."""
    if not isinstance(tokens, dict):
        return None

    def n(key: str) -> int:
        v = tokens.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0

    cached = n("cached")
    return Usage(input=max(0, n("input") - cached), output=n("output") + n("thoughts"), cache_read=cached,
                 total=n("total"))


def project_root(source: Source, project_hash: str) -> str:
    """The project folder of a session: the ``.project_root`` beside ``chats/`` (0.61), kept only when
    its SHA-256 is the session's ``projectHash`` (so a stray file cannot name another folder)."""
    folder = source.path.parent.parent
    if source.path.parent.parent.name == "chats":  # a subagent's chats/<parent id>/<id>.jsonl
        folder = folder.parent
    try:
        with open_raw(folder / ".project_root") as f:
            root = f.read(64 * 1024).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError, ValueError):
        return ""
    if hashlib.sha256(root.encode()).hexdigest() == project_hash:
        return root
    return ""


class _Translator:
    """One source's translation; ``state`` is the plugin state the core saves."""

    def __init__(self, source: Source, state: dict[str, Any]) -> None:
        self.source = source
        self.state = state
        self.document = source.path.name.endswith(".json")
        #: Message ids already given (-> 1; a dict changed in place, not rebuilt per record).
        self.given: dict[str, int] = state.setdefault("given", {})
        #: Call id -> 1 once its result is given, 0 while it waits for it.
        self.calls: dict[str, int] = state.setdefault("calls", {})
        self.pending: Sealed | None = None

    # --- the state a continuation starts from -------------------------------------------
    def _restore_pending(self) -> None:
        """A log's held model message, read again at its line (checked against its digest)."""
        saved = self.state.get("pend")
        if saved is None or self.document:
            return  # a document's held message is its first record past the settled ones: read again as new
        at = saved.get("at") if isinstance(saved, dict) else None
        # [line offset, index in the line's $set messages, or -1 for a message line]
        if (not isinstance(at, list) or len(at) != 2 or not all(type(x) is int for x in at)
                or at[0] < 0 or at[1] < -1):
            raise RestartImport("gemini_cli: a held message has no place")
        items = read_source(self.source, at[0])
        try:
            item = next(items, None)
        finally:
            items.close()  # type: ignore[attr-defined]
        value: Any = item.value if isinstance(item, RawRecord) else None
        if at[1] >= 0:
            restated = value.get("$set") if isinstance(value, dict) else None
            msgs = restated.get("messages") if isinstance(restated, dict) else None
            value = msgs[at[1]] if isinstance(msgs, list) and at[1] < len(msgs) else None
        if not isinstance(value, dict) or not Sealed(value, at).matches(saved):
            raise RestartImport("gemini_cli: the held message's line changed")
        self.pending = Sealed(value, at)

    # --- records -----------------------------------------------------------------------
    def run(self, records: Iterator[RawRecord]) -> Iterator[Neutral]:
        """Translate ``records``; a document's settled records (``n``, digest ``dg``) are checked, not given again."""
        self._restore_pending()
        skip = self.state.get("n", 0) if self.document else 0
        if not isinstance(skip, int) or isinstance(skip, bool) or skip < 0:
            raise RestartImport("gemini_cli: a saved state of another shape")
        chain = ""  # the running digest of the records so far (the saved one is of the first ``skip``)
        seen = 0
        for raw in records:
            if self.document:
                before = chain
                chain = hashlib.sha256((chain + value_digest(_stable(raw.value))).encode()).hexdigest()
                seen += 1
                if seen <= skip:
                    if seen == skip and chain != self.state.get("dg"):
                        raise RestartImport("gemini_cli: the document's first records changed")
                    continue
            yield from self._record(raw)
            if self.document:
                # Settled: every record but a model message still held (the harness changes it in
                # place until the next message comes); a continuation reads that one again as new.
                self.state["n"], self.state["dg"] = (seen, chain) if self.pending is None else (seen - 1, before)
                self.state["pend"] = None
            else:
                self.state["pend"] = self.pending
        if seen < skip:
            raise RestartImport("gemini_cli: the document lost records")
        # The input ran out: the core has its snapshot (the held message still held in it).
        if self.pending is not None:
            yield from self._flush()

    def _record(self, raw: RawRecord) -> Iterator[Neutral]:
        v = raw.value
        if not isinstance(v, dict):
            return
        if isinstance(v.get("id"), str):
            yield from self._message(v, [raw.offset, -1])
            return
        if isinstance(v.get("sessionId"), str) and isinstance(v.get("projectHash"), str):
            if "meta" not in self.state:
                self.state["meta"] = self._meta(v)
            return
        if "meta" not in self.state:
            return  # nothing is given before the session's metadata
        if isinstance(v.get("$set"), dict):
            msgs = v["$set"].get("messages")
            for i, m in enumerate(msgs if isinstance(msgs, list) else ()):
                if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"] not in self.given:
                    yield from self._message(m, [raw.offset, i])
        elif isinstance(v.get("$rewindTo"), str) and self.pending is not None:
            yield from self._flush()

    def _meta(self, v: dict[str, Any]) -> list[Any]:
        """What the session record is made of, kept until the session says something: Gemini CLI
        starts a file for every start, resumed or not, and one that never gets a prompt is no session."""
        sub = self.source.agent_kind == "sub" or v.get("kind") == "subagent"
        cwd = project_root(self.source, v["projectHash"])
        dirs = v.get("directories")
        if not cwd and isinstance(dirs, list) and dirs and isinstance(dirs[0], str):
            cwd = dirs[0]
        parent = self.source.path.parent.name if sub and self.source.path.parent.parent.name == "chats" else None
        return [clean(v["sessionId"]), iso_ms(v.get("startTime")), cwd, sub, parent]

    def _open(self) -> Iterator[Neutral]:
        """The session record, before the first record that is the session's."""
        if self.state.get("open"):
            return
        self.state["open"] = 1
        sid, t, cwd, sub, parent = self.state["meta"]
        yield Session("", t, sid, cwd=cwd, agent_kind="sub" if sub else "main", parent_session_id=parent)

    def _message(self, m: dict[str, Any], at: list[int]) -> Iterator[Neutral]:
        """One message (``at``: its line's offset, and its index in a ``$set`` of messages or -1)."""
        mid = m["id"]
        if self.pending is not None:
            if self.pending.value.get("id") == mid:
                self.pending = Sealed(m, at)  # the newest statement of the held message
                return
            yield from self._flush()
        if "meta" not in self.state:
            return
        typ = m.get("type")
        if mid in self.given:
            if typ == "gemini":
                yield from self._calls(m)
            return
        if typ == "gemini":
            self.pending = Sealed(m, at)
            return
        self.given[mid] = 1
        t = iso_ms(m.get("timestamp"))
        if typ != "user":
            return  # info, warning and error notes of the harness's own
        text = _parts_text(m.get("content"))
        if text.lstrip().startswith(_CONTEXT):
            return  # the context Gemini CLI injects (date, system, folder listing): no person typed it
        if text:
            yield from self._open()
            yield UserMessage("", t, text=text)
        for fr in _responses(m.get("content")):
            cid = fr.get("id")
            if isinstance(cid, str) and self.calls.get(cid) != 1:
                yield from self._open()
                yield self._result(t, cid, _response_text(fr.get("response")), None, _str(fr.get("name")))

    def _flush(self) -> Iterator[Neutral]:
        """Give the held model message."""
        assert self.pending is not None
        m = self.pending.value
        self.pending = None
        self.given[m["id"]] = 1
        model = m.get("model")
        yield from self._open()
        yield from self._calls(m, first=True, model=ModelRef("google", model) if isinstance(model, str) else None)

    def _calls(self, m: dict[str, Any], first: bool = False, model: ModelRef | None = None) -> Iterator[Neutral]:
        """A model message's new tool calls (with its text, usage and model when ``first``), then their results."""
        t = iso_ms(m.get("timestamp"))
        listed = m.get("toolCalls")
        tcs = [tc for tc in listed if isinstance(tc, dict) and isinstance(tc.get("id"), str)] if isinstance(listed, list) else []
        new = [tc for tc in tcs if tc["id"] not in self.calls]
        if first or new:
            calls = tuple(ToolCall(tc["id"], _str(tc.get("name")), tc.get("args")) for tc in new)
            for tc in new:
                self.calls[tc["id"]] = 0
            text = _parts_text(m.get("content")) if first else ""
            usage = _usage(m.get("tokens")) if first else None
            yield AssistantMessage("", t, model=model, usage=usage, text=text, tool_calls=calls)
        for tc in tcs:
            if self.calls.get(tc["id"]) == 1 or tc.get("status") not in _DONE:
                continue
            frs = _responses(tc.get("result"))
            out = "\n".join(_response_text(fr.get("response")) for fr in frs) if frs else _str(tc.get("resultDisplay"))
            yield self._result(iso_ms(tc.get("timestamp")) or t, tc["id"], out, _failed(tc, out), None)

    def _result(self, t: int | None, cid: str, out: str, is_error: bool | None, tool: str | None) -> ToolResult:
        known = cid in self.calls
        self.calls[cid] = 1
        return ToolResult("", t, cid, utf8_len(out), out[:OUTPUT_HEAD_CHARS], is_error,
                          tool=None if known else (tool or None))


def translate(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
    """The neutral records of ``records`` (see the module docstring)."""
    return _Translator(source, state).run(records)


__all__ = ["project_root", "translate"]
