"""One session's trace and security events as spans, in the GenAI semantic conventions' shape.

Plain data (:class:`SpanData`), no OpenTelemetry import: :mod:`rematch_trace.export.otlp` turns
it into the SDK's spans. Every name and mapping here is listed in docs/otel.md, with the revision
of the conventions it follows (:data:`SEMCONV_REVISION`).

One pass over the trace: each ``turn_end`` is a ``chat`` span, each ``tool_result`` (and each
``tool_blocked``) an ``execute_tool`` span, all under the session's ``invoke_agent`` span; inputs'
prelabels, marks, model changes and flags are events of the session's span; the security
stream's risk features and rematch's verdicts are events of the tool span they concern.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs
import orjson

from rematch_trace.export.keys import Ids

#: The OpenTelemetry GenAI semantic conventions followed: the ``semantic-conventions-genai``
#: repository at this commit (its attribute registry, agent and tool spans, guardrails page).
SEMCONV_REVISION = "open-telemetry/semantic-conventions-genai@3155df2825f1623e2443c498b1b463d80d8a0efa"

#: The seq standing for the session's own (root) span.
ROOT = -1
#: Tools that start a subagent, when the security stream gives no action type.
SUBAGENT_TOOLS = frozenset({"Task", "Agent", "task", "spawn_agent", "invoke_agent", "agent"})
#: Each trace line's digest is this many bytes (the acknowledgement book keeps one per line).
LINE_DIGEST = 8
#: Characters of one text sent with ``--with-text`` (the trace already bounds them; this bounds the rest).
TEXT_CHARS = 16 * 1024
#: The prelabels counted on the session's span (``none`` is not an event).
PRELABELS = ("interrupt", "revert", "negation", "reprompt", "mark")


@attrs.define(slots=True)
class SpanData:
    """One span to send: ids are ints (128-bit trace, 64-bit span), times unix nanoseconds."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[tuple[str, int, dict[str, Any]]] = attrs.field(factory=list)
    #: ``error.type`` of a failed span (its status is then ERROR), else ``None``.
    error: str | None = None
    #: The trace record it was made from (:data:`ROOT` for the session's span).
    seq: int = ROOT


@attrs.frozen
class SessionInfo:
    """What the ledger knows of a session beside its trace (all optional: a live session has no row yet)."""

    harness: str
    session_id: str
    trace: Path
    events: Path | None = None
    agent_kind: str | None = None
    parent: str | None = None
    domain: str | None = None
    #: The flag reasons (the ledger's ``reasons``); ``None``: the trace's last ``session_shutdown`` says.
    reasons: tuple[str, ...] | None = None
    #: Flag reason -> the seqs behind it (the ledger's ``seqs``).
    flag_seqs: Mapping[str, list[int]] = attrs.field(factory=dict)


@attrs.frozen
class SubagentCall:
    """A call of this session that started a subagent: where a subagent's span goes."""

    span_id: int
    start_ms: int
    end_ms: int


@attrs.define
class Built:
    """One session as spans, with what the acknowledgement book and the family need."""

    spans: list[SpanData]
    size: int
    digest: bytes
    #: One :data:`LINE_DIGEST`-byte digest per line, in seq order.
    lines: bytes
    start_ms: int
    subagent_calls: list[SubagentCall]
    #: The session's last record's time (unix ms), and whether that record is a ``session_shutdown``
    #: (the session ended, as far as its trace says): what decides that its span is due (docs/otel.md).
    end_ms: int = 0
    shut: bool = False


def _iso_ms(text: object) -> int | None:
    """An event's ``occurred_at`` (RFC 3339, ``Z``) as unix ms, or ``None``."""
    if not isinstance(text, str):
        return None
    try:
        return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _complete(data: bytes) -> bytes:
    """The complete lines of ``data`` (a live writer may be half-way through the last one)."""
    end = data.rfind(b"\n")
    return data[: end + 1] if end >= 0 else b""


