"""Codex rollout lines to the neutral vocabulary.

One rollout file is one session (stream ``""``). The translation is a small
state machine whose whole state lives in the core's ``state`` dict, so an
import can pause after any line and resume with identical output.

Three things shape it:

* **A model response is not one line.** Its reasoning, messages and tool calls
  are separate ``response_item`` lines, and its ``token_count`` event arrives
  before the items (v0.3x-0.4x), after them (v0.6x-0.11x) or after the tool
  outputs (v0.14x). So the open response (``pend``) is held until its
  token_count or the next boundary (turn_context, task_started/complete, a user
  message, compaction), and a token_count that finds no open response waits for
  the next one (``pusage``). Tool outputs that arrive while their response is
  still open wait inside it, so a result never precedes its call.
* **Structured tool outcomes may trail the output.** Extended-history files add
  ``exec_command_end``/``patch_apply_end``/``mcp_tool_call_end`` events, before
  or after the output item. A result is therefore held (``held``) until the next
  line that is not an event; an outcome that arrives before its output waits in
  ``early``.
* **Forks and subagents start with a copy of the parent's history**, re-stamped
  and preceded by the parent's own ``session_meta``. That copy (``copy``) yields
  no inputs, results or usage here; it only moves the cumulative token baseline.
  It ends at the first turn whose (time-ordered, UUIDv7) turn id is newer than
  this session's id, at the spawned agent's hand-over output, or, for files
  without turn ids, at the first line written over a second after the copy.

What the state holds of the rollout's text (an open response's messages and tool
inputs, the output heads of results not yet passed on) is host input, never
saved: each is a :class:`~rematch_trace.host.sealed.Sealed` value, saved as the
byte span of its line and a digest, and read again from there when an import
continues (see ``_Translator.unseal``).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

from rematch_trace.errors import RematchError, RestartImport
from rematch_trace.host.sealed import Sealed
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.text import utf8_len
from rematch_trace.host.timestamps import iso_ms
from rematch_trace.host.vocab import (
    OUTPUT_HEAD_CHARS,
    Abort,
    AssistantMessage,
    Compaction,
    EntryLoaded,
    Instructions,
    ModelRef,
    Neutral,
    PermissionMode,
    Session,
    SkillInvoked,
    ToolCall,
    ToolResult,
    TurnStarted,
    UserMessage,
)
from rematch_trace.importing.reader import loads_exact

from . import results, skills, usage, usertext
from .discover import thread_id_of

STREAM = ""
#: 2: the rollout's text and tool inputs held in the state are saved as references to their lines.
STATE_VERSION = 2
#: Call names and early outcomes kept for pairing; the oldest are dropped past this.
MAX_TRACKED = 1024
#: A copied history is written in one burst; a gap this long (ms) means it has ended.
COPY_GAP_MS = 1000
SPAWN_HANDOVER = "You are the newly spawned agent"
#: Prompt items whose event copy may still follow (each copy follows its item at once).
MAX_MIRRORS = 8

_ENVELOPE_TYPES = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "world_state",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
        "security_risk_score",
    }
)
_CALL_ITEMS = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call", "image_generation_call"}
)
_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
_QUIET_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary", "context_compaction", "agent_message"})
_BOUNDARY_EVENTS = frozenset({"task_started", "task_complete", "turn_started", "turn_complete"})
_OUTCOME_EVENTS = frozenset({"exec_command_end", "patch_apply_end", "mcp_tool_call_end"})
_TYPE_OR_NONE = (str, type(None))


def _new_state() -> dict[str, Any]:
    return {
        "v": STATE_VERSION,
        "started": False,
        "meta": False,  # the identity came from a session_meta (not the file name)
        "sid": None,
        "v7": None,  # this session's UUIDv7 time prefix, to tell own turns from copied ones
        "own": False,  # the session has done something of its own (a copy can no longer start)
        "copy": False,
        "copy_t": None,  # time of the last copied line
        "model": None,
        "provider": "openai",
        "tot": None,
        "last": None,
        "pend": None,
        "pusage": None,
        "held": [],
        "early": {},
        "calls": {},
        "abort": None,
        "unknown": 0,
        "mirrors": 0,  # prompts seen as response items whose event_msg/user_message copy is still to come
        "turn": None,  # the turn id last passed on
        "perm": None,  # the permission mode last passed on
    }


def subagent_of(meta: dict[str, Any]) -> tuple[bool, Any, Any]:
    """(whether the rollout is a subagent's, its parent thread id, its name) from its ``session_meta``.

    The live capture names a subagent's session from the same fields (unchecked values: the
    caller checks each is a non-empty string).
    """
    src = meta.get("source")
    sub = src.get("subagent") if isinstance(src, dict) else None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    spawn = spawn if isinstance(spawn, dict) else {}
    is_sub = sub is not None or meta.get("thread_source") == "subagent"
    parent = spawn.get("parent_thread_id") or meta.get("parent_thread_id")
    name = (
        meta.get("agent_role")
        or meta.get("agent_type")
        or spawn.get("agent_role")
        or meta.get("agent_nickname")
        or spawn.get("agent_nickname")
        or (sub if isinstance(sub, str) else None)
        or (next(iter(sub)) if isinstance(sub, dict) and len(sub) == 1 and "thread_spawn" not in sub else None)
    )
    return is_sub, parent, name


def _v7_prefix(value: Any) -> str | None:
    """The 48-bit millisecond prefix of a UUIDv7 (``xxxxxxxx-xxxx``), else ``None``."""
    if isinstance(value, str) and len(value) >= 15 and value[8] == "-" and value[14] == "7":
        return value[:13].lower()
    return None


class _Translator:
    """The per-line rules; ``s`` is the core's state dict, mutated in place."""

    def __init__(self, source: Source, state: dict[str, Any]) -> None:
        self.source = source
        self.s = state
        self.out: list[Neutral] = []
        self.ref: ModelRef | None = None
        if not state:
            state.update(_new_state())
        elif state.get("v") != STATE_VERSION:
            # An older state may hold the rollout's text itself: the file is read whole, once.
            raise RestartImport(f"codex state version {state.get('v')!r}")
        else:
            self.unseal()

    # -- sealed values: what the state holds of the rollout, read again on a continuation --

    def unseal(self) -> None:
        """Read again, from the rollout, the values a saved state holds as references.

        The open response's texts and tool inputs and the output heads of the
        results not yet passed on are saved as the byte span of their line and a
        digest (:class:`~rematch_trace.host.sealed.Sealed`). Each line is read and
        its value taken again as it was the first time; a line that is gone or
        gives another value makes the file read whole (:class:`RestartImport`).
        """
        s = self.s
        pend = s["pend"]
        if pend is None and not s["held"]:
            return
        # Every line first, in one read of the file: then each value is taken from its line.
        saved = [*pend["text"], *[c[2] for c in pend["calls"]], *[r["head"] for r in pend["results"]]] if pend else []
        saved += [r["head"] for r in s["held"]]
        lines = _items_at(self.source, [_span(x) for x in saved if type(x) is dict])
        if pend is not None:
            pend["text"] = [self.again(x, _message_text, lines) for x in pend["text"]]
            for c in pend["calls"]:
                c[2] = self.again(c[2], _call_input, lines)
            for r in pend["results"]:
                if type(r["head"]) is not str:  # (a result known at once holds no text)
                    r["head"] = self.again(r["head"], _output_head, lines)
        for r in s["held"]:
            if type(r["head"]) is not str:
                r["head"] = self.again(r["head"], _output_head, lines)

    def again(self, saved: Any, take: Any, lines: dict[tuple[int, int], dict[str, Any]]) -> Sealed:
        """The sealed value ``saved`` refers to, ``take`` of its line read again (checked by digest)."""
        if type(saved) is Sealed:
            return saved  # (a state continued in memory still holds the values)
        at = _span(saved)
        value = Sealed(take(lines[at[0], at[1]]), at)
        if not value.matches(saved):
            raise RestartImport("codex: a line read again no longer gives what the state held")
        return value

    # -- entry ---------------------------------------------------------------------------

    def line(self, rec: RawRecord) -> None:
        v = rec.value
        s = self.s
        if rec.offset == 0 and s["started"]:
            raise RestartImport("the rollout was rewritten from its start")
        kind = v.get("type")
        if not isinstance(kind, _TYPE_OR_NONE):
            return  # a hostile list or object as the type: nothing to translate
        if "payload" in v:
            payload = v["payload"]
            if isinstance(payload, dict):
                typ = payload.get("type")
                if typ == "token_count" and kind == "event_msg":
                    # A quarter of a rollout's lines: its own short path, and no timestamp (none is used).
                    self.token_count(payload)
                elif isinstance(typ, _TYPE_OR_NONE):
                    t = iso_ms(v.get("timestamp"))
                    if kind == "response_item" and not s["copy"]:
                        self.item(payload, t, rec)  # half the lines: what envelope would do, one call fewer
                    else:
                        self.envelope(kind, payload, t, rec)
        elif "record_type" in v:
            return  # legacy state line
        elif "type" not in v and "id" in v:
            self.legacy_meta(v)
        else:
            self.item(v, None, rec)

    def envelope(self, kind: Any, payload: dict[str, Any], t: int | None, rec: RawRecord) -> None:
        s = self.s
        if kind == "event_msg":
            if s["copy"]:
                self.copied_event(payload, t)
            else:
                self.event(payload, t)
            return
        if kind == "session_meta":
            self.meta(payload, t)
            return
        if s["copy"] and not self.copy_ends(kind, payload, t):
            self.copied(kind, payload, t)
            return
        if kind == "response_item":
            self.item(payload, t, rec)
        elif kind == "turn_context":
            self.boundary(t)
            model = payload.get("model")
            if isinstance(model, str) and model:
                s["model"] = model
            self.turn(payload.get("turn_id"), t)
            self.permissions(payload, t)
        elif kind == "compacted":
            self.boundary(t)
            self.ensure_session(t)
            self.out.append(Compaction(STREAM, t))
        elif kind in _ENVELOPE_TYPES:
            self.release()
        else:
            s["unknown"] += 1

    # -- identity --------------------------------------------------------------------------

    def ensure_session(self, t: int | None, meta: dict[str, Any] | None = None) -> None:
        s = self.s
        if s["started"]:
            return
        meta = meta or {}
        sid = meta.get("id")
        if not isinstance(sid, str) or not sid:
            sid = thread_id_of(self.source.path) or self.source.path.name
        cwd = meta.get("cwd")
        is_sub, parent, name = subagent_of(meta)
        version = meta.get("cli_version")
        provider = meta.get("model_provider")
        if isinstance(provider, str) and provider:
            s["provider"] = provider
        s["sid"] = sid
        s["v7"] = _v7_prefix(sid)
        s["started"] = True
        s["meta"] = bool(meta)
        self.out.append(
            Session(
                STREAM,
                iso_ms(meta.get("timestamp")) or t,
                sid,
                cwd=cwd if isinstance(cwd, str) else "",
                agent_kind="sub" if is_sub or self.source.agent_kind == "sub" else "main",
                agent_name=name if isinstance(name, str) and name else None,
                harness_version=version if isinstance(version, str) and version else None,
                parent_session_id=parent if isinstance(parent, str) and parent else None,
            )
        )

    def meta(self, payload: dict[str, Any], t: int | None) -> None:
        s = self.s
        if not s["started"]:
            self.ensure_session(t, payload)
            return
        if not s["meta"]:
            # The session opened on its file name before any meta: this one is its own.
            s["meta"] = True
            return
        sid = payload.get("id")
        if isinstance(sid, str) and sid != s["sid"] and not s["own"] and not s["copy"]:
            # Another thread's meta before any work of our own: a fork's copied history follows.
            s["copy"] = True
            s["copy_t"] = t
        # The same id again is a resume or a metadata update: identity stays the first one's.

    def legacy_meta(self, v: dict[str, Any]) -> None:
        t = iso_ms(v.get("timestamp"))
        if not self.s["started"]:
            self.ensure_session(t, v)
        text = v.get("instructions")
        if isinstance(text, str) and text.strip():
            self.out.append(Instructions(STREAM, t, text))

    # -- the copied prefix of a fork or subagent -------------------------------------------------

    def copy_ends(self, kind: Any, payload: dict[str, Any], t: int | None) -> bool:
        """Whether this (non-event) line is the session's own, ending the copy."""
        s = self.s
        own = self.own_turn(payload.get("turn_id"), t) if kind == "turn_context" else self.gap_after_copy(t)
        if own:
            s["copy"] = False
        return own

    def own_turn(self, turn_id: Any, t: int | None) -> bool:
        s = self.s
        prefix = _v7_prefix(turn_id)
        own_prefix: str | None = s["v7"]
        if prefix is not None and own_prefix is not None:
            return prefix >= own_prefix
        return self.gap_after_copy(t)

    def gap_after_copy(self, t: int | None) -> bool:
        s = self.s
        if t is None or s["copy_t"] is None:
            return False
        if t - s["copy_t"] > COPY_GAP_MS:
            return True
        s["copy_t"] = max(s["copy_t"], t)
        return False

    def copied(self, kind: Any, payload: dict[str, Any], t: int | None) -> None:
        """A line of inherited history: only model and instructions carry over."""
        s = self.s
        if kind == "turn_context":
            model = payload.get("model")
            if isinstance(model, str) and model:
                s["model"] = model
        elif kind == "response_item":
            typ = payload.get("type")
            if typ == "message" and payload.get("role") in ("user", "developer"):
                for text in _texts(payload.get("content")):
                    kind_, _ = usertext.classify(text)
                    if kind_ == "instructions" or (payload.get("role") == "developer" and usertext.is_catalog(text)):
                        self.out.append(Instructions(STREAM, t, text, usertext.instructions_path(text)))
            elif typ in _OUTPUT_ITEMS:
                text = results.output_text(payload.get("output"))
                if text.startswith(SPAWN_HANDOVER):
                    s["copy"] = False  # the hand-over is the copy's last line

    def copied_event(self, payload: dict[str, Any], t: int | None) -> None:
        s = self.s
        typ = payload.get("type")
        if typ == "token_count":
            usage.advance(payload.get("info"), s)  # moves the baseline only
        elif typ in ("task_started", "turn_started") and self.own_turn(payload.get("turn_id"), t):
            s["copy"] = False
            self.event(payload, t)

    # -- events ----------------------------------------------------------------------------

    def token_count(self, payload: dict[str, Any]) -> None:
        """``event_msg/token_count``: the usage it adds goes to the open response, else waits.

        In a copied history it only moves the cumulative baseline.
        """
        s = self.s
        vec = usage.advance(payload.get("info"), s)
        if vec is None or s["copy"]:
            return
        pend = s["pend"]
        if pend is not None and pend["usage"] is None:
            pend["usage"] = vec
            self.close()
        else:
            s["pusage"] = usage.add(s["pusage"], vec)

    def event(self, payload: dict[str, Any], t: int | None) -> None:
        s = self.s
        typ = payload.get("type")
        if typ == "token_count":
            self.token_count(payload)
        elif typ in _BOUNDARY_EVENTS:
            self.boundary(t)
            if typ in ("task_started", "turn_started"):
                self.turn(payload.get("turn_id"), t)
        elif typ == "turn_aborted":
            pend = s["pend"]
            if pend is not None:
                pend["aborted"] = True
                self.close()
            # Held until the next boundary: v0.3x-0.4x write the aborted response's items after this event.
            reason = payload.get("reason")
            s["abort"] = reason if isinstance(reason, str) and reason else "interrupted"
        elif typ in _OUTCOME_EVENTS:
            self.outcome(typ, payload)
        elif typ == "user_message":
            self.user_event(payload, t)

    def user_event(self, payload: dict[str, Any], t: int | None) -> None:
        """``event_msg/user_message``: a copy of a prompt item, or the only record of a prompt.

        Codex mirrors each prompt as this event right after its ``response_item``;
        some rollouts hold only the event. An event with no item before it is the input.
        """
        s = self.s
        if s["mirrors"] > 0:
            s["mirrors"] -= 1
            return
        kind = payload.get("kind")
        if kind not in (None, "plain"):
            return  # v0.30-0.47 also mirrored injected instructions and context
        message = payload.get("message")
        what, body = usertext.classify(message) if isinstance(message, str) else ("context", "")
        images = payload.get("images")
        image = bool(images) or bool(payload.get("local_images"))
        if what != "typed" and not image:
            return
        self.boundary(t)
        self.ensure_session(t)
        s["own"] = True
        self.out.append(UserMessage(STREAM, t, body if what == "typed" else ""))

    def outcome(self, typ: str, payload: dict[str, Any]) -> None:
        s = self.s
        cid = payload.get("call_id")
        found = results.structured(typ, payload)
        if not isinstance(cid, str) or found is None:
            return
        pend = s["pend"]
        for bucket in (s["held"], pend["results"] if pend is not None else []):
            for res in bucket:
                if res["id"] == cid:
                    res["err"], res["cls"] = found
                    return
        early = s["early"]
        early[cid] = list(found)
        while len(early) > MAX_TRACKED:
            del early[next(iter(early))]

    def turn(self, turn_id: Any, t: int | None) -> None:
        """Pass on a new turn id (v0.100+ turn_context and task_started carry one)."""
        s = self.s
        if isinstance(turn_id, str) and turn_id and turn_id != s["turn"]:
            s["turn"] = turn_id
            self.ensure_session(t)
            self.out.append(TurnStarted(STREAM, t, turn_id))

    def permissions(self, payload: dict[str, Any], t: int | None) -> None:
        """Pass on a changed permission mode: ``<approval_policy>/<sandbox>`` of a turn_context."""
        s = self.s
        mode = permission_mode(payload)
        if mode is not None and mode != s["perm"]:
            s["perm"] = mode
            self.ensure_session(t)
            self.out.append(PermissionMode(STREAM, t, mode))

    # -- response items --------------------------------------------------------------------

    def item(self, p: dict[str, Any], t: int | None, rec: RawRecord) -> None:
        s = self.s
        typ = p.get("type")
        if s["held"]:
            self.release()
        if typ == "message":
            role = p.get("role")
            if role == "assistant":
                pend = self.open_response(t)
                text = _message_text(p)
                if text:
                    pend["text"].append(Sealed(text, [rec.offset, rec.end]))
            elif role == "user":
                self.user(p, t)
            elif role == "developer":
                for text in _texts(p.get("content")):
                    if usertext.is_catalog(text):
                        self.ensure_session(t)
                        self.out.append(Instructions(STREAM, t, text))
        elif typ == "reasoning":
            self.open_response(t)
        elif typ in _CALL_ITEMS:
            self.call(typ, p, t, rec)
        elif typ in _OUTPUT_ITEMS:
            self.output(p, t, rec)
        elif typ not in _QUIET_ITEMS:
            s["unknown"] += 1

    def open_response(self, t: int | None) -> dict[str, Any]:
        """The open response, or a new one (a response item after an output starts a new call)."""
        s = self.s
        pend: dict[str, Any] | None = s["pend"]
        if pend is not None and len(pend["results"]) <= pend.get("inline", 0):
            return pend
        self.close()
        self.ensure_session(t)
        s["own"] = True
        pend = {
            "t": t,
            "text": [],
            "calls": [],
            "usage": s["pusage"],
            "results": [],
            "aborted": s["abort"] is not None,
        }
        s["pusage"] = None
        s["pend"] = pend
        return pend

    def call(self, typ: str, p: dict[str, Any], t: int | None, rec: RawRecord) -> None:
        s = self.s
        name = p.get("name")
        immediate: dict[str, Any] | None = None
        tool_input = _call_input(p)
        if typ == "function_call":
            namespace = p.get("namespace")
            if isinstance(namespace, str) and namespace and isinstance(name, str):
                name = namespace + name if namespace.endswith("_") else f"{namespace}.{name}"
        elif typ == "local_shell_call":
            name = "local_shell"
        elif typ == "tool_search_call":
            name = "tool_search"
        elif typ != "custom_tool_call":
            # Web searches and image generations run inside the model call: no output line follows.
            name = "web_search" if typ == "web_search_call" else "image_generation"
            status = p.get("status")
            failed = status in ("failed", "incomplete")
            result = p.get("result")
            nbytes = utf8_len(result) if isinstance(result, str) else 0
            immediate = {"t": t, "id": "", "bytes": nbytes, "head": "", "err": failed, "cls": None, "tool": name}
        if not isinstance(name, str) or not name:
            name = "unknown"
        cid = p.get("call_id") or p.get("id")
        if not isinstance(cid, str) or not cid:
            # No id to pair by (web searches have none): the line's offset is stable across resumes.
            cid = f"{name}@{rec.offset}"
        pend = self.open_response(t)
        # (the input is the call's text: sealed; the skills a call reads are taken from it on closing)
        pend["calls"].append([cid, name, Sealed(tool_input, [rec.offset, rec.end])])
        if immediate is not None:
            immediate["id"] = cid
            pend["results"].append(immediate)
            # Its result is known at once; this must not split the response as a late output does.
            pend["inline"] = pend.get("inline", 0) + 1
        else:
            calls = s["calls"]
            calls[cid] = name
            while len(calls) > MAX_TRACKED:
                del calls[next(iter(calls))]

    def output(self, p: dict[str, Any], t: int | None, rec: RawRecord) -> None:
        s = self.s
        cid = p.get("call_id")
        if not isinstance(cid, str) or not cid:
            return
        raw = p.get("output")
        text = results.output_text(raw)
        tool = s["calls"].pop(cid, None)
        found = s["early"].pop(cid, None)
        err, cls = found if found is not None else results.classify_output(text, raw)
        res = {
            "t": t,
            "id": cid,
            "bytes": utf8_len(text),
            "head": Sealed(text[:OUTPUT_HEAD_CHARS], [rec.offset, rec.end]),
            "err": err,
            "cls": cls,
            "tool": tool,
        }
        pend = s["pend"]
        if pend is not None and any(c[0] == cid for c in pend["calls"]):
            pend["results"].append(res)
        else:
            self.ensure_session(t)
            s["held"].append(res)

    # -- user messages -----------------------------------------------------------------------

    def user(self, p: dict[str, Any], t: int | None) -> None:
        typed: list[str] = []
        image = False
        deferred: list[Neutral] = []
        content = p.get("content")
        for item in content if isinstance(content, list) else []:
            if not isinstance(item, dict):
                continue
            kind = item.get("type")
            if kind in ("input_image", "local_image", "image"):
                image = True
                continue
            text = item.get("text")
            if not isinstance(text, str):
                continue
            what, body = usertext.classify(text)
            if what == "typed":
                typed.append(body)
            elif what == "instructions":
                deferred.append(Instructions(STREAM, t, text, usertext.instructions_path(text)))
            elif what == "skill":
                inj = skills.parse_injection(text)
                if inj is not None:
                    entry = skills.loaded_entry(inj)
                    # The skill file read into the context: an instruction_loaded event.
                    deferred.append(Instructions(STREAM, t, "", inj.path or None))
                    deferred.append(EntryLoaded(STREAM, t, entry.id, entry.version, entry.sha))
                    deferred.append(SkillInvoked(STREAM, t, inj.name))
        self.boundary(t)
        self.ensure_session(t)
        if typed or image:
            self.s["own"] = True
            self.s["mirrors"] = min(self.s["mirrors"] + 1, MAX_MIRRORS)
            self.out.append(UserMessage(STREAM, t, "\n".join(typed)))
        self.out.extend(deferred)

    # -- flushing --------------------------------------------------------------------------

    def close(self) -> None:
        """Emit the open response; its results wait in ``held`` for trailing outcomes."""
        s = self.s
        pend = s["pend"]
        if pend is None:
            return
        s["pend"] = None
        model = s["model"]
        vec = pend["usage"]
        calls = pend["calls"]
        self.out.append(
            AssistantMessage(
                STREAM,
                pend["t"],
                model=self.model_ref(s["provider"], model) if model else None,
                usage=usage.to_usage(vec) if vec is not None else None,
                aborted=pend["aborted"],
                text="\n".join([x.value for x in pend["text"]]),
                tool_calls=tuple([ToolCall(c[0], c[1], c[2].value) for c in calls]) if calls else (),
            )
        )
        for c in calls:
            if c[1] == "skills.read":
                tool_input = c[2].value
                if isinstance(tool_input, dict) and isinstance(tool_input.get("package"), str):
                    self.out.append(SkillInvoked(STREAM, pend["t"], tool_input["package"]))
        s["held"].extend(pend["results"])

    def model_ref(self, provider: str, model: str) -> ModelRef:
        """The (immutable, so shared) model reference of every response of one model."""
        ref = self.ref
        if ref is None or ref.id != model or ref.provider != provider:
            ref = self.ref = ModelRef(provider, model)
        return ref

    def release(self) -> None:
        """Emit the held results: a non-event line means no outcome event can follow them."""
        held = self.s["held"]
        if not held:
            return
        for r in held:
            head = r["head"]
            self.out.append(
                ToolResult(
                    STREAM,
                    r["t"],
                    r["id"],
                    output_bytes=r["bytes"],
                    output_head=head if type(head) is str else head.value,
                    is_error=r["err"],
                    error_class=r["cls"],
                    tool=r["tool"],
                )
            )
        held.clear()

    def boundary(self, t: int | None) -> None:
        """A turn edge: the open response, its results, then a pending abort."""
        s = self.s
        self.close()
        self.release()
        if s["abort"] is not None:
            self.ensure_session(t)
            self.out.append(Abort(STREAM, t, s["abort"]))
            s["abort"] = None

    def finish(self) -> None:
        """Flush everything held (the core snapshots the state before this runs)."""
        if self.s["started"]:
            self.boundary(None)


