"""Import one source file: plugin records in, trace (and event) files out.

The pass is a pipeline of generators, so memory holds one line and the
per-session state, never a file. When the plugin's input runs out, everything
needed to continue is snapshotted (the plugin's state, each session's
synthesizer state, the byte offset reached and the length of each output
written so far); the final records (held-back records, ``agent_end``,
``session_shutdown``) are written after that point, so a later run on a grown
file truncates them away, restores the snapshot and continues, in place, under
the rollback journal of :mod:`rematch_trace.store.journal`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from rematch_trace.errors import RestartImport
from rematch_trace.host import vocab
from rematch_trace.host.facade import Host, PluginFailure
from rematch_trace.host.fs import source_name
from rematch_trace.host.source import Problem, RawRecord, Source
from rematch_trace.host.text import clean
from rematch_trace.importing.pipeline import Sink
from rematch_trace.importing.pipeline import wiring as wiring_of
from rematch_trace.importing.settings import BARE, ImportSettings
from rematch_trace.live.folder import is_live
from rematch_trace.store.claims import Claims, Conflict
from rematch_trace.store.datafolder import AtomicFile, DataDir
from rematch_trace.store.journal import AppendFile, new_generation, rollback, write_entry
from rematch_trace.store.pending import write_pending
from rematch_trace.store.search_rows import Handed
from rematch_trace.store.states import (
    Detected,
    SavedState,
    StreamState,
    dump_saved,
    load_saved,
    state_dumps,
    state_loads,
)
from rematch_trace.trace.lines import dumps_record, dumps_records
from rematch_trace.trace.synth import Synthesizer

if TYPE_CHECKING:
    from rematch_trace.importing.search_sources import ConversationRows
    from rematch_trace.report.consumers import Consumers

#: Problems kept per source for reporting (all are counted).
MAX_PROBLEMS_KEPT = 200
#: Bytes of a source's trace rows, or characters of its conversation rows, past which they are not kept
#: (``keep_records``): the index then reads that trace and source itself, so a worker never holds a huge
#: file's rows at once.
KEEP_RECORDS_BYTES = 32 * 1024 * 1024
#: The fields of a session record, in the order :func:`attrs.asdict` gives them.
_SESSION_FIELDS = tuple(f.name for f in attrs.fields(vocab.Session))


@attrs.define
class SessionOutcome:
    """What one imported session produced."""

    stream: str
    session_id: str
    agent_kind: str
    trace_path: Path
    events_path: Path | None
    flagged: bool = False
    reasons: list[str] = attrs.field(factory=list)
    seqs: dict[str, list[int]] = attrs.field(factory=dict)
    counts: dict[str, int] = attrs.field(factory=dict)
    cwd: str = ""
    repo: str | None = None
    repo_remote: str | None = None
    #: The session was captured live: its live trace wins, the import wrote nothing for it.
    kept_live: bool = False
    #: The committed trace's identity (see :func:`~rematch_trace.store.datafolder.stamp_of`).
    stamp: tuple[int, int, int] | None = None
    #: The session that started this one (``Session.parent_session_id``), if the transcript names it.
    parent: str | None = None
    #: The consumers fed the trace's lines as they were written (``keep_records``; report/consumers.py):
    #: their handovers (the stored summary, the index's rows) are asked for once the ledger row is known.
    consumers: Consumers | None = None


@attrs.define
class SourceOutcome:
    """What importing one source did."""

    source: Source
    sessions: list[SessionOutcome] = attrs.field(factory=list)
    problems: list[Problem] = attrs.field(factory=list)
    problem_count: int = 0
    malformed: int = 0
    offset: int = 0
    resumed: bool = False
    #: The state to continue from, as the JSON the ledger keeps (see :attr:`saved`).
    saved_blob: bytes = b""
    #: Sessions whose trace another file's copy holds (see :mod:`rematch_trace.store.claims`).
    conflicts: list[Conflict] = attrs.field(factory=list)
    #: Whether a session was left to another file's copy (this file's copy of it was not written).
    dropped: bool = False
    #: The search index's rows of the plugin's conversation items, made as the source was read
    #: (``keep_records``; ``None`` when not kept or too many: importing/search_sources.ConversationRows).
    said: Handed | None = None
    #: The conversation store's rows of the same items (store/conversation_rows.py), made in the same pass
    #: (``keep_records``; empty when not kept).
    conversation: list[list[Any]] = attrs.field(factory=list)

    @property
    def saved(self) -> SavedState | None:
        """The state to continue from (``saved=`` of a later :func:`import_source`)."""
        return load_saved(self.saved_blob) if self.saved_blob else None


class _Discarded:
    """The output of a session captured live: the import's records for it go nowhere."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.size = 0
        self.stamp: tuple[int, int, int] | None = None  # nothing committed

    def write(self, data: bytes) -> None:
        """Drop ``data``."""

    def flush(self) -> None:
        """Nothing to flush."""

    def commit(self, fsync: bool = False) -> None:
        """Nothing to commit: the live trace stays."""

    def discard(self) -> None:
        """Nothing to discard."""