def _security(events: Path | None) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]],
                                           dict[str, list[dict[str, Any]]]]:
    """(call id -> its ``pre_tool_use`` event, call id -> its ``tool_blocked`` event, call id -> its
    ``tool_verdict`` events in order) of a stream."""
    pre: dict[str, dict[str, Any]] = {}
    blocked: dict[str, dict[str, Any]] = {}
    verdicts: dict[str, list[dict[str, Any]]] = {}
    if events is None:
        return pre, blocked, verdicts
    try:
        f = events.open("rb")
    except OSError:
        return pre, blocked, verdicts
    seen: set[object] = set()
    with f:
        for line in f:
            # Only the kinds read here are parsed: the others are most of a stream's lines.
            if b'"pre_tool_use"' not in line and b'"tool_blocked"' not in line and b'"tool_verdict"' not in line:
                continue
            try:
                ev = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(ev, dict):
                continue
            call = ev.get("source_tool_call_id")
            if not isinstance(call, str):
                continue
            kind = ev.get("kind")
            if kind == "pre_tool_use":
                pre.setdefault(call, ev)
            elif kind == "tool_blocked":
                blocked[call] = ev
            elif kind == "tool_verdict" and ev.get("event_id") not in seen:
                seen.add(ev.get("event_id"))  # (one verdict once, wherever a stream holds it)
                verdicts.setdefault(call, []).append(ev)
    return pre, blocked, verdicts


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _redacted(value: Any) -> Any:
    from rematch_trace.security.redact import default_redactor

    return default_redactor().redact_value(value)


def _text(value: object) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    from rematch_trace.security.redact import default_redactor

    return default_redactor().redact_text(value[:TEXT_CHARS])


def _ns(ms: int) -> int:
    return ms * 1_000_000


#: A ``tool_verdict``'s verdict -> (the guardrail verdict type, its action type).
JUDGED = {"hold": ("escalate", "hold"), "approve": ("allow", "allow")}


def _judged_event(ev: Mapping[str, Any], call: str, begin_ms: int) -> tuple[str, int, dict[str, Any]]:
    """The ``rematch.verdict`` span event of a ``tool_verdict`` (a hold for a person, an approval)."""
    meta = _dict(ev.get("metadata"))
    got = meta.get("verdict")
    name = got if isinstance(got, str) else "unknown"
    verdict, action = JUDGED.get(name, ("unknown", "unknown"))
    at = _iso_ms(ev.get("occurred_at"))
    out: dict[str, Any] = {
        "gen_ai.guardrail.component.name": "rematch",
        "gen_ai.guardrail.verdict.type": verdict,
        "gen_ai.guardrail.action.type": action,
        "gen_ai.guardrail.target.type": "input",
        "gen_ai.guardrail.target.subtype": "tool_call",
        "gen_ai.guardrail.target.id": call,
        "rematch.verdict": name,
    }
    if isinstance(meta.get("rule"), str) and meta["rule"]:
        out["gen_ai.guardrail.security.policy.rule.id"] = meta["rule"]
    if isinstance(meta.get("approval_id"), str) and meta["approval_id"]:
        out["rematch.approval.id"] = meta["approval_id"]
    return "rematch.verdict", _ns(at if at is not None else begin_ms), out


def _verdict(rule: str, hook: str | None) -> tuple[str, str, str]:
    """(verdict type, action type, rematch's name) of a blocked call's rule, in the guardrail vocabulary."""
    if rule.startswith("approval:"):
        state = rule.partition(":")[2]
        # A held call not approved in time: the guardrail escalated, the call was blocked.
        if state == "expired":
            return "escalate", "block", "expiry"
        return "deny", "block", "hold_denied" if state == "denied" else f"hold_{state}"
    if hook is not None and hook != "rematch":
        return "deny", "block", "harness_hook"
    return "deny", "block", "deny"