def permission_mode(turn_context: dict[str, Any]) -> str | None:
    """A turn_context's approval policy and sandbox as one mode (``on-request/workspace-write``).

    The sandbox is the ``sandbox_policy``'s ``type`` (``mode`` up to v0.58);
    either part may be missing.
    """
    approval = turn_context.get("approval_policy")
    policy = turn_context.get("sandbox_policy")
    sandbox = policy.get("type", policy.get("mode")) if isinstance(policy, dict) else policy
    parts = [p if isinstance(p, str) and p else "" for p in (approval, sandbox)]
    if not any(parts):
        return None
    return "/".join(parts) if parts[1] else parts[0]


def _texts(content: Any) -> list[str]:
    """The texts of a message's content items (input_text/output_text/text)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [c["text"] for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]


def _message_text(p: dict[str, Any]) -> str:
    """An assistant message item's text (its content items' texts, one per line)."""
    return "\n".join(_texts(p.get("content")))


def _call_input(p: dict[str, Any]) -> Any:
    """A call item's input, as the response's tool call holds it."""
    typ = p.get("type")
    if typ == "function_call" or typ == "tool_search_call":
        return _parse_args(p.get("arguments"))
    if typ == "custom_tool_call":
        return p.get("input")
    if typ == "local_shell_call" or typ == "web_search_call":
        return p.get("action")
    return {"revised_prompt": p.get("revised_prompt")}  # image_generation_call


def _output_head(p: dict[str, Any]) -> str:
    """An output item's head, as its result holds it."""
    text: str = results.output_text(p.get("output"))[:OUTPUT_HEAD_CHARS]
    return text


