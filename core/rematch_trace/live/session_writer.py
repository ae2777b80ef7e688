"""One session's live writer: the only process writing its trace and events at a time.

A hook invocation (or, later, the resident service) opens the writer of each
session its payload concerns, under that session's lock, applies the neutral
records, and saves the writer's state. The trace and the event stream are the
very ones an import writes (:class:`~rematch_trace.trace.synth.Synthesizer`
in ``live`` mode, :class:`~rematch_trace.security.events.EventSink`); what is
live-only is the sequencing:

**Order-independence.** Hooks run in parallel and some asynchronously, so the
events of one turn reach the writer in any order. Only an input (a prompt,
delivered by a synchronous hook) is applied at once; everything else of the
turn is *held* and applied when the turn is over (the next prompt, or the
session's end), sorted by the session's own order: each item by its time
(when its hook started), a result after its call and by ``tool_use_id``,
the stop last. The same events of a turn give the same bytes whatever order
they arrived in.

**Original input stays transient.** A call is digested on arrival (the
trace's truncated, redacted input and ``args_hash``; the event stream's
fingerprint, redacted summary and risk features) and only the digests are
held; a result keeps its size and error class.

**Crashes.** The state records the committed length of each output. Records
are appended, then the state is replaced atomically; the next writer (or
:func:`rematch_trace.live.settle.settle_live`) cuts away whatever lies past the
committed length, so a killed hook loses at most the event in flight.
A process's end (Claude Code's ``SessionEnd``: a ``SessionEnded`` with
``lifetime``) appends the final records (``session_shutdown``) like any other
batch and commits them: a resumed session (a later process on the same session
id) appends after them, so the bytes written before a resume stay a prefix of
the trace, with one ``session_shutdown`` per process lifetime (the last is the
session's; docs/live-capture.md, Decisions). Any other end writes the final
records past a snapshot, as an import does, and a resume continues from before
them.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import Any

import attrs
import orjson

from rematch_trace.host import vocab
from rematch_trace.host.facade import Host
from rematch_trace.host.source import Source
from rematch_trace.live.changed import hash_changed_files
from rematch_trace.live.folder import ensure_live_dir, state_path
from rematch_trace.report.consumers import Committed, Consumers, Opening, row_fields
from rematch_trace.security.events import EventSink
from rematch_trace.security.redact import Redactor, default_redactor
from rematch_trace.security.risk import file_paths
from rematch_trace.security.sink_state import SinkState
from rematch_trace.store.datafolder import DataDir, safe_name, stamp_of, write_atomic
from rematch_trace.store.rows import SessionRow
from rematch_trace.store.search_rows import HandedTrace
from rematch_trace.store.states import state_dumps, state_loads, structure, unstructure
from rematch_trace.trace.lines import dumps_record
from rematch_trace.trace.synth import Synthesizer
from rematch_trace.trace.synth_state import SynthState
from rematch_trace.trace.truncate import HEAD_LIMIT

STATE_VERSION = 1
#: A call still unanswered this long after its hook started is ``tool_blocked`` as stuck
#: (Claude Code's own default hook and tool timeout).
STUCK_WINDOW_MS = 600_000
#: How long a writer waits for another to release the session.
LOCK_SECONDS = 5.0
#: Changed paths remembered for ``files_changed`` (the first ones are hashed).
MAX_CHANGED = 1000
#: Invocations remembered, so one delivered twice is applied once.
MAX_SEEN = 64
#: ``tool_blocked.hook_id`` of a call rematch's verdict denied (the service's, or the hook's own).
VERDICT_HOOK_ID = "rematch"


def _reports_our_deny(rec: vocab.ToolResult) -> bool:
    """Whether a result is the harness's report of rematch's own deny rather than the call's output.

    The hook's deny reason starts with ``rematch: `` (``deny_output`` of the hook client), and a
    harness reports a hook-denied call as an error whose text carries it (Claude Code 2.1.328:
    ``PreToolUse:Bash hook error: rematch: ...``).
    """
    return bool(rec.is_error) and "rematch: " in rec.output_head[:512]
#: Calls already answered, remembered so a late restatement does not reopen them.
MAX_DONE = 256
#: A turn holding this many items is applied early (the state is rewritten on every
#: event: it must stay small); order is then kept within each part of the turn.
MAX_HELD = 256
#: Action types whose successful calls change files.
_WRITES = ("file_write", "file_edit")


@attrs.frozen(slots=True)
class JudgedCall:
    """rematch's verdict on a call that is not a deny (the service held it; a person approved it).

    Made by the core's live capture from the service's verdict, never by a plugin (it is not in the
    neutral vocabulary): the writer turns it into the call's ``tool_verdict`` event
    (:meth:`~rematch_trace.security.events.EventSink.verdict_event`). A deny, and a hold that ended
    denied or expired, are the call's ``tool_blocked``.
    """

    stream: str
    t: int | None
    call_id: str
    #: ``hold`` or ``approve``.
    verdict: str
    #: The reason code: the rule that held it (``policy:<id>``), ``approval:approved``.
    rule: str
    approval_id: str


class LockTimeout(Exception):
    """Another writer held the session's lock for longer than :data:`LOCK_SECONDS`."""