#: The records a trace "holds" when a live trace and an import of the same session are weighed. A call
#: rematch denied is a ``tool_blocked`` live and the harness's error ``tool_result`` on import: both count,
#: or every session with a deny would lose its live trace to the import of its transcript.
HELD_KINDS = ("input", "tool_result", "tool_blocked", "turn_end")


def _verdicts_of(events: Any, path: Path) -> list[bytes]:
    """The ``tool_verdict`` lines an import writing ``events`` would drop (none for a stream it keeps).

    A stream written whole replaces the file's every line; one continued in place rewrites its tail.
    """
    from rematch_trace.security.events import VERDICT_KIND, verdict_lines

    if isinstance(events, AppendFile):
        old = events.tail
    elif isinstance(events, AtomicFile):
        try:
            old = path.read_bytes()
        except OSError:  # none yet (every first import), or unreadable: nothing to carry
            return []
    else:
        return []
    if VERDICT_KIND not in old:
        return []
    return list(dict.fromkeys(verdict_lines(old)))


def held_by(trace: Path) -> int:
    """How many inputs, tool results (or blocks) and turn ends a trace file holds (0 when it is absent)."""
    try:
        data = trace.read_bytes()
    except OSError:
        return 0
    return sum(data.count(b'"ev":"' + kind.encode() + b'"') for kind in HELD_KINDS)


