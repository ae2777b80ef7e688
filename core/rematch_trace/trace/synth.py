"""The synthesizer: neutral records in, trace records out, one session at a time.

It runs incrementally, record by record, and its whole state is a
:class:`~rematch_trace.trace.synth_state.SynthState` (:meth:`Synthesizer.state`), so an import can stop at any record and
continue later (append-resume today; live capture and a verdict service next)
with output identical to a single pass.

The same rules serve live capture (``mode="live"``, :mod:`rematch_trace.live`),
with the live-only ones the seed gives: ``session_start`` is written at once
with ``head_sha``; an input is an interrupt when it arrives into a run that
had no stop (:class:`~rematch_trace.host.vocab.RunEnd`) since its input; a mark
input also writes a ``mark`` record; calls arrive on their own
(:class:`~rematch_trace.host.vocab.ToolStarted`) and may end blocked
(``tool_blocked``).

Two things make it hold records back before writing them: ``session_start``
names the model of the first assistant message, so nothing is written before
that message (or the end); and an input's ``skills_invoked`` takes the skills its
run invokes by tool call, so a run's records wait, up to
:data:`RUN_BUFFER_RECORDS` of them, until the run ends.

An import saves those held records in the trace rather than in its state:
:meth:`Synthesizer.finish` writes them past the state's saved length, and a
continuation takes them back from there (:meth:`Synthesizer.restore_held`),
as the lines they are, leaving them in place when nothing changes them
(:meth:`Synthesizer.keep_held`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from rematch_trace.errors import NonExactNumber, RestartImport
from rematch_trace.host import vocab
from rematch_trace.host.exactnum import loads_exact
from rematch_trace.host.text import clean
from rematch_trace.place.identity import Place
from rematch_trace.trace.canonical import args_hash
from rematch_trace.trace.flags import FlagTracker
from rematch_trace.trace.prelabel import (
    MARK_RE,
    is_dropped_command,
    normalize_mark,
    prelabel_tokens,
    skills_in,
    tokens,
)
from rematch_trace.trace.records import (
    Agent,
    AgentEnd,
    Input,
    LoadedEntry,
    MarkRecord,
    Model,
    ModelChange,
    Retrieval,
    SessionShutdown,
    SessionStart,
    ToolBlocked,
    ToolResultRecord,
    TurnEnd,
    to_dict,
)
from rematch_trace.trace.synth_state import SynthState
from rematch_trace.trace.truncate import HEAD_LIMIT, TEXT_LIMIT, cut_utf8, truncate_input

#: Neutral records the trace has no field for.
_EVENT_ONLY = (vocab.TurnStarted, vocab.PermissionMode)
#: The records :class:`~rematch_trace.trace.flags.FlagTracker` looks at (it passes over the rest).
_FLAG_EVS = frozenset({Input.EV, MarkRecord.EV, ToolResultRecord.EV})
_TOOL_RESULT, _TURN_END = ToolResultRecord.EV, TurnEnd.EV
#: The usage of a message that states none.
_NO_USAGE = vocab.Usage()
#: A run's records wait at most this many before they are written anyway.
RUN_BUFFER_RECORDS = 64
#: Blocked calls whose digest is kept for a result that may still follow (live).
MAX_BLOCKED_KEPT = 64

Redact = Callable[[str], str]
PlaceOf = Callable[[str], Place]
VisibleOf = Callable[[str], list[str]]


def _model(m: vocab.ModelRef | None) -> dict[str, str] | None:
    return {"provider": m.provider, "id": m.id} if m is not None else None


def _token_digest(words: set[str]) -> list[str]:
    # The state is saved to disk: keep only digests of the previous input's tokens.
    known = _WORD_DIGESTS.get
    return sorted([known(w) or _word_digest(w) for w in words])


#: Digests of tokens already seen: every file's saved state digests its last input's
#: tokens, and the words of one project's inputs recur from session to session.
_WORD_DIGESTS: dict[str, str] = {}
_WORD_DIGESTS_MAX = 1 << 14
_WORD_DIGEST_CHARS = 64


def _word_digest(word: str) -> str:
    """The first 16 hex digits of the sha256 of ``word`` (remembered for short words)."""
    digest = _WORD_DIGESTS.get(word)
    if digest is None:
        digest = hashlib.sha256(word.encode()).hexdigest()[:16]
        if len(word) <= _WORD_DIGEST_CHARS:
            if len(_WORD_DIGESTS) >= _WORD_DIGESTS_MAX:
                _WORD_DIGESTS.clear()
            _WORD_DIGESTS[word] = digest
    return digest


def _identity(text: str) -> str:
    return text


#: Text beyond a limit is cut before redaction, keeping this much past the
#: limit so a credential that starts before the cut is still recognised whole.
REDACT_MARGIN = 1024


class Synthesizer:
    """Turns one stream of neutral records into trace records.

    :param harness: the harness name (``agent.name``).
    :param place_of: resolves a cwd to a :class:`~rematch_trace.place.identity.Place`.
    :param visible_of: the entries an instruction text offers.
    :param redact: replaces credentials in text written to the trace.
    :param redact_input: replaces credentials in a tool input's strings.
    :param state: a state from :meth:`state` to continue from.
    :param mode: ``"import"`` (after the fact) or ``"live"`` (from hooks, as
        the session runs): ``session_start.mode`` and the live-only rules.
    """

    def __init__(
        self,
        harness: str,
        *,
        place_of: PlaceOf | None = None,
        visible_of: VisibleOf | None = None,
        redact: Redact | None = None,
        redact_input: Callable[[Any], Any] | None = None,
        state: SynthState | None = None,
        mode: str = "import",
    ) -> None:
        self.harness = harness
        self.mode = mode
        self.live = mode == "live"
        self._place_of = place_of or (lambda cwd: Place())
        self._visible_of = visible_of or (lambda text: [])
        self._redact = redact or _identity
        self._redact_input = redact_input or (lambda v: v)
        s = state or SynthState()
        self.seq: int = s.seq
        self.t: int = s.t
        self.session: dict[str, Any] | None = s.session
        self.started: bool = s.started
        self.first_model: dict[str, str] | None = s.first_model
        self.visible: list[str] = s.visible
        self.loaded: list[dict[str, Any]] = s.loaded
        # Held records are kept as they will be written, seq (given at the flush) and t first; the
        # state keeps them as [record without seq and t, t] (see state()).
        self.buffer: list[dict[str, Any]] = [{"seq": 0, "t": t, **d} for d, t in s.buffer]
        # Held records restored from the trace's lines (restore_held), ahead of buffer: each the
        # line's bytes as written or, once read, its dict; the flags have taken them
        # into account already. The buffer holds at most RUN_BUFFER_RECORDS less them.
        self.held: list[Any] = []
        self._room = RUN_BUFFER_RECORDS
        #: Held records the state says are in the trace, until restore_held reads them.
        self.held_due: int = s.held
        self._held_skills = s.held_skills
        #: Bytes of the trace the held records' lines take where they stay as they are (keep_held): the
        #: import does not write them again. 0 once they are final (flushed).
        self.held_kept: int = 0
        self.input_at: int | None = s.input_at  # index of the run's input in held + buffer
        self.run_open: bool = s.run_open
        self.run_turns: int = s.run_turns
        self.last_aborted: bool = s.last_aborted
        self.deliverable: str | None = s.deliverable
        self.prev_tokens: list[str] | None = s.prev_tokens  # digests, as restored
        self._prev_raw: set[str] | None = None  # the previous input's tokens, in memory only
        self.calls: dict[str, list[Any]] = s.calls
        self.blocked_calls: dict[str, list[Any]] = s.blocked_calls
        self.turn: dict[str, Any] | None = s.turn
        self.last_model: dict[str, str] | None = s.last_model
        self.flags = s.flags
        self.counts: dict[str, int] = s.counts

    # -- state ---------------------------------------------------------------------------

    def state(self, held_out: bool = False) -> SynthState:
        """The whole state (saved as JSON); pass it back as ``state=`` to continue.

        With ``held_out`` (an import, whose trace is written past this point by
        :meth:`finish`), the records held back once the session started are left
        out of it: the continuation reads them back from the trace's lines
        (:meth:`restore_held`).
        """
        self._check_restored()
        if held_out and self.started and (self.held or self.buffer):
            return self._state_held_out()
        if self.held:
            # (its flags took the held records into account already: they cannot be saved as held back)
            raise ValueError("a continued import's held records are saved only in the trace")
        buffer = [[{k: v for k, v in d.items() if k != "seq" and k != "t"}, d["t"]] for d in self.buffer]
        return self._saved(buffer, self.flags)

    def _state_held_out(self) -> SynthState:
        """The state without its held records (see :meth:`state`): their count, and flags that took them in."""
        flags = FlagTracker.from_state(self.flags.to_state())
        seq = self.seq + len(self.held)
        for rec in self.buffer:
            rec["seq"] = seq  # the seq it is written with (the flush gives the same)
            if rec["ev"] in _FLAG_EVS:
                flags.observe(rec)
            seq += 1
        at = self.input_at
        skills = None
        if at is not None:
            # A held line read back unchanged has the skills the state it came from said.
            line = self.held[at] if at < len(self.held) else None
            skills = list(self._held_skills or []) if type(line) is bytes else list(self._record(at)["skills_invoked"])
        return self._saved([], flags, len(self.held) + len(self.buffer), skills)

    def _saved(self, buffer: list[list[Any]], flags: FlagTracker, held: int = 0,
               held_skills: list[str] | None = None) -> SynthState:
        return SynthState(
            seq=self.seq,
            t=self.t,
            session=self.session,
            started=self.started,
            first_model=self.first_model,
            visible=self.visible,
            loaded=self.loaded,
            buffer=buffer,
            input_at=self.input_at,
            run_open=self.run_open,
            run_turns=self.run_turns,
            last_aborted=self.last_aborted,
            deliverable=self.deliverable,
            prev_tokens=_token_digest(self._prev_raw) if self._prev_raw is not None else self.prev_tokens,
            calls=self.calls,
            blocked_calls=self.blocked_calls,
            turn=self.turn,
            last_model=self.last_model,
            flags=flags,
            counts=self.counts,
            held=held,
            held_skills=held_skills,
        )

    def restore_held(self, tail: bytes) -> None:
        """Take back the held records a state of :meth:`state` (``held_out``) left in the trace.

        ``tail`` is the trace past the state's saved length: the held records'
        lines first, in order (then what :meth:`finish` added). They are kept as
        written, read only if a rule needs one (the run's input takes a skill).
        Raises :class:`ValueError` when the lines are not the ones the state
        expects (the trace is not the one the state was taken with).
        """
        n = self.held_due
        lines = tail.split(b"\n", n)
        if len(lines) <= n:
            raise ValueError(f"the trace holds {len(lines) - 1} of the {n} held records")
        del lines[n]  # what finish added
        # The writer numbers consecutive lines: the first and the last held line at their seqs place them all.
        for i in (0, n - 1):
            if not lines[i].startswith(b'{"seq":%d,"t":' % (self.seq + i)):
                raise ValueError(f"the trace's record {self.seq + i} is not where the state expects it")
        self.held = lines
        self._room = RUN_BUFFER_RECORDS - n
        self.held_due = 0
        at = self.input_at
        if at is not None:
            if not 0 <= at < n:
                raise ValueError("the held run's input is not among the held records")
            skills = self._held_skills or []
            # The input's skills_invoked is its last field: unchanged, the line is kept as written.
            if not lines[at].endswith(b'"skills_invoked":' + orjson.dumps(skills) + b"}"):
                rec = self._record(at)
                if rec.get("ev") != Input.EV:
                    raise ValueError("the held run's input is not an input record")
                rec["skills_invoked"] = list(skills)

    def keep_held(self) -> int:
        """Leave the restored held records' lines where they are, as they are; return their bytes.

        The caller keeps those bytes of the trace (they are the first of the
        tail :meth:`restore_held` read); this synthesizer then writes nothing for
        them, and a rule that would change one (a skill for the held run's
        input) raises :class:`~rematch_trace.errors.RestartImport`. 0 when a
        held line was changed already (it must be written again).
        """
        if not self.held or any(type(rec) is not bytes for rec in self.held):
            return 0
        self.held_kept = sum(map(len, self.held)) + len(self.held)  # (each line and its newline)
        return self.held_kept

    def _record(self, at: int) -> dict[str, Any]:
        """The record at ``at`` of held + buffer, read from its line if it is held as written."""
        held = self.held
        if at >= len(held):
            return self.buffer[at - len(held)]
        rec = held[at]
        if type(rec) is bytes:
            if self.held_kept:
                raise RestartImport("a held record kept in the trace changes: the file is read whole")
            rec = loads_exact(rec)
            if type(rec) is not dict:
                raise ValueError("a held record's line is not an object")
            held[at] = rec
        return rec  # type: ignore[no-any-return]

    def _check_restored(self) -> None:
        if self.held_due:
            raise RuntimeError("restore_held() first: the state's held records are in the trace")

    @property
    def session_id(self) -> str | None:
        """The session id, once the stream's :class:`~rematch_trace.host.vocab.Session` arrived."""
        return self.session["session_id"] if self.session else None

    # -- output ----------------------------------------------------------------------------

    def _emit(self, record: Any) -> None:
        self._push(to_dict(record, 0, self.t))

    def _push(self, d: dict[str, Any]) -> None:
        """Buffer one record as :func:`to_dict` makes it (its seq is given when it is flushed)."""
        self.buffer.append(d)
        ev = d["ev"]
        self.counts[ev] = self.counts.get(ev, 0) + 1

    def _flush(self, out: list[dict[str, Any]]) -> None:
        if self.held:
            self._flush_held(out)
        seq = self.seq
        observe = self.flags.observe
        for rec in self.buffer:
            rec["seq"] = seq
            if rec["ev"] in _FLAG_EVS:
                observe(rec)
            seq += 1
            out.append(rec)
        self.seq = seq
        self.buffer = []
        self.input_at = None

    def _flush_held(self, out: list[Any]) -> None:
        """Write the held records read back from the trace (flags took them in already): nothing when they
        are kept where they are, else as written, or as read."""
        held = self.held
        if not self.held_kept:
            lines: list[bytes] = []
            for i, rec in enumerate(held):
                if type(rec) is bytes:
                    lines.append(rec)
                    continue
                if lines:  # the lines before it, written again as they were: one piece
                    out.append(orjson.Fragment(b"\n".join(lines)))
                    lines = []
                rec["seq"] = self.seq + i
                out.append(rec)
            if lines:
                out.append(orjson.Fragment(b"\n".join(lines)))
        self.seq += len(held)
        self.held = []
        self.held_kept = 0
        self._room = RUN_BUFFER_RECORDS

    def _settle(self, out: list[dict[str, Any]]) -> None:
        """Write what no longer needs holding back."""
        if not self.started:
            return
        if self.input_at is None or len(self.buffer) >= self._room:
            self._flush(out)

    def _start(self) -> None:
        """Put session_start at the head of the buffer (it is seq 0)."""
        sess = self.session or {"session_id": "", "cwd": "", "agent_kind": "main", "t": self.t}
        place = self._place_of(sess.get("cwd") or "")
        start = SessionStart(
            session_id=sess["session_id"],
            cwd=sess.get("cwd") or "",
            repo=place.repo,
            branch_hint=os.path.basename(place.repo) if place.repo else None,
            model=Model(**self.first_model) if self.first_model else None,
            mode=self.mode,
            agent=Agent(kind=sess.get("agent_kind", "main"), name=self.harness),
            omp_version=sess.get("harness_version"),
            loaded_entries=[LoadedEntry(**e) for e in self.loaded],
            repo_remote=place.repo_remote,
            subpath=place.subpath if place.repo else "",
            # Only a live session knows HEAD as it was at the start.
            head_sha=place.head_sha if self.live and place.repo else None,
            visible_entries=sorted(set(self.visible)),
        )
        first_t = self.buffer[0]["t"] if self.buffer else self.t
        self.buffer.insert(0, to_dict(start, 0, sess.get("t") or first_t))
        if self.input_at is not None:
            self.input_at += 1
        self.counts["session_start"] = 1
        self.started = True

    # -- the rules -------------------------------------------------------------------------

    def feed(self, rec: vocab.Neutral) -> list[dict[str, Any]]:
        """Take one neutral record; return the trace records now final, in order."""
        out: list[dict[str, Any]] = []
        if type(rec) in _EVENT_ONLY:
            return out  # turn ids and permission modes are the security events' alone
        if rec.t is not None:
            self.t = int(rec.t)
        # The three commonest records first, by exact type; anything else (a subclass too) by the chain below.
        if type(rec) is vocab.ToolResult:
            self._tool_result(rec)
        elif type(rec) is vocab.AssistantMessage:
            self._assistant(rec)
        elif type(rec) is vocab.UserMessage:
            self._user(rec, out)
        elif isinstance(rec, vocab.Session):
            self._session(rec, out)
            return out
        elif isinstance(rec, vocab.ToolResult):
            self._tool_result(rec)
        elif isinstance(rec, vocab.AssistantMessage):
            self._assistant(rec)
        elif isinstance(rec, vocab.UserMessage):
            self._user(rec, out)
        elif isinstance(rec, vocab.Abort):
            # The aborted turn stays open: its (synthetic) results may still follow.
            self.last_aborted = True
        elif isinstance(rec, vocab.SkillInvoked):
            self._skill(rec.name)
        elif isinstance(rec, vocab.EntryLoaded):
            self._loaded(rec)
        elif isinstance(rec, vocab.Instructions):
            if rec.text and not self.started:
                self.offer(self._visible_of(rec.text))
        elif isinstance(rec, vocab.MarkNote):
            self._close_turn()
            self._emit(MarkRecord(cls=rec.cls, note=self._clean(rec.note, HEAD_LIMIT)))
        elif isinstance(rec, vocab.ToolStarted):
            self.take_call(rec.call.id, self.digest_call(rec.call))
        elif isinstance(rec, vocab.CallBlocked):
            self._blocked(rec)
        elif isinstance(rec, vocab.ModelSwitched):
            self._close_turn()
            model = _model(rec.model)
            if model is not None and self.last_model is not None and model != self.last_model:
                self._emit(ModelChange(from_=Model(**self.last_model), to=Model(**model),
                                       reason=self._clean(rec.reason, 256) or "turn"))
            if model is not None:
                self.last_model = model
        elif isinstance(rec, vocab.SessionEnded) and rec.lifetime is True:
            # An imported process lifetime's end (a resume follows): its final records, as the live
            # capture writes them at each SessionEnd; the session goes on after them.
            out.extend(self.finish())
            return out
        elif isinstance(rec, vocab.RunEnd):
            self._close_turn()
            if self.run_open:
                self._end_run(rec.terminal)
                self.run_open = False
                # A run with no input of its own may follow (Claude Code's background task
                # notifications): its agent_end counts its own turns.
                self.run_turns = 0
            self.input_at = None
        self._settle(out)
        return out

    def _session(self, rec: vocab.Session, out: list[dict[str, Any]]) -> None:
        if self.session is None:
            self.session = {
                "session_id": rec.session_id,
                "cwd": rec.cwd,
                "agent_kind": rec.agent_kind,
                "agent_name": rec.agent_name,
                "harness_version": rec.harness_version,
                "parent": rec.parent_session_id,
                "t": rec.t,
            }
        elif rec.harness_version and not self.session.get("harness_version") and not self.started:
            self.session["harness_version"] = rec.harness_version
        if rec.model is not None and self.first_model is None and not self.started:
            self.first_model = _model(rec.model)
        if self.live and not self.started:
            # Live: the hooks name the model up front, or never; nothing to wait for.
            self._start()
            self._settle(out)

    def digest_call(self, call: vocab.ToolCall) -> list[Any]:
        """What the trace keeps of a call: ``[tool, shown input, args_hash]`` (no original input)."""
        try:
            digest: str | None = args_hash(call.input)
        except (NonExactNumber, RecursionError, ValueError, TypeError):
            digest = None
        return [call.name, truncate_input(self._redact_input(call.input)), digest]

    def offer(self, entries: Iterable[str]) -> None:
        """Entries offered to the session before its start is written (``visible_entries``); later ones are ignored."""
        if self.started:
            return
        for entry in entries:
            if entry not in self.visible:
                self.visible.append(entry)

    def take_call(self, call_id: str, digested: list[Any]) -> None:
        """Expect the result of a call seen on its own (live), digested by :meth:`digest_call`."""
        self.calls[call_id] = digested
        while len(self.calls) > vocab.MAX_PENDING_CALLS:
            del self.calls[next(iter(self.calls))]
        if self.live:
            self.run_open = True

    def _blocked(self, rec: vocab.CallBlocked) -> None:
        call = self.calls.pop(rec.call_id, None)
        if call is not None:
            # A harness may still report a result for a call its hook denied: it keeps the call's digest.
            self.blocked_calls[rec.call_id] = call
            while len(self.blocked_calls) > MAX_BLOCKED_KEPT:
                del self.blocked_calls[next(iter(self.blocked_calls))]
        tool = call[0] if call is not None else rec.tool
        self._push(
            {
                "seq": 0,
                "t": self.t,
                "ev": ToolBlocked.EV,
                "tool": tool or "",
                "call_id": rec.call_id,
                "hook_id": self._clean(rec.hook_id, 256),
                "reason": self._clean(rec.reason, HEAD_LIMIT),
                "args_hash": call[2] if call is not None else None,
            }
        )

    def finish(self, files_changed: list[list[str]] | None = None) -> list[dict[str, Any]]:
        """End the session: the remaining records, agent_end and session_shutdown.

        Call it on a copy of the state you mean to keep: it ends this object.
        ``files_changed`` (live capture only) goes into ``session_shutdown``.
        """
        self._check_restored()
        out: list[dict[str, Any]] = []
        self._close_turn()
        if not self.started:
            self._start()
        if self.run_open:
            self._end_run()
            self.run_open = False
        self.input_at = None
        self._flush(out)
        reasons = self.flags.reasons()
        shutdown = to_dict(SessionShutdown(reasons=reasons, flagged=bool(reasons)), self.seq, self.t)
        if files_changed:
            shutdown["files_changed"] = files_changed
        self.seq += 1
        out.append(shutdown)
        # (a live session writes one per process lifetime: see docs/live-capture.md)
        self.counts["session_shutdown"] = self.counts.get("session_shutdown", 0) + 1
        return out

    def _tool_result(self, rec: vocab.ToolResult) -> None:
        call_id = rec.call_id
        call = self.calls.pop(call_id, None)
        if call is None and self.blocked_calls:
            call = self.blocked_calls.pop(call_id, None)
        if call is None:
            tool, shown, digest = rec.tool or "", None, None
        else:
            tool, shown, digest = call
        is_error = bool(rec.is_error) if rec.is_error is not None else bool(rec.error_class)
        error_class = None
        if is_error:
            error_class = vocab.result_error_class(rec)  # settled once, before this and the event sink
        size = int(rec.output_bytes)
        # ToolResultRecord's fields, as to_dict gives them, built directly (one per result).
        self._push(
            {
                "seq": 0,
                "t": self.t,
                "ev": _TOOL_RESULT,
                "tool": tool,
                "call_id": call_id,
                "input": shown,
                "args_hash": digest,
                "result_bytes": size if size > 0 else 0,
                "is_error": is_error,
                "error_class": error_class,
            }
        )
        turn = self.turn
        if turn is not None:
            waiting = turn["waiting"]
            if call_id in waiting:
                waiting.remove(call_id)
                if not waiting:
                    self._close_turn()

    def _assistant(self, rec: vocab.AssistantMessage) -> None:
        if self.turn is not None:
            self._close_turn()
        model = _model(rec.model)
        if model is None and self.live:
            model = self.first_model  # a stop hook names no model: the session's
        if model is not None and self.first_model is None:
            self.first_model = model
        if not self.started:
            self._start()
        self.run_open = True
        self.run_turns += 1
        self.last_aborted = bool(rec.aborted)
        text = self._clean(rec.text, HEAD_LIMIT) if rec.text else ""
        if text:
            self.deliverable = text
        u = rec.usage or _NO_USAGE
        usage = [u.input, u.output, u.cache_read, u.cache_write, u.total, u.cost, u.cache_write_1h]
        if not rec.tool_calls:
            # No result to wait for: the turn ends now (what _close_turn would make of it at once).
            self._turn_end(model, usage, rec.stop_reason, text)
            return
        waiting: list[str] = []
        calls = self.calls
        for call in rec.tool_calls:
            calls[call.id] = self.digest_call(call)
            waiting.append(call.id)
        while len(calls) > vocab.MAX_PENDING_CALLS:
            del calls[next(iter(calls))]
        self.turn = {
            "model": model,
            "usage": usage,
            "stop_reason": rec.stop_reason,
            "text_head": text,
            "waiting": waiting,
        }

    def _close_turn(self) -> None:
        turn = self.turn
        if turn is None:
            return
        self.turn = None
        self._turn_end(turn["model"], turn["usage"], turn["stop_reason"], turn["text_head"])

    def _turn_end(self, model: dict[str, str] | None, usage: list[Any], stop_reason: str | None, text: str) -> None:
        """Buffer a turn's turn_end (and a model_change before it, when the model changed)."""
        if model is not None:
            if self.last_model is not None and model != self.last_model:
                self._emit(ModelChange(from_=Model(**self.last_model), to=Model(**model), reason="turn"))
            self.last_model = model
        # A state saved before the 1-hour share was kept holds six values.
        i, o, cr, cw, total, cost, *more = usage
        u: dict[str, Any] = {"input": i, "output": o, "cacheRead": cr, "cacheWrite": cw, "totalTokens": total,
                             "cost": cost}
        if more and more[0]:
            u["cacheWrite1h"] = more[0]  # only when there is one: traces without it read as before
        # TurnEnd's fields, as to_dict gives them, built directly (one per assistant message).
        self._push(
            {
                "seq": 0,
                "t": self.t,
                "ev": _TURN_END,
                "model": {"provider": model["provider"], "id": model["id"]} if model else None,
                "usage": u,
                "stop_reason": stop_reason,
                "text_head": text,
            }
        )

    def _user(self, rec: vocab.UserMessage, out: list[dict[str, Any]]) -> None:
        raw = normalize_mark(rec.text)
        if is_dropped_command(raw) and not rec.skills:
            return
        self._close_turn()
        if self.run_open:
            self._end_run()
        # A new run starts: what the previous one held back is final now.
        self.input_at = None
        if self.started:
            self._flush(out)
        words = tokens(raw)
        # Live: an input delivered into a run that had no stop since its input interrupts
        # it. Import: the previous assistant message stopped aborted.
        idle = not self.run_open if self.live else not self.last_aborted
        if self._prev_raw is not None:
            label = prelabel_tokens(raw, words, self._prev_raw, not idle)
        elif self.prev_tokens is None:  # the session's first input: nothing to compare its tokens with
            label = prelabel_tokens(raw, words, None, not idle)
        else:  # continuing from a saved state, which keeps only digests
            label = prelabel_tokens(raw, set(_token_digest(words)), self.prev_tokens_set(), not idle)
        skills = skills_in(raw)
        for s in rec.skills:
            if s not in skills:
                skills.append(s)
        # Input's fields, as to_dict gives them, built directly (skills is this record's own list).
        self._push(
            {
                "seq": 0,
                "t": self.t,
                "ev": Input.EV,
                "text": self._clean(raw, TEXT_LIMIT),
                "source": rec.source,
                "idle": idle,
                "after_deliverable": self.deliverable,
                "prelabel": label,
                "skills_invoked": skills,
            }
        )
        self.input_at = len(self.buffer) - 1
        if self.live and label.startswith("mark:"):
            # The live adapter records the mark itself as well (the seed's mark record).
            note = MARK_RE.sub("", raw.lstrip(), count=1).strip()
            self._emit(MarkRecord(cls=label[5:], note=self._clean(note, HEAD_LIMIT)))
        self._prev_raw = words
        self.prev_tokens = None
        self.last_aborted = False
        self.run_open = True
        self.run_turns = 0

    def _end_run(self, terminal: bool = True) -> None:
        """Buffer the run's agent_end (AgentEnd's fields, built directly); ``terminal`` as the harness said."""
        self._push({"seq": 0, "t": self.t, "ev": AgentEnd.EV, "turns": self.run_turns, "is_terminal": terminal,
                    "yielded": False})

    def clean_text(self, text: str, limit: int) -> str:
        """``text`` as the trace writes it: redacted, valid UTF-8, cut to ``limit`` bytes."""
        return self._clean(text, limit)

    def _clean(self, text: str, limit: int) -> str:
        """Redacted, valid UTF-8, cut to ``limit`` bytes (redacting only what can be kept)."""
        # cut_utf8's own first test, inline: most texts are far below either limit.
        if len(text) > (limit + REDACT_MARGIN) // 4:
            text = cut_utf8(text, limit + REDACT_MARGIN)
        text = clean(self._redact(text))
        return text if len(text) <= limit // 4 else cut_utf8(text, limit)

    def prev_tokens_set(self) -> set[str] | None:
        """The previous input's token digests (the new input's tokens are digested alike)."""
        return set(self.prev_tokens) if self.prev_tokens is not None else None

    def _skill(self, name: str) -> None:
        at = self.input_at
        if at is None or not name:
            return
        if at < len(self.held) and type(self.held[at]) is bytes and name in (self._held_skills or ()):
            return  # the held input's line, as written, lists it already (see restore_held)
        skills = self._record(at)["skills_invoked"]
        if name not in skills:
            skills.append(name)

    def _loaded(self, rec: vocab.EntryLoaded) -> None:
        entry = {"id": rec.id, "version": rec.version, "sha": rec.sha}
        if not self.started:
            if entry not in self.loaded:
                self.loaded.append(entry)
            return
        # session_start is written: a later load keeps its version and sha in the retrieval record.
        late = [LoadedEntry(rec.id, rec.version, rec.sha)] if rec.version is not None or rec.sha is not None else []
        self._emit(Retrieval(entry_ids=[rec.id], units=[], bytes=0, loaded_entries=late))