class SessionLock:
    """An exclusive ``flock`` on ``live/<id>.lock``, waited for up to a deadline."""

    def __init__(self, path: Path, seconds: float = LOCK_SECONDS) -> None:
        self.path = path
        self.seconds = seconds
        self.fd = -1

    def __enter__(self) -> SessionLock:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        deadline = time.monotonic() + self.seconds
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(self.fd)
                    raise LockTimeout(f"{self.path.name} busy for {self.seconds:g}s") from None
                time.sleep(0.002)

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def _empty_held() -> dict[str, Any]:
    return {"calls": {}, "results": {}, "blocked": {}, "instr": [], "stops": []}


class _Output:
    """One output file continued from its committed length."""

    def __init__(self, path: Path, committed: int) -> None:
        self.path = path
        self.size = committed
        self.fd = -1

    def settle(self) -> None:
        """Cut away what a killed writer appended past the committed length."""
        try:
            if os.stat(self.path, follow_symlinks=False).st_size > self.size:
                fd = os.open(self.path, os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
                try:
                    os.ftruncate(fd, self.size)
                finally:
                    os.close(fd)
        except FileNotFoundError:
            pass

    def write(self, lines: list[bytes]) -> None:
        """Append the output lines ``lines``."""
        if not lines:
            return
        if self.fd < 0:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
            end = os.fstat(self.fd).st_size
            if end != self.size:
                os.ftruncate(self.fd, self.size)  # a crash's leftovers, or a file another writer made
            os.lseek(self.fd, self.size, os.SEEK_SET)
        data = b"".join(lines)
        view = memoryview(data)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]
        self.size += len(data)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class SessionWriter:
    """The live writer of one session (see the module docstring); use :meth:`open` under its lock."""

    def __init__(
        self,
        host: Host,
        data: DataDir,
        harness: str,
        session: vocab.Session,
        transcript: str,
        state: dict[str, Any] | None,
        redactor: Redactor,
    ) -> None:
        self.host = host
        self.data = data
        self.harness = harness
        self.redactor = redactor
        fresh = state is None
        st: dict[str, Any] = state or {
            "v": STATE_VERSION,
            "harness": harness,
            "session": {
                "stream": session.stream, "t": session.t, "session_id": session.session_id, "cwd": session.cwd,
                "agent_kind": session.agent_kind, "agent_name": session.agent_name,
                "harness_version": session.harness_version, "parent_session_id": session.parent_session_id,
                "model": None,
            },
            "opened": False,
            "transcript": transcript,
            "synth": None,
            "sink": None,
            "held": _empty_held(),
            "open": {},
            "done": [],
            "changed": [],
            "trace_len": 0,
            "events_len": 0,
            "ended": None,
            "recorded": False,
        }
        self.st = st
        if transcript and not st.get("transcript"):
            st["transcript"] = transcript
        self.session = session_of_state(st["session"])
        self.session_id = self.session.session_id
        self.source = Source(harness, Path(st.get("transcript") or ""), self.session.agent_kind,
                             plugin=host.live_plugin(harness))
        self.synth = Synthesizer(
            harness,
            place_of=host.place,
            visible_of=lambda text: host.visible(self.source, text),
            redact=redactor.redact_text,
            redact_input=redactor.redact_value,
            state=structure(st["synth"], SynthState) if st["synth"] is not None else None,
            mode="live",
        )
        sink_state = structure(st["sink"], SinkState) if st["sink"] is not None else None
        self.sink = EventSink(self.source, self.session, host=host, redactor=redactor, state=sink_state)
        ended = st.get("ended")
        self.trace = _Output(data.trace_path(self.session_id), ended["trace_len"] if ended else st["trace_len"])
        self.events = _Output(data.events_path(self.session_id), ended["events_len"] if ended else st["events_len"])
        self.trace.settle()
        self.events.settle()
        self.consumers = self._consumers()
        if fresh:
            self._merge(session)

    def _consumers(self) -> Consumers:
        """The registered consumers of the trace's lines (report/consumers.py), continued from the state's.

        The trace is redacted as written (the index's text is its own); a state of an earlier version, which
        kept none, has its summary folded from the whole trace at the end.
        """
        saved = self.st.get("consumers")
        ended = self.st.get("ended")
        if not isinstance(saved, dict) or (ended is not None and ended["trace_len"] != self.st["trace_len"]):
            # (ended past a snapshot: the states are of the trace before its final records, the trace is whole)
            saved = {}
        whole = self.trace.size == 0 and not self.st.get("opened")
        return Consumers(Opening(self.data, self.trace.size, whole, saved))

    # -- persistence ------------------------------------------------------------------------

    @classmethod
    def load(cls, host: Host, data: DataDir, harness: str, session: vocab.Session, transcript: str) -> SessionWriter:
        """The writer of ``session`` from its saved state (call under its :class:`SessionLock`)."""
        state: dict[str, Any] | None = None
        try:
            with open(state_path(data, session.session_id), "rb") as f:
                state = state_loads(f.read())
        except FileNotFoundError:
            state = None
        if state is not None and (type(state) is not dict or state.get("v") != STATE_VERSION):
            raise ValueError(f"live state of {safe_name(session.session_id)} is unreadable or of another version")
        return cls(host, data, harness, session, transcript, state, default_redactor())

    def save(self) -> None:
        """Replace the saved state atomically (what makes the appended records committed)."""
        st = self.st
        if st.get("ended") is None:
            st["synth"] = unstructure(self.synth.state())
            st["sink"] = unstructure(self.sink.state())
            st["trace_len"] = self.trace.size
            st["events_len"] = self.events.size
            if self.consumers.fed:  # (else the states loaded stand: no fold or price table loaded for nothing)
                st["consumers"] = self.consumers.states()
        st["last_ms"] = int(time.time() * 1000)
        self.trace.close()
        self.events.close()
        write_atomic(state_path(self.data, self.session_id), state_dumps(st))

    def _write(self, records: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        # Each trace line feeds the registered consumers as it is written, as on import.
        if records:
            lines = [dumps_record(r) for r in records]
            self.consumers.feed_records(self.trace.size, records, lines)
            self.trace.write(lines)
        if events:
            self.events.write([dumps_record(e) for e in events])

    # -- applying records ---------------------------------------------------------------------

    def apply(self, records: list[vocab.Neutral], now: int, digest: str = "", told: bool = False) -> None:
        """Apply one hook payload's records of this session's stream.

        ``digest`` identifies the invocation: one already applied is not applied again.
        ``told``: these records come from the hook process itself, which knows what the
        harness was told; an invocation already applied (by a service whose reply the
        hook never acted on) takes their verdict: its calls are blocked exactly when
        these records block them.
        """
        if digest:
            seen: list[str] = self.st.setdefault("seen", [])
            if digest in seen:
                if told:
                    self._retell(records)
                return
            seen.append(digest)
            if len(seen) > MAX_SEEN:
                del seen[0]
        if self.st.get("ended") is not None:
            if all(isinstance(r, vocab.Session | vocab.SessionEnded) for r in records):
                return  # an end restated, or nothing new
            self._reopen()
        # A prompt is synchronous and starts a turn: the previous turn is over.
        prompt = any(isinstance(r, vocab.UserMessage) for r in records)
        for rec in records:
            if isinstance(rec, vocab.Session):
                self._merge(rec)
        if prompt:
            self.flush(now, final=False)
        # The payload's own turn (its prompt id): a held call is digested, and so fingerprinted, in it,
        # whenever it arrives. Its permission mode takes effect from a prompt (see docs/live-capture.md).
        turn = next((r.turn_id for r in records if isinstance(r, vocab.TurnStarted)), None)
        for rec in records:
            if isinstance(rec, vocab.Session):
                continue
            if isinstance(rec, vocab.SessionEnded):
                budget = 0.5 if rec.hash_budget_s is None else min(max(rec.hash_budget_s, 0.0), 2.0)
                self.end(rec.t if rec.t is not None else now, budget, lifetime=rec.lifetime is True)
            elif prompt:
                if isinstance(rec, vocab.ToolResult):
                    if rec.call_id in self.st["done"]:
                        continue  # its end is written already
                    # (an aborted run's interrupted call, told with the next prompt: its end now)
                    self.st["open"].pop(rec.call_id, None)
                    self._done(rec.call_id)
                self._write(self.synth.feed(rec), self.sink.feed(rec))
            else:
                self._hold(rec, turn)
        held = self.st["held"]
        if sum(len(v) for v in held.values()) >= MAX_HELD:
            self.flush(now, final=False)

    def _retell(self, records: list[vocab.Neutral]) -> None:
        """Make the held verdict of each call of ``records`` what they say (see :meth:`apply`'s ``told``)."""
        held = self.st["held"]["blocked"]
        blocked = {r.call_id for r in records if isinstance(r, vocab.CallBlocked)}
        for rec in records:
            if isinstance(rec, vocab.CallBlocked):
                if rec.call_id not in self.st["done"]:  # (once written, a call's end stays written)
                    self._hold(rec)
            elif isinstance(rec, vocab.ToolStarted) and rec.call.id not in blocked:
                entry = held.get(rec.call.id)
                if entry is not None and entry[2] == VERDICT_HOOK_ID:
                    del held[rec.call.id]

    def _merge(self, rec: vocab.Session) -> None:
        """Take what a Session record adds before the session is opened: the earliest time, a model."""
        st = self.st
        if st.get("opened"):
            return
        fields = st["session"]
        if rec.t is not None and (fields["t"] is None or rec.t < fields["t"]):
            fields["t"] = rec.t
        if rec.model is not None and fields.get("model") is None:
            fields["model"] = [rec.model.provider, rec.model.id]
        if rec.cwd and not fields["cwd"]:
            fields["cwd"] = rec.cwd

    def _open(self) -> None:
        """Write the session's start, once, when its first turn is applied.

        Not on the first event: hooks of the start (``SessionStart``,
        ``InstructionsLoaded``) arrive in any order, and the start takes the
        earliest time and the model from whichever says it.
        """
        if self.st.get("opened"):
            return
        self.st["opened"] = True
        session = session_of_state(self.st["session"])
        self.session = session
        self.synth.offer(self.st.get("visible", []))
        self._write(self.synth.feed(session), self.sink.feed(session))

    def _reopen(self) -> None:
        """A resumed session: append after the final records of its last lifetime.

        A state saved at a process's end commits the final records (its lengths are the ended
        ones): nothing is cut. One saved at another end (or by an earlier version) kept the state
        from before them (shorter lengths, a synthesizer that had not finished): it is continued
        from before them, as it was written to be.
        """
        self.st["ended"] = None
        self.trace.size = self.st["trace_len"]
        self.events.size = self.st["events_len"]
        self.trace.settle()
        self.events.settle()
        self.consumers = self._consumers()  # from their states at those lengths

    def _hold(self, rec: vocab.Neutral, turn: str | None = None) -> None:
        held = self.st["held"]
        t = int(rec.t) if rec.t is not None else int(self.synth.t)
        if isinstance(rec, vocab.ToolStarted):
            call = rec.call
            known = held["calls"].get(call.id)
            if call.id in self.st["open"] or call.id in self.st["done"]:
                return  # already applied at an earlier turn's end
            if known is not None:
                known["t"] = min(known["t"], t)
                if rec.fallback or not known["fb"]:
                    return
            action = self.host.action_type(self.source, call.name, call.input)
            paths = file_paths(call.input) if action in _WRITES else []
            in_force = self.sink.turn
            if turn is not None:
                self.sink.feed(vocab.TurnStarted(rec.stream, rec.t, turn))
            digest = self.sink.digest_call(call)
            self.sink.turn = in_force
            held["calls"][call.id] = {
                "t": min(t, known["t"]) if known else t,
                "fb": rec.fallback,
                "s": self.synth.digest_call(call),
                "e": digest,
                "p": paths[:64],
            }
        elif isinstance(rec, vocab.ToolResult):
            block = held["blocked"].get(rec.call_id)
            if block is not None and block[2] == VERDICT_HOOK_ID and not _reports_our_deny(rec):
                # The call ran (a hook killed or late, its deny never acted on): it was not blocked.
                # A result that is the harness's report of rematch's own deny (an error carrying the
                # deny's text, as Claude Code writes it) proves nothing ran and keeps the block.
                del held["blocked"][rec.call_id]
            if rec.call_id not in held["results"]:
                error_class = vocab.result_error_class(rec) if rec.is_error else None
                held["results"][rec.call_id] = [t, max(0, int(rec.output_bytes)), bool(rec.is_error), error_class,
                                                rec.tool or ""]
        elif isinstance(rec, JudgedCall):
            judged: list[list[Any]] = held.setdefault("judged", [])  # (a state saved before verdicts has none)
            entry = [t, rec.call_id, rec.verdict, rec.rule, rec.approval_id]
            if entry not in judged:
                judged.append(entry)
        elif isinstance(rec, vocab.CallBlocked):
            if rec.call_id not in held["blocked"]:
                held["blocked"][rec.call_id] = [t, rec.tool, self.synth.clean_text(rec.hook_id, 256),
                                                self.synth.clean_text(rec.reason, HEAD_LIMIT)]
        elif isinstance(rec, vocab.Instructions):
            if rec.path and [t, rec.path] not in held["instr"]:
                held["instr"].append([t, rec.path])
            if rec.text and not self.st.get("opened"):
                # Offered entries, read by the plugin's visible_entries hook before the start is
                # written (later ones cannot change it): only the ids are kept, never the text.
                visible: list[str] = self.st.setdefault("visible", [])
                for offered in self.host.visible(self.source, rec.text):
                    if offered not in visible:
                        visible.append(offered)
        elif isinstance(rec, vocab.EntryLoaded):
            entry = [t, rec.id, rec.version, rec.sha]
            loaded = held.setdefault("loaded", [])  # (a state saved before entries were kept has none)
            if entry not in loaded:
                loaded.append(entry)
        elif isinstance(rec, vocab.AssistantMessage):
            u = rec.usage
            usage = ([u.input, u.output, u.cache_read, u.cache_write, u.total, u.cost, u.cache_write_1h]
                     if u is not None else None)
            model = [rec.model.provider, rec.model.id] if rec.model is not None else None
            held["stops"].append([t, self.synth.clean_text(rec.text, HEAD_LIMIT), rec.stop_reason, None, usage, model])
        elif isinstance(rec, vocab.ModelSwitched):
            # [t, text, stop_reason, end, usage, model, terminal, switch reason]: in the turn's order.
            held["stops"].append([t, None, None, None, None, [rec.model.provider, rec.model.id], None,
                                  self.synth.clean_text(rec.reason, 256)])
        elif isinstance(rec, vocab.RunEnd):
            stops = held["stops"]
            if stops and stops[-1][0] == t and stops[-1][3] is None and len(stops[-1]) < 8:
                stops[-1][3] = rec.reason
            else:
                stops.append([t, None, None, rec.reason, None])
            if not rec.terminal:
                # [t, text, stop_reason, end, usage, model, terminal]: written only when not terminal,
                # so every state saved before keeps its bytes.
                stops[-1].extend([None] * (6 - len(stops[-1])))
                stops[-1].append(False)
        # Other records (a Compaction, a mark note...) have no live meaning yet: passed over.

    def flush(self, now: int, final: bool) -> None:
        """Apply the held records of the turn in the session's own order (see the module docstring)."""
        held = self.st["held"]
        self.st["held"] = _empty_held()
        # Entries loaded before the session's start is written are its loaded_entries (as on import,
        # where they precede the first response); later ones are retrieval records.
        stream = self.session.stream
        for t, ident, version, sha in sorted(held.get("loaded", []), key=lambda e: (e[0], e[1], e[2] or "", e[3] or "")):
            self._write(self.synth.feed(vocab.EntryLoaded(stream, t, ident, version, sha)), [])
        self._open()
        opened: dict[str, list[Any]] = self.st["open"]
        calls = held["calls"]
        items: list[tuple[tuple[Any, ...], str, Any]] = []
        for cid, c in calls.items():
            items.append(((c["t"], 0, cid), "call", cid))
        # A verdict after its call's pre_tool_use (a hold at the call's time, an approval when it came),
        # before a result or block of the same time.
        for j in held.get("judged", []):
            items.append(((max(j[0], calls[j[1]]["t"]) if j[1] in calls else j[0], 1, j[1]), "judged", j))
        for cid, r in held["results"].items():
            t_call = calls[cid]["t"] if cid in calls else r[0]
            items.append(((max(r[0], t_call), 1, cid), "result", cid))
        for cid, b in held["blocked"].items():
            items.append(((b[0], 1, cid), "blocked", cid))
        for t, path in held["instr"]:
            items.append(((t, 2, path), "instr", path))
        items.sort(key=lambda item: item[0])
        stops = sorted(held["stops"], key=lambda s: (s[0], s[3] or "", s[1] or "", s[2] or ""))
        out: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        for key, kind, ident in items:
            t = key[0]
            if kind == "call":
                c = calls[ident]
                self.synth.t = t
                self.synth.take_call(ident, c["s"])
                self.sink.take_call(ident, c["e"])
                self.sink.t = t
                events.append(self.sink.pre_event(ident, c["e"]))
                opened[ident] = [t, c["s"][0], c["p"]]
            elif kind == "result":
                _rt, nbytes, is_error, error_class, tool = held["results"][ident]
                rec = vocab.ToolResult(stream, t, ident, nbytes, "", is_error, error_class, tool or None)
                out += self.synth.feed(rec)
                events += self.sink.feed(rec)
                done = opened.pop(ident, None)
                if done is not None and not is_error:
                    self._changed(done[2])
                self._done(ident)
            elif kind == "judged":
                _jt, cid, verdict, rule, approval_id = ident
                self.sink.t = t
                events.append(self.sink.verdict_event(cid, verdict, rule, approval_id))
            elif kind == "blocked":
                _bt, tool, hook_id, reason = held["blocked"][ident]
                blocked = vocab.CallBlocked(stream, t, ident, tool, hook_id, reason)
                out += self.synth.feed(blocked)
                events += self.sink.feed(blocked)
                opened.pop(ident, None)
                self._done(ident)
            else:
                rec_i = vocab.Instructions(stream, t, "", ident)
                out += self.synth.feed(rec_i)
                events += self.sink.feed(rec_i)
        # Calls left without a result when the run stopped (or the session ended) were
        # blocked by a hook or a permission check, or cancelled; any older than the stuck
        # window are stuck. They are written just before the stop, at its time.
        ended_run = final or any(s[3] is not None for s in stops)
        t_block = stops[0][0] if stops else now
        for cid, (t_call, tool, _paths) in sorted(opened.items(), key=lambda kv: (kv[1][0], kv[0])):
            stuck = t_block - t_call >= STUCK_WINDOW_MS
            if ended_run or stuck:
                reason = "stuck: no result within the stuck window" if stuck else "no result: blocked or cancelled"
                blocked = vocab.CallBlocked(stream, t_block, cid, tool, "", reason)
                out += self.synth.feed(blocked)
                events += self.sink.feed(blocked)
                del opened[cid]
                self._done(cid)
        for t, text, stop_reason, end, *more in stops:
            if len(more) > 3 and more[3] is not None and more[1] is not None:
                out += self.synth.feed(vocab.ModelSwitched(stream, t, vocab.ModelRef(*more[1]), more[3]))
            if text is not None:
                # (a state saved before usage was kept has none)
                usage = vocab.Usage(*more[0]) if more and more[0] is not None else None
                # (a state saved before the model was kept has none: the session's is used)
                model = vocab.ModelRef(*more[1]) if len(more) > 1 and more[1] is not None else None
                msg = vocab.AssistantMessage(stream, t, model=model, stop_reason=stop_reason, text=text, usage=usage)
                out += self.synth.feed(msg)
                events += self.sink.feed(msg)
            if end is not None:
                out += self.synth.feed(vocab.RunEnd(stream, t, end, terminal=not (len(more) > 2 and more[2] is False)))
        self._write(out, events)

    def _done(self, call_id: str) -> None:
        done: list[str] = self.st["done"]
        done.append(call_id)
        if len(done) > MAX_DONE:
            del done[0]

    def _changed(self, paths: list[str]) -> None:
        changed: list[str] = self.st["changed"]
        for p in paths:
            if p not in changed and len(changed) < MAX_CHANGED:
                changed.append(p)

    # -- the end ----------------------------------------------------------------------------------

    def end(self, t: int, budget_s: float = 0.5, lifetime: bool = False) -> SessionRow:
        """End the session: held records, ``files_changed``, ``session_shutdown``; pending and ledger row.

        ``lifetime`` (see :class:`~rematch_trace.host.vocab.SessionEnded`): the final records are
        committed and a resume appends after them; otherwise they are written past a snapshot of
        the state before them, from which a resume continues (cutting them). Returns the ledger row.
        """
        self.flush(t, final=True)
        self.synth.t = t
        self.sink.t = t
        place = self.host.place(self.session.cwd or "")
        files = hash_changed_files(self.st["changed"], place.repo, self.session.cwd, budget_s)
        if not lifetime:
            # The state before the final records, kept (encoded now: finishing changes it).
            self._commit_lengths()
            self.st = state_loads(state_dumps(self.st))
        self._write(self.synth.finish(files), self.sink.finish())
        if lifetime:
            # This lifetime's final records, committed like any batch: a resume appends after them
            # (the state saved is the one after them, so nothing is cut or written twice).
            self._commit_lengths()
        self.st["ended"] = {"trace_len": self.trace.size, "events_len": self.events.size, "t": t}
        self.st["recorded"] = False
        self.save()
        row = self.record(place)
        self.st["recorded"] = True
        write_atomic(state_path(self.data, self.session_id), state_dumps(self.st))
        return row

    def _commit_lengths(self) -> None:
        """Put the synthesizer's and the sink's states and the outputs' lengths into the state."""
        self.st["synth"] = unstructure(self.synth.state())
        self.st["sink"] = unstructure(self.sink.state())
        self.st["trace_len"] = self.trace.size
        self.st["events_len"] = self.events.size
        self.st["consumers"] = self.consumers.states()

    def record(self, place: Any) -> SessionRow:
        """Write the pending file and the ledger row (``mode = 'live'``) of an ended session."""
        from rematch_trace.place.domain import decide_domain
        from rematch_trace.store.ledger import Ledger
        from rematch_trace.store.pending import write_pending

        flags = self.synth.flags
        reasons = flags.reasons()
        seqs = flags.seqs()
        trace = self.data.trace_path(self.session_id)
        write_pending(self.data, self.session_id, self.harness, reasons, seqs, trace)
        row = SessionRow(
            session_id=self.session_id,
            agent_kind=self.session.agent_kind,
            trace_path=str(trace.relative_to(self.data.root)),
            events_path=str(self.data.events_path(self.session_id).relative_to(self.data.root)),
            flagged=bool(reasons),
            reasons=reasons,
            seqs=seqs,
            counts=dict(self.synth.counts),
            cwd=self.session.cwd,
            repo=place.repo,
            repo_remote=place.repo_remote,
            domain=decide_domain(self.session.cwd, place.repo, place.repo_remote),
            parent=self.session.parent_session_id,
        )
        # The consumers' handovers: the stored summary goes in the row, the index's rows to the index.
        key = trace.name[:-6]
        handed = self.consumers.handovers(Committed(key, trace, _stamp(trace), row_fields(self.harness, row)))
        if handed.get("summary") is not None:
            row = attrs.evolve(row, summary=handed["summary"])
        source = self.st.get("transcript") or f"live:{self.session_id}"
        with Ledger(self.data.ledger) as ledger:
            ledger.record_live_session(self.harness, source, row)
        _index(self.data, key, handed.get("search_rows"))
        return row


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """A committed file's identity (:func:`~rematch_trace.store.datafolder.stamp_of`), or ``None``."""
    try:
        return stamp_of(os.stat(path))
    except OSError:
        return None


def _index(data: DataDir, key: str, rows: HandedTrace | None) -> None:
    """Hand the index the rows of a live trace, as an import's worker does (the lines before the first of
    them, written by earlier hooks' processes, the index reads from the trace itself).

    The index failing stops nothing: the session is written and recorded, and a reading command brings
    the index up to date itself.
    """
    import sqlite3

    from rematch_trace.store.search_handover import HandedRows
    from rematch_trace.store.search_index import sync_data

    handed = HandedRows(data.root)
    try:
        if rows is not None:
            handed.put_trace(key, rows)
        sync_data(data, {key}, 1, handed)
    except (OSError, sqlite3.Error, ValueError):
        pass
    finally:
        handed.close()


def session_of_state(fields: dict[str, Any]) -> vocab.Session:
    """The Session record a saved state keeps (its model as ``[provider, id]``)."""
    model = fields.get("model")
    return vocab.Session(**{**fields, "model": vocab.ModelRef(*model) if model else None})


def open_state_dir(data: DataDir) -> None:
    """Create the data folder's outputs and ``live/`` (0700)."""
    data.ensure()
    ensure_live_dir(data.root)


def read_state(path: Path) -> dict[str, Any] | None:
    """A saved live state, or ``None`` when unreadable."""
    try:
        with open(path, "rb") as f:
            value = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    return value if type(value) is dict else None