def build(info: SessionInfo, ids: Ids, trace_id: int, parent_span: int | None, *, with_text: bool = False,
          data: bytes | None = None) -> Built:
    """The spans of one session (its trace read whole, or ``data`` when given), under ``trace_id``.

    ``parent_span``: the span the session's own span hangs under (the call that started a
    subagent), ``None`` for a top session.
    """
    from rematch_trace.security.risk import SEVERITY

    raw = _complete(data if data is not None else info.trace.read_bytes())
    pre, blocked, judged = _security(info.events)
    sid = info.session_id
    root_id = ids.span_id(sid, ROOT)
    spans: list[SpanData] = []
    root_events: list[tuple[str, int, dict[str, Any]]] = []
    digests = bytearray()
    calls: list[SubagentCall] = []
    start: int | None = None
    first_t: int | None = None
    last_t: int | None = None
    model: dict[str, Any] = {}
    counts = {"inputs": 0, "turns": 0, "tool_calls": 0, "tool_errors": 0, "blocked_calls": 0}
    prelabels = dict.fromkeys(PRELABELS, 0)
    head: dict[str, Any] = {}
    reasons: list[str] = []
    pending_input: str | None = None
    prev_t = 0
    # The trace writes a response's turn_end after the results of the calls it made: its chat span
    # runs from the last record before those results to the first of its calls' starts.
    turn_from: int | None = None
    first_call: int | None = None
    seq = -1
    last_ev: object = None
    blake = hashlib.blake2b
    for line in raw.splitlines(keepends=True):
        seq += 1
        digests += blake(line, digest_size=LINE_DIGEST).digest()
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(rec, dict):
            continue
        got_t = rec.get("t")
        t: int = got_t if isinstance(got_t, int) and not isinstance(got_t, bool) else prev_t
        if first_t is None:
            first_t = t
        last_t = t if last_t is None else max(last_t, t)
        ev = last_ev = rec.get("ev")
        if ev == "turn_end":
            counts["turns"] += 1
            m = _dict(rec.get("model"))
            usage = _dict(rec.get("usage"))
            mid = m.get("id") if isinstance(m.get("id"), str) else None
            attrs_: dict[str, Any] = {"gen_ai.operation.name": "chat", "rematch.seq": seq}
            if isinstance(m.get("provider"), str):
                attrs_["gen_ai.provider.name"] = m["provider"]
            if mid:
                attrs_["gen_ai.request.model"] = attrs_["gen_ai.response.model"] = mid
            tokens: dict[str, int] = {k: v if isinstance(v := usage.get(k), int) else 0
                                      for k in ("input", "output", "cacheRead", "cacheWrite")}
            # The trace counts fresh, cache-read and cache-written input apart; the conventions'
            # input_tokens counts them all, with the cached parts given again on their own.
            attrs_["gen_ai.usage.input_tokens"] = tokens["input"] + tokens["cacheRead"] + tokens["cacheWrite"]
            attrs_["gen_ai.usage.output_tokens"] = tokens["output"]
            attrs_["gen_ai.usage.cache_read.input_tokens"] = tokens["cacheRead"]
            attrs_["gen_ai.usage.cache_creation.input_tokens"] = tokens["cacheWrite"]
            cost = usage.get("cost")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                attrs_["rematch.usage.cost"] = float(cost)
            stop = rec.get("stop_reason")
            if isinstance(stop, str):
                attrs_["gen_ai.response.finish_reasons"] = [stop]
            if with_text:
                said = _text(rec.get("text_head"))
                if said is not None:
                    attrs_["gen_ai.output.messages"] = orjson.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": said}],
                          "finish_reason": stop if isinstance(stop, str) else "stop"}]).decode()
                if pending_input is not None:
                    attrs_["gen_ai.input.messages"] = orjson.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": pending_input}]}]).decode()
                    pending_input = None
            began = turn_from if turn_from is not None else prev_t
            ended = max(began, min(t, first_call) if first_call is not None else t)
            spans.append(SpanData(f"chat {mid}" if mid else "chat", trace_id, ids.span_id(sid, seq), root_id,
                                  _ns(began), _ns(ended), attrs_, seq=seq))
            first_call = None
            if not model and mid:
                model = m
        elif ev in ("tool_result", "tool_blocked"):
            tool = rec.get("tool") if isinstance(rec.get("tool"), str) else "unknown"
            call = rec.get("call_id") if isinstance(rec.get("call_id"), str) else None
            p = pre.get(call) if call else None
            begun = _iso_ms(p.get("occurred_at")) if p else None
            begin = begun if begun is not None and begun <= t else prev_t
            first_call = begin if first_call is None else min(first_call, begin)
            attrs_ = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "rematch.seq": seq}
            if call:
                attrs_["gen_ai.tool.call.id"] = call
            action = p.get("action_type") if p else None
            if isinstance(action, str):
                attrs_["rematch.action_type"] = action
            ah = rec.get("args_hash")
            if isinstance(ah, str):
                attrs_["rematch.args_hash"] = ids.args_hash(ah)
            if with_text and "input" in rec and rec["input"] is not None:
                attrs_["gen_ai.tool.call.arguments"] = orjson.dumps(_redacted(rec["input"])).decode()[:TEXT_CHARS]
            events: list[tuple[str, int, dict[str, Any]]] = []
            features = p.get("risk_features") if p else None
            for feature in features if isinstance(features, list) else ():
                if isinstance(feature, str):
                    events.append(("gen_ai.guardrail.security.finding", _ns(begin), {
                        "gen_ai.guardrail.component.name": "rematch",
                        "gen_ai.guardrail.target.type": "input",
                        "gen_ai.guardrail.target.subtype": "tool_call",
                        **({"gen_ai.guardrail.target.id": call} if call else {}),
                        "gen_ai.guardrail.security.risk.category": feature,
                        # rematch's severity rank (1-15, docs/security-events.md) over 15.
                        "gen_ai.guardrail.security.risk.score": round(SEVERITY.get(feature, 0) / max(SEVERITY.values()), 4),
                    }))
            if call:
                for v in judged.get(call, ()):
                    events.append(_judged_event(v, call, begin))
            error: str | None = None
            span_id = ids.span_id(sid, seq)
            if ev == "tool_result":
                counts["tool_calls"] += 1
                attrs_["rematch.result_bytes"] = rec.get("result_bytes") if isinstance(rec.get("result_bytes"), int) else 0
                if rec.get("is_error"):
                    counts["tool_errors"] += 1
                    cls = rec.get("error_class")
                    error = cls if isinstance(cls, str) and cls else "tool_error"
                    attrs_["rematch.error_class"] = error
                if action == "subagent" or (action is None and tool in SUBAGENT_TOOLS):
                    calls.append(SubagentCall(span_id, begin, max(t, begin)))
            else:
                counts["blocked_calls"] += 1
                hook = rec.get("hook_id") if isinstance(rec.get("hook_id"), str) else None
                b = blocked.get(call) if call else None
                meta = _dict(b.get("metadata")) if b else {}
                rule = meta["rule"] if isinstance(meta.get("rule"), str) else ""
                verdict, action_type, name = _verdict(rule, hook)
                error = "blocked"
                attrs_["rematch.error_class"] = "blocked"
                ev_attrs: dict[str, Any] = {
                    "gen_ai.guardrail.component.name": hook or "rematch",
                    "gen_ai.guardrail.verdict.type": verdict,
                    "gen_ai.guardrail.action.type": action_type,
                    "gen_ai.guardrail.target.type": "input",
                    "gen_ai.guardrail.target.subtype": "tool_call",
                    "rematch.verdict": name,
                    **({"gen_ai.guardrail.target.id": call} if call else {}),
                    **({"gen_ai.guardrail.security.policy.rule.id": rule} if rule else {}),
                }
                if with_text:
                    reason = _text(rec.get("reason"))
                    if reason:
                        ev_attrs["gen_ai.guardrail.verdict.reason"] = reason
                events.append(("rematch.verdict", _ns(t), ev_attrs))
            if error is not None:
                attrs_["error.type"] = error
            spans.append(SpanData(f"execute_tool {tool}", trace_id, span_id, root_id, _ns(begin), _ns(max(t, begin)),
                                  attrs_, events, error, seq))
        elif ev == "input":
            counts["inputs"] += 1
            label = rec.get("prelabel")
            if isinstance(label, str) and label != "none":
                kind = label.partition(":")[0]
                if kind in prelabels:
                    prelabels[kind] += 1
                root_events.append(("rematch.prelabel", _ns(t), {"rematch.prelabel": label, "rematch.seq": seq}))
            if with_text:
                pending_input = _text(rec.get("text"))
        elif ev == "mark":
            ev_attrs = {"rematch.mark.class": str(rec.get("class") or ""), "rematch.seq": seq}
            if with_text:
                note = _text(rec.get("note"))
                if note:
                    ev_attrs["rematch.mark.note"] = note
            root_events.append(("rematch.mark", _ns(t), ev_attrs))
        elif ev == "model_change":
            ev_attrs = {"rematch.seq": seq}
            for k in ("from", "to"):
                v = rec.get(k)
                if isinstance(v, dict) and isinstance(v.get("id"), str):
                    ev_attrs[f"rematch.model.{k}"] = v["id"]
                elif isinstance(v, str):
                    ev_attrs[f"rematch.model.{k}"] = v
            root_events.append(("rematch.model_change", _ns(t), ev_attrs))
        elif ev == "session_start":
            head = rec
            start = t
        elif ev == "session_shutdown":
            got = rec.get("reasons")
            reasons = [r for r in got if isinstance(r, str)] if isinstance(got, list) else []
        prev_t = t
        if ev not in ("tool_result", "tool_blocked"):
            turn_from = t
    calls.sort(key=lambda c: c.start_ms)  # by when each began (stable: parallel calls keep their order)
    first = start if start is not None else (first_t or 0)
    end = max(last_t or first, first)
    flags = {r: [int(s) for s in info.flag_seqs.get(r, ()) if isinstance(s, int)]
             for r in sorted(info.reasons if info.reasons is not None else reasons)}
    for reason, seqs in flags.items():
        root_events.append(("rematch.flag", _ns(end), {"rematch.flag.reason": reason, "rematch.flag.seqs": seqs}))
    spans.insert(0, SpanData(f"invoke_agent {info.harness}", trace_id, root_id, parent_span, _ns(first), _ns(end),
                             _root_attributes(info, head, model, counts, prelabels, flags), root_events))
    return Built(spans, len(raw), hashlib.blake2b(raw, digest_size=16).digest(), bytes(digests), first, calls,
                 end, last_ev == "session_shutdown")