class _Out:
    """One session's outputs while the import runs.

    A new session writes beside its targets (renamed over them at commit); a
    resumed one continues its files in place past the kept length. A session
    captured live keeps its live trace (see docs/live-capture.md): the import
    runs its records through (the plugin's state must go on) and writes nothing.
    """

    def __init__(
        self,
        stream: str,
        session: vocab.Session,
        synth: Synthesizer,
        sink: Sink | None,
        data: DataDir,
        saved: StreamState | None,
        fields: dict[str, Any] | None = None,
    ) -> None:
        self.stream = stream
        self.session = session
        self.synth = synth
        self.sink = sink
        self.session_id = session.session_id
        # The record is frozen: once per session (recursing only into a model, the one nested record).
        # A continued session's record was made from ``fields`` (its saved fields): they are used as
        # they are, not walked again.
        self.session_fields = fields if fields is not None else attrs.asdict(session, recurse=session.model is not None)
        self.trace: AtomicFile | AppendFile | _Discarded
        #: The consumers fed each line written (report/consumers.py; ``keep_records`` only).
        self.consumers: Consumers | None = None
        self.events: AtomicFile | AppendFile | _Discarded | None = None
        trace_path = data.trace_path(self.session_id)
        events_path = data.events_path(self.session_id)
        self.kept_live = is_live(data, self.session_id)
        #: A session captured live that a full import may still win: what its live trace holds
        #: (:func:`held_by`); the two are weighed at commit (a live trace holding less never wins).
        self.live_rival: int | None = None
        if self.kept_live and saved is None:
            self.live_rival = held_by(trace_path)
            self.kept_live = False
        #: A continued session that had no flag reasons has no pending file to remove.
        self.had_reasons = saved is None or bool(saved.synth.flags.reasons())
        if self.kept_live:
            self.trace = _Discarded(trace_path)
            self.events = _Discarded(events_path) if sink is not None else None
        elif saved is not None:
            self.trace = AppendFile(trace_path, saved.trace_len)
            try:
                if sink is not None:
                    self.events = AppendFile(events_path, saved.events_len)
            except BaseException:
                self.trace.discard()
                raise
        else:
            self.trace = AtomicFile(trace_path)
            self.events = AtomicFile(events_path) if sink is not None else None
        #: The ``tool_verdict`` lines of the stream this import replaces (or of the part it rewrites):
        #: rematch's live verdicts, which no transcript states, written again after the import's events.
        self.carried: list[bytes] = _verdicts_of(self.events, events_path)

    def appended(self) -> list[AppendFile]:
        """The files continued in place."""
        return [f for f in (self.trace, self.events) if isinstance(f, AppendFile)]

    def write(self, recs: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
        # Most records make no trace line yet (a run's records wait for its end) and one or
        # two events: one write per call and stream, none when there is nothing.
        if recs:
            if self.consumers is None:
                self.trace.write(dumps_records(recs))
            else:
                self._write_fed(recs, self.consumers)
        if events and self.events is not None:
            self.events.write(dumps_records(events))

    def _write_fed(self, recs: list[dict[str, Any]], consumers: Consumers) -> None:
        """Write ``recs`` and feed each line to the session's consumers (nothing reads the trace again)."""
        lines = [dumps_record(r) for r in recs]
        consumers.feed_records(self.trace.size, recs, lines)
        self.trace.write(lines[0] if len(lines) == 1 else b"".join(lines))

    def discard(self) -> None:
        self.trace.discard()
        if self.events is not None:
            self.events.discard()


def _restore_held(out: _Out) -> None:
    """Give a continued session's synthesizer the held records its state left in the trace's tail.

    A tail that does not hold them as the state says (a trace changed since, or a session
    captured live since, whose trace is not this import's) makes the file read whole.
    """
    if not isinstance(out.trace, AppendFile):
        raise RestartImport(f"{out.session_id}: the held records are in a trace this import does not continue")
    try:
        out.synth.restore_held(out.trace.tail)
    except ValueError as err:
        raise RestartImport(f"{out.session_id}: {err}") from None
    # Lines the continuation would write again as they are stay where they are (neither written nor undone).
    kept = out.synth.keep_held()
    lines = out.trace.tail[:kept]
    at = out.trace.size
    out.trace.keep_more(kept)
    if kept and out.consumers is not None:
        # The consumers' states are of the trace before them; they are the trace's now, fed as read. While
        # they stay held (the state's trace_len then ends before them again) the states saved are the ones before.
        out.consumers.feed_kept(at, lines)


class SourceImport:
    """One import pass over one source (see the module docstring)."""

    def __init__(
        self,
        host: Host,
        source: Source,
        data: DataDir,
        settings: ImportSettings = BARE,
        *,
        saved: SavedState | None = None,
        claims: Claims | None = None,
        detected: Detected | None = None,
        own_saved: bool = False,
        keep_records: bool = False,
    ) -> None:
        self.host = host
        #: How the source was claimed, kept in the state so a continuation need not detect it again.
        self.detected = detected
        self.claims = claims
        self.source = source
        self.data = data
        self.saved = saved
        wiring = wiring_of(settings, host)
        self.sink_factory = wiring.sink_factory
        self.redact = wiring.redact
        self.redact_input = wiring.redact_input
        self.fsync = settings.fsync
        self.outs: dict[str, _Out] = {}
        self.result = SourceOutcome(source)
        self.snapshot: bytes | None = None
        self.generation: str | None = None
        self.offset = saved.offset if saved is not None else 0
        #: Whether the trace's lines and the plugin's conversation items are made into the search index's
        #: rows as the source is read (``keep_records``).
        self.index_rows = keep_records
        #: The conversation items' rows, made beside the translation (``None``: not made, or given up).
        self.conv: ConversationRows | None = None
        #: Records the translation has taken, and their bytes.
        self._taken_count = 0
        #: What the reading raised (the plugin's conversation items may be the one to meet it: see ``run``).
        self._read_error: BaseException | None = None
        #: The last raw record handed to the plugin's translation, to say where it failed.
        self.last: RawRecord | None = None
        # The plugin changes its state in place: a copy, so a caller's saved state stays as it was
        # (unless the caller loaded it for this import alone, ``own_saved``).
        self.plugin_state: dict[str, Any] = {}
        if saved is not None:
            self.plugin_state = saved.plugin if own_saved else state_loads(state_dumps(saved.plugin))

    def _read(self) -> Iterator[RawRecord]:
        """The source's records from the offset (its problems counted and kept)."""
        try:
            for item in self.host.read(self.source, self.offset):
                if isinstance(item, Problem):
                    self.result.problem_count += 1
                    if item.kind == "malformed":
                        self.result.malformed += 1
                    if len(self.result.problems) < MAX_PROBLEMS_KEPT:
                        self.result.problems.append(item)
                    continue
                yield item
        except BaseException as err:
            self._read_error = err
            raise

    def _taken(self, records: Iterator[RawRecord]) -> Iterator[RawRecord]:
        """``records`` as the translation takes them; once they run out, the snapshot to continue from."""
        for item in records:
            self.offset = item.end
            self.last = item
            self._taken_count += 1
            if self.conv is not None and self.conv.held > KEEP_RECORDS_BYTES:
                self.conv = None  # too large to hold the rows of: the index reads this source itself
            yield item
        if self._read_error is not None:
            raise self._read_error  # met by the conversation items first: the import's failure all the same
        self._take_snapshot()

    def _take_snapshot(self) -> None:
        streams = {}
        for key, out in self.outs.items():
            streams[key] = StreamState(
                session=out.session_fields,
                # The held records stay in the trace, past trace_len (not in the session captured live).
                synth=out.synth.state(held_out=not out.kept_live),
                sink=out.sink.state() if out.sink is not None else None,
                # (held lines kept in place stay past the saved length, where the next continuation reads them)
                trace_len=out.trace.size - out.synth.held_kept,
                events_len=out.events.size if out.events is not None else 0,
                # The summary's fold over the trace up to trace_len (the held lines kept in place are past it).
                summary=(None if out.consumers is None or out.kept_live else
                         out.consumers.states(held_kept=bool(out.synth.held_kept)).get("summary")),
            )
        # The journal generation: the ledger holding it is what commits the resume.
        snap = SavedState(offset=self.offset, plugin=self.plugin_state, streams=streams,
                          harness=self.source.harness, head_skip=self.source.mutable_prefix, journal=self.generation,
                          detected=self.detected, rewritten=self.source.rewritten)
        # Encoded now: the copy that later records cannot change, the proof it
        # saves, and the very bytes the ledger stores.
        self.snapshot = dump_saved(snap)

    def _open(self, rec: vocab.Session, fields: dict[str, Any] | None = None) -> _Out:
        """Open the outputs of a session; ``fields`` are ``rec``'s, as :func:`attrs.asdict` gives them,
        when the caller has them (a continued session's saved fields)."""
        saved = self.saved.streams.get(rec.stream) if self.saved is not None else None
        taken = {o.session_id for o in self.outs.values()}
        if rec.session_id in taken:  # two streams claiming one id: keep both
            n = 2
            while f"{rec.session_id}~{n}" in taken:
                n += 1
            rec = attrs.evolve(rec, session_id=f"{rec.session_id}~{n}")
            fields = None
        synth = Synthesizer(
            self.source.harness,
            place_of=self.host.place,
            visible_of=lambda text: self.host.visible(self.source, text),
            redact=self.redact,
            redact_input=self.redact_input,
            state=saved.synth if saved is not None else None,
        )
        sink = None
        if self.sink_factory is not None:
            sink = self.sink_factory(self.source, rec, saved.sink if saved is not None else None)
        out = _Out(rec.stream, rec, synth, sink, self.data, saved, fields)
        if self.index_rows and not isinstance(out.trace, _Discarded):
            out.consumers = self._consumers(out.trace, saved)
        self.outs[rec.stream] = out
        if synth.held_due:
            _restore_held(out)
        return out

    def _consumers(self, trace: AtomicFile | AppendFile, saved: StreamState | None) -> Consumers:
        """The registered consumers of a session's lines (report/consumers.py)."""
        from rematch_trace.report.consumers import Consumers, Opening

        redact: Callable[[str], Any] | None = None
        if not self.redact:
            # A trace written unredacted is redacted for the index (it never holds raw text).
            from rematch_trace.security.redact import default_redactor

            redact = default_redactor().redact
        whole = isinstance(trace, AtomicFile)
        states = {"summary": saved.summary} if saved is not None and saved.summary is not None and not whole else {}
        return Consumers(Opening(self.data, trace.size, whole, states, redact, KEEP_RECORDS_BYTES))

    def run(self) -> SourceOutcome:
        """Import the source; on any failure leave every earlier output as it was."""
        self.result.resumed = self.saved is not None
        entry: dict[str, Any] | None = None
        try:
            # Reopen the sessions a resumed import had already started, and make
            # the in-place continuation undoable before a byte of them changes.
            for stream, saved in (self.saved.streams if self.saved is not None else {}).items():
                fields = {**saved.session, "stream": stream}
                sess = vocab.Session(**fields)
                # The saved fields are the record's own when they are all there, in order (a state
                # of an earlier version, lacking one, has its record's fields made again).
                known = fields if tuple(fields) == _SESSION_FIELDS and sess.model is None else None
                if self.claims is not None:
                    # Continue in place only a trace this source wrote in an earlier run;
                    # else (another file's copy took the session) read the file whole.
                    with self.claims.held():
                        if not self.claims.may_continue(sess.session_id):
                            raise RestartImport(f"{sess.session_id}: the trace is another file's copy")
                        self._open(sess, known)
                else:
                    self._open(sess, known)
            appended = [f for out in self.outs.values() for f in out.appended()]
            if appended:
                self.generation = new_generation()
                # Named as the ledger names the source: recovery looks its generation up there.
                entry = write_entry(self.data, source_name(self.source.path), self.generation, appended, self.fsync)
                for f in appended:
                    f.begin()
            raw = self._read()
            if self.index_rows:
                # The conversation items' rows are made beside the translation, from the same reading.
                import itertools

                from rematch_trace.importing.search_sources import ConversationRows

                raw, for_items = itertools.tee(raw)
                self.conv = ConversationRows(self.host, self.source, for_items, self.offset,
                                             self.result.conversation)
                del for_items
            for rec in self.host.translate(self.source, self._taken(raw), self.plugin_state):
                conv = self.conv
                if conv is not None and conv.taken < self._taken_count:
                    conv.step(self._taken_count)
                    if self._read_error is not None:
                        raise self._read_error
                if type(rec) is vocab.ToolResult:
                    rec = vocab.settle_error_class(rec)  # once, for the trace and the event sink
                elif type(rec) is vocab.Session:
                    wrong = vocab.field_errors(rec)
                    if wrong:
                        # Caught here, it is the plugin's; later, a cwd that is no string would
                        # fail in identify_place and be blamed on the plugin that identifies places.
                        raise PluginFailure(self.source.plugin or self.source.harness, "to_trace_records",
                                            TypeError("; ".join(wrong)))
                    if not rec.session_id.isascii():
                        # Lone surrogates (a hostile JSON escape) have no UTF-8 spelling for traces or ledger.
                        rec = attrs.evolve(rec, session_id=clean(rec.session_id))
                out = self.outs.get(rec.stream)
                if out is None:
                    if not isinstance(rec, vocab.Session):
                        continue  # a plugin bug: records for a stream it never opened
                    out = self._open(rec)
                recs = out.synth.feed(rec)
                events = out.sink.feed(rec) if out.sink is not None else []
                out.write(recs, events)
            if self.snapshot is None:
                self._take_snapshot()
            if self.conv is not None:
                self.result.said = self.conv.finish()
                self.conv = None
            for out in self.outs.values():
                out.write(out.synth.finish(), out.sink.finish() if out.sink is not None else [])
            self._commit()
        except PluginFailure as err:
            self._undo(entry)
            if err.hook != "to_trace_records" or self.last is None:
                raise
            # Line numbers count from the resume point on a resume: there the byte offset says it.
            where = f"byte {self.last.offset}" if self.result.resumed else f"line {self.last.line}"
            raise err.at(where) from err.error
        except BaseException:
            self._undo(entry)
            raise
        self.result.offset = self.offset
        self.result.saved_blob = self.snapshot or b""
        return self.result

    def _undo(self, entry: dict[str, Any] | None) -> None:
        """Leave every earlier output as it was."""
        for out in self.outs.values():
            out.discard()
        if entry is not None:
            rollback(self.data, entry, self.fsync)

    def _commit(self) -> None:
        for out in self.outs.values():
            if out.live_rival is not None and not self._import_wins(out):
                out.discard()
                out.kept_live = True
                self._forget_stream(out.stream)
            if out.kept_live:
                self.result.sessions.append(
                    SessionOutcome(stream=out.stream, session_id=out.session_id, agent_kind=out.session.agent_kind,
                                   trace_path=out.trace.target, events_path=None, kept_live=True)
                )
                continue
            if self.claims is None or not isinstance(out.trace, AtomicFile):
                self._commit_one(out)
                continue
            # The trace, events and pending of a session are replaced together, one
            # source at a time: a copy holding less never replaces one holding more.
            copies = [f for f in (out.trace, out.events) if isinstance(f, AtomicFile)]
            with self.claims.held():
                if self.claims.may_write(out.session_id, sum(out.synth.counts.values()), out.trace.size, copies):
                    self._commit_one(out)
                    continue
            out.discard()
            self.result.dropped = True
            self._forget_stream(out.stream)
        if self.claims is not None:
            self.result.conflicts = self.claims.conflicts

    def _import_wins(self, out: _Out) -> bool:
        """Whether the import of a session captured live holds more than its live trace.

        A live capture that stopped early (one ``SessionStart`` payload, hooks removed, a capture
        that failed) must not hide the transcript. When the import holds more, the session's
        live state is retired, under its lock, so the import's trace is the session's from now
        on (a later hook of it starts a new live trace, which the next import weighs again).
        """
        from rematch_trace.live.folder import lock_path, state_path
        from rematch_trace.live.session_writer import SessionLock

        ours = sum(out.synth.counts.get(kind, 0) for kind in HELD_KINDS)
        if ours <= (out.live_rival or 0):
            return False
        with SessionLock(lock_path(self.data, out.session_id)):
            if ours <= held_by(out.trace.target):  # the live trace grew meanwhile
                return False
            try:
                os.unlink(state_path(self.data, out.session_id))
            except FileNotFoundError:
                pass
        return True

    def _forget_stream(self, stream: str) -> None:
        """Leave a stream whose session another file's copy holds out of the state to continue from.

        A first import is then not continued at all (the next change reads the file
        whole, and decides again); a continued one must keep its journal generation,
        so only the stream goes (its later records are not this file's to write).
        """
        if self.snapshot is None:
            return
        if self.generation is None:
            self.snapshot = None
            return
        snap = load_saved(self.snapshot)
        snap.streams.pop(stream, None)
        self.snapshot = dump_saved(snap)

    def _commit_one(self, out: _Out) -> None:
        out.trace.commit(self.fsync)
        if out.events is not None:
            if out.carried:
                out.events.write(b"".join(out.carried))
            out.events.commit(self.fsync)
        elif isinstance(out.trace, AtomicFile):
            # Written whole without events (--no-events): an event stream an earlier import left
            # would describe a trace that is no longer there, and audit would read it as current.
            try:
                os.unlink(self.data.events_path(out.session_id))
            except FileNotFoundError:
                pass
        synth = out.synth
        reasons = synth.flags.reasons()
        seqs = synth.flags.seqs()
        place = self.host.place(out.session.cwd or "")
        if reasons or out.had_reasons:
            write_pending(self.data, out.session_id, self.source.harness, reasons, seqs, out.trace.target, self.fsync)
        self.result.sessions.append(
            SessionOutcome(
                stream=out.stream,
                session_id=out.session_id,
                agent_kind=out.session.agent_kind,
                trace_path=out.trace.target,
                events_path=out.events.target if out.events is not None else None,
                flagged=bool(reasons),
                reasons=reasons,
                seqs=seqs,
                counts=dict(synth.counts),
                cwd=out.session.cwd,
                repo=place.repo,
                repo_remote=place.repo_remote,
                stamp=out.trace.stamp,
                parent=out.session.parent_session_id,
                consumers=out.consumers,
            )
        )


def import_source(
    host: Host,
    source: Source,
    data: DataDir,
    settings: ImportSettings = BARE,
    *,
    saved: SavedState | None = None,
    claims: Claims | None = None,
    detected: Detected | None = None,
    own_saved: bool = False,
    keep_records: bool = False,
) -> SourceOutcome:
    """Import one source; with ``saved``, continue a grown file (falling back to a full import).

    ``settings`` say what is written (the event stream, redaction, fsync); the
    default writes the trace alone, unredacted. With ``claims``, a session whose
    trace another file's copy holds is written only if this copy holds at least
    as much (see :mod:`rematch_trace.store.claims`). ``detected`` (how the file was
    claimed) is kept in the saved state, so that continuing it can skip detection. With
    ``own_saved``, ``saved`` was loaded for this import alone and is continued in place. With
    ``keep_records``, the outcome holds the search index's rows of what was read and written
    (:attr:`SourceOutcome.said`, and each session's consumers).
    """
    if saved is not None:
        try:
            return SourceImport(host, source, data, settings, saved=saved, claims=claims, detected=detected,
                                own_saved=own_saved, keep_records=keep_records).run()
        except RestartImport:
            pass
    return SourceImport(host, source, data, settings, claims=claims, detected=detected,
                        keep_records=keep_records).run()


def remove_outputs(data: DataDir, session_id: str) -> None:
    """Delete a session's trace, events and pending files."""
    for p in (data.trace_path(session_id), data.events_path(session_id), data.pending_path(session_id)):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


__all__ = ["SessionOutcome", "Sink", "SourceImport", "SourceOutcome", "import_source", "remove_outputs"]
