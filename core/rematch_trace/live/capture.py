"""One hook invocation's work: payload in, each concerned session's writer applies its records.

:func:`capture_event` is what a hook does in-process today, and what the
resident service (``rematch serve``) can run for a ``hook_event`` request: it
takes the payload's bytes, keeps nothing of them, and returns nothing (the
trace path never answers a verdict).
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.host import vocab
from rematch_trace.host.facade import Host
from rematch_trace.live.folder import live_dir, lock_path
from rematch_trace.live.held import Held
from rematch_trace.live.session_writer import (
    VERDICT_HOOK_ID,
    JudgedCall,
    SessionLock,
    SessionWriter,
    open_state_dir,
    read_state,
    session_of_state,
)
from rematch_trace.store.datafolder import DataDir, reaper, safe_name

#: The largest payload read from a hook's stdin (a Write of a large file is a large payload).
MAX_PAYLOAD_BYTES = 64 << 20


#: The hook events the service judges before answering (a verdict may deny them): a call before it
#: runs, and the harness asking its person to approve one (Codex's ``PermissionRequest``; its call is
#: the one the plugin's records restate, else the payload's ``tool_name``/``tool_input``).
JUDGED_EVENTS = frozenset({"PreToolUse", "PermissionRequest", "BeforeTool"})
#: The hook events that carry one tool call (their records include a ToolStarted when it is recorded).
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied"})


def _id_text(value: object) -> str:
    """An id for a log line: its letters, digits and ``-_.`` only, cut (never other payload text)."""
    return "".join(c for c in value if c.isalnum() or c in "-_.")[:64] if isinstance(value, str) else "?"


class BadPayload(ValueError):
    """A payload that is not a JSON object, or that names no session."""


def parse_payload(raw: bytes) -> dict[str, Any]:
    """The payload as a JSON object (:class:`BadPayload` otherwise)."""
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise BadPayload(f"payload of {len(raw)} bytes exceeds {MAX_PAYLOAD_BYTES}")
    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise BadPayload(f"payload is not JSON ({err})") from None
    if type(event) is not dict:
        raise BadPayload(f"payload is a JSON {type(event).__name__}, not an object")
    return event


def capture_event(host: Host, data: DataDir, harness: str, event: dict[str, Any], t: int,
                  blocked: tuple[str, str] | None = None, told: bool = False, held: Held | None = None) -> list[str]:
    """Apply one hook payload; return the session ids it touched.

    Each stream's records go to that session's writer, under its lock, in the
    order the plugin gave them. A session's end also ends its subagents that
    never reported their own stop. ``blocked`` (``hook_id``, ``reason``): the
    service denied the payload's call, so it is held as ``tool_blocked`` (the
    harness runs no post-tool hook for it). ``told``: the hook's own process captures,
    knowing what the harness was told; its verdict stands over a service's that
    captured the same invocation first (:meth:`SessionWriter.apply`). ``held``
    (:class:`~rematch_trace.live.service.Held`): the service held the payload's call for a
    person; the call gets a ``hold`` verdict at its time and, when a person approved it, an
    ``approve`` verdict when they did (``tool_verdict`` events; a hold that ended otherwise is
    the call's block).
    """
    records = host.live(harness, event, t)
    name = event.get("hook_event_name")
    if name in TOOL_EVENTS and not any(isinstance(r, vocab.ToolStarted) for r in records):
        # A tool payload whose call could not be recorded (Claude Code before 2.0.43 names no
        # tool_use_id, and the transcript did not give it): said, never silently dropped. Ids only.
        from rematch_trace.live.folder import log_error

        sid = event.get("session_id")
        log_error(data.root, f"capture {harness}", f"{name}: the call was not recorded (no tool_use_id, and none "
                  f"found in the transcript) session={_id_text(sid)}")
    if not records:
        return []
    started = [r for r in records if isinstance(r, vocab.ToolStarted)]
    # A call's own PreToolUse states it; a permission request restates a started call (fallback).
    targets = [r for r in started if not r.fallback] or started
    if held is not None:
        judged: list[Any] = []
        for r in targets:
            at = r.t if r.t is not None else t
            judged.append(JudgedCall(r.stream, at, r.call.id, "hold", held.rule, held.approval_id))
            if held.state == "approved":
                judged.append(JudgedCall(r.stream, at + held.held_ms, r.call.id, "approve", "approval:approved",
                                         held.approval_id))
        records = [*records, *judged]
    if blocked is not None:
        records = [*records, *(vocab.CallBlocked(r.stream, r.t, r.call.id, r.call.name, *blocked) for r in targets)]
    # The same invocation delivered twice (a service that answered too late, then the
    # in-process fallback) is applied once: its digest, never the payload, is remembered.
    try:
        digest = hashlib.sha256(f"{harness}\x1f{t}\x1f".encode() + orjson.dumps(event, option=orjson.OPT_SORT_KEYS)).hexdigest()[:32]
    except TypeError:
        digest = ""
    transcript = event.get("transcript_path")
    transcript = transcript if type(transcript) is str else ""
    streams: dict[str, list[vocab.Neutral]] = {}
    for rec in records:
        streams.setdefault(rec.stream, []).append(rec)
    open_state_dir(data)
    touched: list[str] = []
    for recs in streams.values():
        session = next((r for r in recs if isinstance(r, vocab.Session)), None)
        if session is None:
            raise BadPayload("the plugin gave records of a stream without its Session")
        # A subagent's transcript is its own file, which the payload does not name here.
        own_transcript = transcript if session.agent_kind == "main" else ""
        with SessionLock(lock_path(data, session.session_id)):
            writer = SessionWriter.load(host, data, harness, session, own_transcript)
            writer.apply(recs, t, digest, told)
            writer.save()
        touched.append(session.session_id)
        if session.agent_kind == "main" and any(isinstance(r, vocab.SessionEnded) for r in recs):
            end_subagents(host, data, harness, session.session_id, t)
    # A replaced pending file waits for the reaper thread, which this process must not outlive.
    reaper.drain()
    return touched


def end_subagents(host: Host, data: DataDir, harness: str, session_id: str, t: int) -> int:
    """End the subagent sessions of ``session_id`` still open; return how many."""
    n = 0
    for path in sorted(live_dir(data.root).glob(f"{safe_name(session_id)}.agent-*.json")):
        state = read_state(path)
        if state is None or state.get("ended") is not None:
            continue
        session = session_of_state(state["session"])
        with SessionLock(lock_path(data, session.session_id)):
            writer = SessionWriter.load(host, data, harness, session, "")
            if writer.st.get("ended") is None:
                writer.end(t)
                n += 1
    return n


def default_host() -> Host:
    """A host over the installed plugins (loaded once per process)."""
    from rematch_trace.host.loading import load_plugins, pm

    load_plugins()
    return Host(pm)


def handle_hook_event(request: dict[str, Any], data: DataDir, host: Host | None = None,
                      blocked: tuple[str, str] | None = None, held: Held | None = None) -> list[str]:
    """Capture the payload of an IPC v2 ``hook_event`` request (docs/ipc-v2.md): what the service runs.

    ``adapter`` names the harness, ``host_payload`` is the hook's payload and
    ``received_at_ms`` (when the hook started and stamped it) the records' time.
    """
    payload = request.get("host_payload")
    harness = request.get("adapter")
    t = request.get("received_at_ms")
    if type(payload) is not dict or type(harness) is not str or type(t) is not int:
        raise BadPayload("a hook_event request needs host_payload (object), adapter (string), received_at_ms (int)")
    return capture_event(host or default_host(), data, harness, payload, t, blocked, held=held)




def register_capture(service: Any, data: Path) -> None:
    """Serve ``hook_event`` requests on ``service`` (``rematch serve``): capture each payload.

    The reply to an event comes once it is committed to its session's files
    (``recorded``): a killed service loses at most the events it was handed
    and had not answered. A ``PreToolUse`` payload is first judged by the
    service's verdict path (the ``pre_tool_use`` handler: policy, approvals),
    and its verdict never waits behind writing (issue 29): it is answered at
    once (a ``deny`` as the verdict, else ``recorded``) and written after, in
    its place in the write line. A ``deny`` is recorded as the call's
    ``tool_blocked`` only when the reply reached the client before the
    request's deadline (what the harness was told); otherwise the call is
    recorded as an ordinary started call. A capture that fails after a verdict
    is logged (no payload).

    Captures are applied one at a time, in the order they were queued, by one
    writer thread (:class:`~rematch_trace.live.write_queue.WriteQueue`): the
    handlers run on connection threads, a capture is a few milliseconds of work
    on shared caches, and the session's order must hold whatever order the
    replies left in.
    """
    from rematch_trace.live.folder import log_error
    from rematch_trace.live.ipc.messages import make_reply
    from rematch_trace.live.write_queue import WriteQueue

    host = default_host()
    if getattr(service, "host", None) is None:
        service.host = host
    folder = DataDir(data)

    def logged(request: dict[str, Any], blocked: tuple[str, str] | None, held: Held | None = None) -> Any:
        def work() -> None:
            try:
                handle_hook_event(request, folder, host, blocked, held)
            except Exception as err:
                log_error(folder.root, "rematch serve hook_event",
                          f"a judged call was not recorded: {type(err).__name__}")
        return work

    # While verdicts are being decided (Service.judging), the writer lets them go first; bounded
    # per job (WRITER_YIELD_S), so writes go on under a stream of verdicts.
    verdicts_busy = getattr(service, "judging", None)
    line = WriteQueue(yield_to=verdicts_busy, max_yield_s=WRITER_YIELD_S)
    if hasattr(service, "at_stop"):
        service.at_stop(line.drain)

    def on_hook_event(request: dict[str, Any], invocation: Any) -> Any:
        payload = request.get("host_payload")
        if (type(payload) is dict and payload.get("hook_event_name") in JUDGED_EVENTS
                and getattr(service, "provider", None) is not None):
            verdict = service.verdict(request, invocation)
            # A held call's hold and approval reach its security stream (the core records them, never a plugin).
            held = service.held(request["request_id"]) if hasattr(service, "held") else None
            if verdict["decision"] != "deny":
                line.submit(logged(request, None, held))
                return make_reply(request["request_id"], "no_override", "recorded", "", source="service",
                                  tool_class=verdict["tool_class"])
            blocked = (VERDICT_HOOK_ID, f"{verdict['reason']}: {verdict['explanation']}")
            # The place in the line is taken now (the session's order); what is written there
            # waits for the reply: tool_blocked once the deny was delivered in time, else the call.
            job = line.reserve(logged(request, None, held), RESERVE_S)
            after = getattr(invocation, "after_reply", None)
            if after is None:
                job.release(logged(request, blocked, held))
            else:
                after(lambda delivered: job.release(logged(request, blocked, held) if delivered else None))
            return verdict
        job = line.submit(lambda: handle_hook_event(request, folder, host))
        # Past the request's deadline the client has gone (it captures in its own process, and the
        # digest makes the two one): the thread is freed, the queued capture still lands.
        if not job.wait(max(0.0, invocation.deadline - time.monotonic())):
            return make_reply(request["request_id"], "no_override", "deadline_passed",
                              "The event is queued for writing; it was not committed before the deadline.",
                              source="service", tool_class="unknown")
        if job.error is not None:
            raise job.error
        return make_reply(request["request_id"], "no_override", "recorded", "", source="service",
                          tool_class="unknown")

    service.register_handler("hook_event", on_hook_event)


#: The longest the writer waits for verdicts before each capture, seconds.
WRITER_YIELD_S = 0.1
#: Seconds a denied call's place in the write line waits for its reply to be sent (the reply
#: deadline is 1 s): past it the call is written as an ordinary started call.
RESERVE_S = 3.0


def capture_bytes(harness: str, raw: bytes, t: int, root: Path, host: Host | None = None) -> list[str]:
    """:func:`capture_event` from a payload's bytes, into the data folder ``root``."""
    event = parse_payload(raw)
    return capture_event(host or default_host(), DataDir(root), harness, event, t)