def _root_attributes(info: SessionInfo, head: Mapping[str, Any], model: Mapping[str, Any], counts: dict[str, int],
                     prelabels: dict[str, int], flags: Mapping[str, list[int]]) -> dict[str, Any]:
    """The session span's attributes: the agent, the project's identity, the counts."""
    from rematch_trace.place.identity import normalize_remote

    agent = _dict(head.get("agent"))
    out: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": info.harness,
        "gen_ai.conversation.id": info.session_id,
        "rematch.harness": info.harness,
        "rematch.agent.kind": info.agent_kind or (agent.get("kind") if isinstance(agent.get("kind"), str) else "main"),
    }
    if isinstance(model.get("provider"), str):
        out["gen_ai.provider.name"] = model["provider"]
    if isinstance(model.get("id"), str):
        out["gen_ai.request.model"] = model["id"]
    version = head.get("omp_version")
    if isinstance(version, str) and version:
        out["rematch.harness.version"] = version
    mode = head.get("mode")
    if isinstance(mode, str):
        out["rematch.mode"] = mode
    if info.parent:
        out["rematch.parent.session_id"] = info.parent
    # The project as the place rules name it: the normalized remote (no credentials), the folder
    # inside the repository, the domain. The working folder's full path is not sent (a home
    # folder names its user); its last part is.
    remote = normalize_remote(head.get("repo_remote") if isinstance(head.get("repo_remote"), str) else None)
    if remote:
        out["rematch.project.remote"] = remote
    for key, name in (("subpath", "rematch.project.subpath"), ("branch_hint", "rematch.project.branch_hint")):
        v = head.get(key)
        if isinstance(v, str) and v:
            out[name] = v
    cwd = head.get("cwd")
    if isinstance(cwd, str) and cwd.strip("/\\"):
        out["rematch.project.folder"] = cwd.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    if info.domain:
        out["rematch.project.domain"] = info.domain
    for k, v in counts.items():
        out[f"rematch.{k}"] = v
    for k, v in prelabels.items():
        out[f"rematch.prelabel.{k}"] = v
    out["rematch.flagged"] = bool(flags)
    out["rematch.flag.reasons"] = list(flags)
    for reason, seqs in flags.items():
        out[f"rematch.flag.{reason}"] = len(seqs)
    return out


