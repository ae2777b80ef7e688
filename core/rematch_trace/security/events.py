"""The security event stream: normalized event v1, one session at a time.

From the same neutral records that feed the trace, :class:`EventSink` makes the
events of ``events/<session_id>.jsonl``: ``session_start``, ``user_prompt``,
``pre_tool_use`` (one per tool call), ``post_tool_use`` / ``post_tool_failure``
(one per result, paired with its call by id), ``instruction_loaded`` (an
instruction file the harness shows being loaded) and ``session_end``.
``docs/security-events.md`` documents every field; ``docs/event-v1.schema.json``
is the schema of one line.

The original input stays transient: it is read here to compute the action's
fingerprint, summary and risk features, and then dropped. Neither an event nor
the sink's saved state holds it; a pending call keeps only its name, action
type, fingerprint, redacted summary and features.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

from rematch_trace.errors import NonExactNumber
from rematch_trace.host import vocab
from rematch_trace.host.exactnum import ExactNumber
from rematch_trace.host.facade import Host
from rematch_trace.host.source import Source
from rematch_trace.security.fingerprint import SessionFingerprints
from rematch_trace.security.redact import PLACEHOLDER, Redactor
from rematch_trace.security.risk import command_text, file_paths, risk_features
from rematch_trace.security.sink_state import SinkState
from rematch_trace.security.strings import TEXT_LIMIT, input_strings

SCHEMA_VERSION = 1
#: The longest ``args_summary``, in characters.
SUMMARY_LIMIT = 200
#: The namespace of event ids (UUIDv5 over agent, session, stream position).
EVENT_NAMESPACE = uuid.UUID("6f1c2f0e-4d2b-5a8e-9c57-3e0b8d1a7c42")
_NAMESPACE_BYTES = EVENT_NAMESPACE.bytes
#: The longest turn id or permission mode kept, in characters.
ID_LIMIT = 128
#: ``strings_of``'s default cut (kept for callers); the event sink's risk rules read an input's text whole.
RISK_TEXT_LIMIT = TEXT_LIMIT
#: ``hook_id`` of a call rematch's own verdict denied (``rematch_trace.live.capture.VERDICT_HOOK_ID``):
#: such a block is a ``tool_blocked`` event.
VERDICT_HOOK_ID = "rematch"
#: Blocked calls kept for a result that may still follow.
_BLOCKED_KEPT = 64
#: The code at the head of rematch's block reason (``policy:<rule id>``, ``approval:expired``...).
_RULE_CODE = re.compile(r"[a-z_]+:[A-Za-z0-9_.:-]{1,80}")

_PLACEHOLDER_START = PLACEHOLDER.split("{", 1)[0]
_MIN_MS = -62135596800000  # 0001-01-01T00:00:00Z
_MAX_MS = 253402300799999  # 9999-12-31T23:59:59.999Z


_SECOND_TEXT: dict[int, str] = {}


def rfc3339(ms: int) -> str:
    """Unix milliseconds as RFC 3339 UTC with milliseconds and ``Z``."""
    ms = min(max(int(ms), _MIN_MS), _MAX_MS)
    second, milli = divmod(ms, 1000)
    # Events of a session crowd into the same seconds: format each second once.
    text = _SECOND_TEXT.get(second)
    if text is None:
        try:
            g = time.gmtime(second)
            text = f"{g.tm_year:04d}-{g.tm_mon:02d}-{g.tm_mday:02d}T{g.tm_hour:02d}:{g.tm_min:02d}:{g.tm_sec:02d}."
        except (OverflowError, OSError, ValueError):  # beyond the platform's time_t
            moment = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(seconds=second)
            text = moment.strftime("%Y-%m-%dT%H:%M:%S.")
        if len(_SECOND_TEXT) >= 4096:
            _SECOND_TEXT.clear()
        _SECOND_TEXT[second] = text
    return f"{text}{milli:03d}Z"


def _uuid_text(digest: bytes) -> str:
    """A SHA-1 digest as UUIDv5 text: version nibble 5, variant bits 10."""
    return _uuid_hex(digest.hex())


#: The variant nibble (bits 10) that stands in for each hex digit: its low two bits kept.
_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


def _uuid_hex(h: str) -> str:
    """:func:`_uuid_text` of a digest given as lowercase hex (one C call fewer per event)."""
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


def _cut(text: str, limit: int = SUMMARY_LIMIT) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters (never inside a placeholder), and whether it was."""
    text = " ".join(text.split()) if ("\n" in text or "\t" in text or "  " in text) else text
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    open_at = cut.rfind(_PLACEHOLDER_START)
    if open_at >= 0 and "]" not in cut[open_at:]:
        close = text.find("]", open_at)
        cut = text[: close + 1] if close >= 0 and close < limit + 40 else text[:open_at]
    return cut + "…", True