def _span(saved: Any) -> list[int]:
    """The byte span a sealed value of a saved state was read at."""
    at = saved.get("at") if type(saved) is dict else None
    if type(at) is not list or len(at) != 2 or not all(type(x) is int and x >= 0 for x in at) or at[0] >= at[1]:
        raise RestartImport("codex: a saved state without its sealed value's place")
    return at


def _items_at(source: Source, spans: list[list[int]]) -> dict[tuple[int, int], dict[str, Any]]:
    """The response item of the rollout line at each byte span, parsed as the reader parsed it the first time.

    A plain file's spans are read at once (``pread``: the reader's large buffer would
    read a MiB per line); a compressed one is decompressed up to each.
    """
    from rematch_trace.host.fs import read_spans
    from rematch_trace.importing.reader import read_jsonl, read_source

    keys = sorted({(at[0], at[1]) for at in spans})
    out: dict[tuple[int, int], dict[str, Any]] = {}
    if not keys:
        return out
    if source.compression:
        raws: list[bytes | None] = [None] * len(keys)
    else:
        try:
            raws = list(read_spans(source.path, [(start, end - start) for start, end in keys]))
        except (OSError, RematchError):
            raise RestartImport("codex: the rollout cannot be read again") from None
    for (start, end), raw in zip(keys, raws, strict=True):
        items = read_source(source, start) if raw is None else read_jsonl(io.BytesIO(raw), str(source.path), start)
        try:
            first = next(items, None)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # (a file is closed now, not when the generator is collected)
        if type(first) is RawRecord and first.offset == start and first.end == end and type(first.value) is dict:
            v: dict[str, Any] = first.value
            payload = v.get("payload") if "payload" in v else v
            if type(payload) is dict:
                out[start, end] = payload
                continue
        raise RestartImport(f"codex: no rollout line at bytes {start}-{end} any more")
    return out


def _parse_args(args: Any) -> Any:
    """A function call's arguments: a JSON string parsed, else as recorded."""
    if isinstance(args, str):
        try:
            # Numbers a float would round stay exact (the arguments are hashed and fingerprinted).
            return loads_exact(args)
        except ValueError:
            return args
    return args


def translate(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
    """Yield the neutral records of ``records`` (see the module docstring)."""
    tr = _Translator(source, state)
    out = tr.out
    line = tr.line
    for rec in records:
        if isinstance(rec.value, dict):
            line(rec)
            if out:
                yield from out
                out.clear()
    tr.finish()
    yield from out
    out.clear()