def changed(built: Built, old_lines: bytes | None) -> Iterator[SpanData]:
    """The record spans of ``built`` (not the session's own) to send when ``old_lines`` (the line
    digests acknowledged) were sent before: a record's span when its line is new or its bytes
    changed (a continued import rewrites the trace's tail); every one when ``old_lines`` is ``None``.
    """
    n = LINE_DIGEST
    for span in built.spans:
        s = span.seq
        if s == ROOT:
            continue
        if old_lines is None or built.lines[s * n:(s + 1) * n] != old_lines[s * n:(s + 1) * n]:
            yield span


def session_span(built: Built, ids: Ids, session_id: str, part: int) -> SpanData:
    """The session's span to send as its ``part``-th (0: the first, whose id every record span hangs under).

    A later part is a span of its own (never the first's id again: a backend keeps one copy of a
    span id, Phoenix the first), under the first, with the session's current end, counts and events;
    the record spans sent since the previous part hang under it.
    """
    root = built.spans[0]
    if part == 0:
        return root
    return SpanData(root.name, root.trace_id, ids.span_id(session_id, ROOT - part), root.span_id, root.start_ns,
                    root.end_ns, {**root.attributes, "rematch.session.part": part}, list(root.events))


def part_span_id(ids: Ids, session_id: str, part: int) -> int:
    """The span id of the session's ``part``-th session span (:func:`session_span`)."""
    return ids.span_id(session_id, ROOT - part)


__all__ = ["ROOT", "SEMCONV_REVISION", "Built", "SessionInfo", "SpanData", "SubagentCall", "build", "changed",
           "part_span_id", "session_span"]