def _url_summary(url: str) -> str:
    """A URL as host and path (no user info, no query or fragment, which carry tokens)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return ""
    if not parts.netloc:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{host}{parts.path}"


def summarize(
    action_type: str, tool: str, tool_input: Any, *, command: str | None = None, paths: list[str] | None = None
) -> str:
    """A short human-readable, not yet redacted, summary of one action.

    ``command`` and ``paths`` are :func:`command_text` and :func:`file_paths`
    of the input when the caller has them (the risk rules read them too).
    """
    d = tool_input if isinstance(tool_input, dict) else {}
    if action_type == "shell_exec":
        cmd = command_text(tool_input) if command is None else command
        if cmd:
            return cmd
    elif action_type in ("file_read", "file_write", "file_edit"):
        paths = file_paths(tool_input) if paths is None else paths
        if paths:
            return ", ".join(paths)
        pattern = d.get("pattern") or d.get("glob") or d.get("query")
        if isinstance(pattern, str):
            where = d.get("path")
            return f"{pattern} in {where}" if isinstance(where, str) and where else pattern
    elif action_type == "network":
        url = d.get("url") or d.get("uri")
        if isinstance(url, str) and url:
            method = d.get("method")
            prefix = f"{method.upper()} " if isinstance(method, str) and method else ""
            return prefix + _url_summary(url)
        query = d.get("query") or d.get("q")
        if isinstance(query, str):
            return f"search: {query}"
    elif action_type == "subagent":
        kind = d.get("subagent_type") or d.get("agent") or d.get("agent_type")
        desc = d.get("description") or d.get("prompt") or d.get("task")
        parts = [p for p in (kind, desc) if isinstance(p, str) and p]
        if parts:
            return ": ".join(parts)
    if isinstance(tool_input, str):
        return tool_input
    if d:
        return " ".join(f"{k}={_scalar(v)}" for k, v in list(d.items())[:8])
    return ""


#: The action types whose input has a command (:func:`command_text`), and those whose input names no file path.
_COMMAND_ACTIONS = frozenset(("shell_exec", "other", "mcp"))
_NO_PATH_ACTIONS = frozenset(("shell_exec", "network"))


def _is_value_of(text: str, d: dict[Any, Any]) -> bool:
    """Whether ``text`` is (the very object of) one of ``d``'s values."""
    for v in d.values():  # noqa: SIM110 - a plain loop: no generator to set up per call
        if v is text:
            return True
    return False


def _scalar(v: Any) -> str:
    if isinstance(v, str):
        return v if len(v) <= 80 else v[:80] + "…"
    if isinstance(v, bool | int | float | ExactNumber) or v is None:
        return str(v)
    return "[…]" if isinstance(v, list) else "{…}"


class EventSink:
    """Turns one stream of neutral records into normalized v1 events (see the module docstring).

    :param source: the transcript the records come from.
    :param session: the stream's :class:`~rematch_trace.host.vocab.Session` record.
    :param host: gives action types (``classify_action``) and repository roots.
    :param redactor: the shared redactor.
    :param state: a state from :meth:`state` to continue from.
    """

    def __init__(
        self,
        source: Source,
        session: vocab.Session,
        *,
        host: Host,
        redactor: Redactor,
        state: SinkState | None = None,
    ) -> None:
        self.source = source
        self.session = session
        self.host = host
        self.redactor = redactor
        self.agent = source.harness
        sub = session.agent_kind == "sub" or source.agent_kind == "sub"
        self.agent_sub_id: str | None = session.session_id if sub else None
        # A subagent's events belong to the session that spawned it, when known.
        self.source_session_id = (session.parent_session_id or session.session_id) if sub else session.session_id
        self.cwd = session.cwd or ""
        self.repo_root: str | None = host.place(self.cwd).repo if self.cwd else None
        # Folders whose deletion is the repository's (risk feature repository_deletion).
        self._roots = tuple(os.path.normpath(p) for p in (self.repo_root, self.cwd) if p and os.path.isabs(p))
        self._fingerprint = SessionFingerprints(self.agent, session.session_id, self.cwd, self.agent_sub_id)
        s = state or SinkState(t=session.t)
        self.n: int = s.n
        self.t: int | None = s.t
        self.started: bool = s.started
        self.calls: dict[str, list[Any]] = s.calls
        self.blocked_calls: dict[str, list[Any]] = s.blocked_calls
        self.blocked: int = s.blocked
        self.turn: str | None = s.turn  # the harness's turn id the records belong to
        self.mode: str | None = s.mode  # the harness's permission mode in force
        # Event ids are UUIDv5 of "<agent>\x1f<session>\x1f<n>": the same prefix for every event.
        prefix = f"{self.agent}\x1f{session.session_id}\x1f".encode("utf-8", "surrogatepass")
        self._id_hash = hashlib.sha1(_NAMESPACE_BYTES + prefix)
        # Consecutive events mostly share a time: format it once.
        self._t_ms: int | None = None
        self._t_text = ""
        # ...and the text of the last minute formatted ("...T12:34:"), from its first ms:
        # a session's events crowd into the same minutes.
        self._min_ms = _MAX_MS + 1
        self._min_text = ""
        # Every event's fields in order, the session's constants filled in: each event is a copy.
        self._template: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "event_id": None,
            "agent": self.agent,
            "source_session_id": self.source_session_id,
            "agent_sub_id": self.agent_sub_id,
            "source_turn_id": None,
            "source_tool_call_id": None,
            "kind": None,
            "occurred_at": None,
            "cwd": self.cwd,
            "repo_root": self.repo_root,
            "tool_name": None,
            "action_type": None,
            "args_summary": None,
            "risk_features": None,
            "redaction_count": 0,
            "raw_input_truncated": False,
            "action_fingerprint": None,
            "metadata": None,
        }

    def state(self) -> SinkState:
        """The state (no original input; saved as JSON); pass it back as ``state=``."""
        return SinkState(n=self.n, t=self.t, started=self.started, calls=self.calls, turn=self.turn, mode=self.mode,
                         blocked_calls=self.blocked_calls, blocked=self.blocked)

    # -- events --------------------------------------------------------------------------

    def _event(
        self,
        kind: str,
        turn: str | None,
        call_id: str | None,
        tool: str | None,
        action: str | None,
        summary: str | None,
        features: list[str],
        redactions: int,
        cut: bool,
        fingerprint: str | None,
        metadata: dict[str, Any],
    ) -> dict[str, Any]:
        # Positional arguments: an event per record, and keyword matching costs more than the rest.
        n = self.n
        self.n = n + 1
        # Every id of the session hashes the same prefix: hash it once, then copy.
        h = self._id_hash.copy()
        h.update(b"%d" % n)
        t = self.t or 0
        if t != self._t_ms:
            self._set_time(t)
        if self.mode is not None:
            metadata["host_permission_mode"] = self.mode
        # A copy of the session's template keeps its key order and constants; the rest is set in place.
        event = self._template.copy()
        event["event_id"] = _uuid_hex(h.hexdigest())
        event["source_turn_id"] = turn
        event["source_tool_call_id"] = call_id
        event["kind"] = kind
        event["occurred_at"] = self._t_text
        event["tool_name"] = tool
        event["action_type"] = action
        event["args_summary"] = summary
        event["risk_features"] = features
        event["redaction_count"] = redactions
        event["raw_input_truncated"] = cut
        event["action_fingerprint"] = fingerprint
        event["metadata"] = metadata
        return event

    def _set_time(self, t: int) -> None:
        """Format the time of the events to come (``occurred_at``), from the last minute's text when it holds ``t``."""
        self._t_ms = t
        if type(t) is int and self._min_ms <= t < self._min_ms + 60000:
            second, milli = divmod(t - self._min_ms, 1000)
            self._t_text = f"{self._min_text}{second:02d}.{milli:03d}Z"
        else:
            self._t_text = rfc3339(t)
            if type(t) is int and _MIN_MS <= t <= _MAX_MS - 60000:
                self._min_ms = t - t % 60000
                self._min_text = self._t_text[:-7]

    def _start(self, out: list[dict[str, Any]]) -> None:
        self.started = True
        meta: dict[str, Any] = {"agent_kind": "sub" if self.agent_sub_id else "main"}
        if self.session.agent_name:
            meta["agent_name"] = self._redact(self.session.agent_name)[0][:SUMMARY_LIMIT]
        if self.session.harness_version:
            meta["harness_version"] = self.session.harness_version[:64]
        out.append(self._event("session_start", None, None, None, None, None, [], 0, False, None, meta))

    def _redact(self, text: str) -> tuple[str, int]:
        if not isinstance(text, str):
            return "", 0
        return self.redactor.redact(text)

    def feed(self, rec: vocab.Neutral) -> list[dict[str, Any]]:
        """Take one neutral record; return the events it makes, in order."""
        out: list[dict[str, Any]] = []
        if type(rec) is vocab.TurnStarted:
            self.turn = rec.turn_id[:ID_LIMIT] if isinstance(rec.turn_id, str) and rec.turn_id else None
            return out
        if type(rec) is vocab.PermissionMode:
            if isinstance(rec.mode, str) and rec.mode:
                self.mode = self._redact(rec.mode[:ID_LIMIT])[0]
            return out
        t = rec.t
        if type(t) is int:
            self.t = t
        elif t is not None:
            try:
                self.t = int(t)
            except (TypeError, ValueError, OverflowError):
                pass
        if isinstance(rec, vocab.Session):
            # session_start waits for a time when the Session record has none.
            if not self.started and self.t is not None:
                self._start(out)
            return out
        if not self.started:
            self._start(out)
        # The record types are disjoint: the most frequent first.
        if isinstance(rec, vocab.ToolResult):
            out.append(self._post(rec))
        elif isinstance(rec, vocab.AssistantMessage):
            for call in rec.tool_calls:
                out.append(self._pre(call))
        elif isinstance(rec, vocab.UserMessage):
            # Only the summary is written: redact what can reach it, with a margin.
            text, n = self._redact(rec.text[: SUMMARY_LIMIT + 1024])
            summary, cut = _cut(text)
            out.append(self._event("user_prompt", self.turn, None, None, None, summary, [], n, cut, None, {}))
        elif isinstance(rec, vocab.ToolStarted):
            if rec.call.id not in self.calls:
                out.append(self._pre(rec.call))
        elif isinstance(rec, vocab.CallBlocked):
            if rec.hook_id == VERDICT_HOOK_ID:
                out.append(self._blocked(rec))
            else:
                # A harness's own permission denial, or a call left without a result: no event (as before).
                self.forget_call(rec.call_id)
        elif isinstance(rec, vocab.Instructions) and isinstance(rec.path, str) and rec.path:
            path, n = self._redact(rec.path)
            summary, cut = _cut(path)
            out.append(self._event("instruction_loaded", self.turn, None, None, None, summary, [], n, cut, None, {}))
        elif isinstance(rec, vocab.SessionEnded) and rec.lifetime is True:
            # An imported process lifetime's end (a resume follows): its session_end, as live writes one
            # at each SessionEnd; the stream goes on after it.
            out.extend(self.finish())
        return out

    def finish(self) -> list[dict[str, Any]]:
        """The session's last events: ``session_end`` (and ``session_start`` if none was made)."""
        out: list[dict[str, Any]] = []
        if not self.started:
            self._start(out)
        meta: dict[str, Any] = {"unanswered_calls": len(self.calls)}
        if self.blocked:
            # Only when some call was blocked: a session without blocks (every import) keeps its bytes.
            meta["blocked_calls"] = self.blocked
        out.append(self._event("session_end", None, None, None, None, None, [], 0, False, None, meta))
        return out

    def _pre(self, call: vocab.ToolCall) -> dict[str, Any]:
        call_id = call.id if isinstance(call.id, str) else str(call.id)
        entry = self.digest_call(call)
        self.take_call(call_id, entry)
        return self.pre_event(call_id, entry)

    def digest_call(self, call: vocab.ToolCall) -> list[Any]:
        """What the stream keeps of a call, from its original input, which it then drops.

        ``[tool, action type, fingerprint, redacted summary, risk features,
        redaction count, summary cut, fingerprint error]``: JSON-able, no
        original input.
        """
        name = call.name if isinstance(call.name, str) else ""
        call_id = call.id if isinstance(call.id, str) else str(call.id)
        tool_input = call.input
        action = self.host.action_type(self.source, name, tool_input)
        fp_error: str | None = None
        try:
            fp: str | None = self._fingerprint(self.turn, call_id, name, tool_input)
        except NonExactNumber:
            fp = None
            fp_error = "tool input holds a number with no exact representation; not fingerprinted"
        redacted, redactions = self.redactor.redact_value_counted(tool_input)
        # Every string of the input, whole (from the redactor's walk): padding before or after a
        # credential must not push it out of what the risk rules read.
        text = input_strings(tool_input).joined()
        # The summary and the risk rules read the same command and paths: take them once.
        command = command_text(tool_input) if action in _COMMAND_ACTIONS else None
        paths = file_paths(tool_input) if action not in _NO_PATH_ACTIONS else None
        features = risk_features(action, name, tool_input, text, redactions=redactions, command=command, paths=paths,
                                 roots=self._roots, cwd=self.cwd, root=self.repo_root or self.cwd)
        raw_summary = summarize(action, name, tool_input, command=command, paths=paths)
        if redacted is tool_input and type(redacted) is dict and _is_value_of(raw_summary, redacted):
            # The summary is one of the input's strings, and the input holds no trigger anywhere.
            summary, cut = _cut(raw_summary)
        else:
            summary, cut = _cut(self._redact(raw_summary)[0])
        return [name, action, fp, summary, features, redactions, cut, fp_error, self.turn]

    def take_call(self, call_id: str, entry: list[Any]) -> None:
        """Expect the result of a call digested by :meth:`digest_call`."""
        self.calls[call_id] = entry
        while len(self.calls) > vocab.MAX_PENDING_CALLS:
            del self.calls[next(iter(self.calls))]

    def forget_call(self, call_id: str) -> None:
        """A call that will have no result (blocked): no longer pending."""
        self.calls.pop(call_id, None)

    def pre_event(self, call_id: str, entry: list[Any]) -> dict[str, Any]:
        """The ``pre_tool_use`` event of a call digested by :meth:`digest_call`."""
        name, action, fp, summary, features, redactions, cut, fp_error, *rest = entry
        meta: dict[str, Any] = {"fingerprint_error": fp_error} if fp_error else {}
        return self._event(
            "pre_tool_use",
            rest[0] if rest else None,  # the turn the call was digested in
            call_id, name, action, summary, list(features) if features else [], redactions, cut, fp, meta,
        )

    def _call_fields(self, rec: vocab.CallBlocked | vocab.ToolResult, pending: list[Any] | None,
                     meta: dict[str, Any]) -> tuple[Any, ...]:
        """(name, action, fingerprint, summary, features, redactions, cut, turn) of the call ``rec`` ends: its
        digest when the call was seen (``pending``), else what the end names (``meta["call_seen"]`` false);
        a fingerprint's failure is noted in ``meta``."""
        if pending is None:
            name = rec.tool if isinstance(rec.tool, str) else ""
            meta["call_seen"] = False
            action = self.host.action_type(self.source, name, None) if name else "other"
            return name, action, None, None, [], 0, False, self.turn
        name, action, fp, summary, features, redactions, cut, fp_error, *rest = pending
        if fp_error:
            meta["fingerprint_error"] = fp_error
        # (a state saved before turns were kept has none)
        return name, action, fp, summary, features, redactions, cut, rest[0] if rest else None

    def _blocked(self, rec: vocab.CallBlocked) -> dict[str, Any]:
        """The ``tool_blocked`` event of a call a hook blocked: the call's fields, who blocked it and why."""
        call_id = rec.call_id if isinstance(rec.call_id, str) else str(rec.call_id)
        pending = self.calls.pop(call_id, None)
        self.blocked += 1
        by = rec.hook_id if isinstance(rec.hook_id, str) else ""
        reason, _n = self._redact(rec.reason if isinstance(rec.reason, str) else "")
        reason = _cut(reason)[0]
        meta: dict[str, Any] = {"blocked_by": by[:ID_LIMIT], "block_reason": reason}
        code = reason.split(": ", 1)[0]
        if _RULE_CODE.fullmatch(code):
            meta["rule"] = code  # the verdict's reason: policy:<id>, approval:<state>...
        if pending is not None:
            # Kept: a harness may still report a result for the call it was told to deny.
            self.blocked_calls[call_id] = pending
            while len(self.blocked_calls) > _BLOCKED_KEPT:
                del self.blocked_calls[next(iter(self.blocked_calls))]
        name, action, fp, summary, features, redactions, cut, turn = self._call_fields(rec, pending, meta)
        return self._event(
            "tool_blocked", turn, call_id, name, action, summary, list(features) if features else [], redactions, cut,
            fp, meta,
        )

    def verdict_event(self, call_id: str, verdict: str, rule: str, approval_id: str) -> dict[str, Any]:
        """The ``tool_verdict`` event of rematch's verdict on a call that was not denied: ``hold`` (the
        service held it for a person) or ``approve`` (a person approved it), with the call's fields.

        Its id is UUIDv5 over the call and the verdict, not the stream's position, and it takes no
        position: the other events keep the ids an import of the same transcript gives them, and an
        import that replaces a live stream carries it over under the same id
        (:func:`verdict_lines`).
        """
        pending = self.calls.get(call_id) or self.blocked_calls.get(call_id)
        meta: dict[str, Any] = {"verdict": verdict, "rule": rule[:ID_LIMIT], "approval_id": approval_id[:ID_LIMIT]}
        if pending is None:
            name, action, fp, summary, features, redactions, cut = "", "other", None, None, [], 0, False
            turn = self.turn
            meta["call_seen"] = False
        else:
            name, action, fp, summary, features, redactions, cut, _fp_error, *rest = pending
            turn = rest[0] if rest else None
        n = self.n
        event = self._event("tool_verdict", turn, call_id, name, action, summary, list(features) if features else [],
                            redactions, cut, fp, meta)
        self.n = n
        key = f"{self.agent}\x1f{self.session.session_id}\x1fverdict\x1f{call_id}\x1f{verdict}"
        event["event_id"] = str(uuid.uuid5(EVENT_NAMESPACE, key))
        return event

    def _post(self, rec: vocab.ToolResult) -> dict[str, Any]:
        call_id = rec.call_id if isinstance(rec.call_id, str) else str(rec.call_id)
        pending = self.calls.pop(call_id, None)
        if pending is None and self.blocked_calls:
            pending = self.blocked_calls.pop(call_id, None)
        meta: dict[str, Any] = {}
        name, action, fp, summary, features, redactions, cut, turn = self._call_fields(rec, pending, meta)
        is_error = bool(rec.is_error) if rec.is_error is not None else bool(rec.error_class)
        if is_error:
            meta["error_class"] = vocab.result_error_class(rec)
        return self._event(
            "post_tool_failure" if is_error else "post_tool_use",
            turn, call_id, name, action, summary, list(features) if features else [], redactions, cut, fp, meta,
        )


#: The marker of a ``tool_verdict`` event's line (events are written by orjson: no spaces).
VERDICT_KIND = b'"kind":"tool_verdict"'


def verdict_lines(stream: bytes) -> list[bytes]:
    """The ``tool_verdict`` lines of an event stream's bytes (each with its newline), in order.

    What an import that replaces a live session's stream carries over: the transcript does not
    say what rematch's verdicts were, only the live stream does.
    """
    return [line if line.endswith(b"\n") else line + b"\n"
            for line in stream.splitlines() if VERDICT_KIND in line and line.startswith(b"{")]


__all__ = ["EVENT_NAMESPACE", "SCHEMA_VERSION", "VERDICT_KIND", "EventSink", "rfc3339", "summarize", "verdict_lines"]
