"""The export of a data folder's sessions: which to send, in which trace, in bounded batches, acknowledged.

Sessions come in families: a top session and the subagents, sidechains and compaction runs under
it (the ledger's ``parent``), all in the top session's trace. A subagent's span hangs under the
tool call of its parent that started it (the parent's subagent call whose time span holds the
subagent's start; docs/otel.md). A family whose every trace is as the endpoint acknowledged it is
not read past its digest; in a changed one, each session's changed spans are sent (a new session's
all of them), then recorded in the acknowledgement book once the endpoint acknowledged every one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import attrs
import orjson

from rematch_trace.export.keys import Ids
from rematch_trace.export.spans import (
    Built,
    SessionInfo,
    SpanData,
    SubagentCall,
    build,
    changed,
    part_span_id,
    session_span,
)
from rematch_trace.store.datafolder import DataDir
from rematch_trace.store.export_acks import AckBook, Acked

#: Spans held before a batch is sent: the memory bound of an export, whatever the archive's size.
BATCH_SPANS = 2048
#: How far past a subagent call's result a subagent may start and still be placed under it (ms).
SLACK_MS = 1000


class Sender(Protocol):
    """Where batches go (:class:`~rematch_trace.export.otlp.HttpSender`, ``FileSender``)."""

    url: str

    def send(self, spans: Sequence[SpanData]) -> None:
        """Send one batch, returning once it is acknowledged (else raise ``SendFailed``)."""

    def close(self) -> None:
        """Release what the sender holds."""


@attrs.define
class Outcome:
    """What an export did."""

    sessions: int = 0
    spans: int = 0
    unchanged: int = 0
    problems: list[str] = attrs.field(factory=list)
    #: Why the endpoint did not acknowledge a batch (the run stopped there), else ``None``.
    failed: str | None = None


def ledger_sessions(data: DataDir) -> list[SessionInfo]:
    """Every session the ledger holds, as :class:`SessionInfo` (read-only, nothing settled here)."""
    from rematch_trace.store.ledger import Ledger

    out = []
    with Ledger(data.ledger, readonly=True) as ledger:
        rows = ledger.sessions_raw(("harness", "session_id", "agent_kind", "parent", "trace_path", "events_path",
                                    "domain", "reasons", "seqs"))
    for r in rows:
        reasons = _json_list(r.get("reasons"))
        seqs = _json(r.get("seqs"))
        events = r.get("events_path")
        out.append(SessionInfo(
            harness=str(r["harness"]), session_id=str(r["session_id"]), trace=data.root / str(r["trace_path"]),
            events=data.root / events if isinstance(events, str) and events else None,
            agent_kind=r.get("agent_kind"), parent=r.get("parent") or None, domain=r.get("domain"),
            reasons=tuple(x for x in reasons if isinstance(x, str)),
            flag_seqs={k: [s for s in v if isinstance(s, int)] for k, v in seqs.items() if isinstance(v, list)}
            if isinstance(seqs, dict) else {},
        ))
    return out


def _json(text: object) -> Any:
    if not isinstance(text, str) or not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _json_list(text: object) -> list[Any]:
    got = _json(text)
    return got if isinstance(got, list) else []


def families(infos: Iterable[SessionInfo]) -> list[tuple[SessionInfo, dict[str, list[SessionInfo]]]]:
    """Each top session with its descendants by parent id (a parent not imported: the session is its own top).

    A parent chain that loops (hostile input) is cut where it would close: every session is in
    exactly one family.
    """
    by_key = {(i.harness, i.session_id): i for i in infos}
    top_of: dict[tuple[str, str], tuple[str, str]] = {}

    def top(key: tuple[str, str]) -> tuple[str, str]:
        seen = [key]
        while True:
            info = by_key[seen[-1]]
            parent = (info.harness, info.parent) if info.parent and info.parent != info.session_id else None
            if parent is None or parent not in by_key:
                return seen[-1]
            if parent in seen:  # a loop: its least member is the top, whichever member the walk began at
                return min(seen[seen.index(parent):])
            seen.append(parent)

    for key in by_key:
        top_of[key] = top(key)
    children: dict[tuple[str, str], dict[str, list[SessionInfo]]] = {}
    for key, info in sorted(by_key.items()):
        t = top_of[key]
        if key == t:
            children.setdefault(t, {})
            continue
        children.setdefault(t, {}).setdefault(str(info.parent), []).append(info)
    return [(by_key[t], kids) for t, kids in sorted(children.items())]


def _digest(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=16).digest()


def _complete(data: bytes) -> bytes:
    end = data.rfind(b"\n")
    return data[: end + 1] if end >= 0 else b""


class Batcher:
    """Holds spans until a batch is full, sends it, and records each session once all of its spans went."""

    def __init__(self, sender: Sender | None, book: AckBook | None, batch: int = BATCH_SPANS) -> None:
        self.sender, self.book, self.batch = sender, book, batch
        self.pending: list[SpanData] = []
        self.ready: list[tuple[str, str, Acked]] = []
        self.outcome = Outcome()

    def add(self, info: SessionInfo, spans: Iterable[SpanData], acked: Acked) -> None:
        """Queue one session's spans; it is recorded as acknowledged after the batch holding its last one."""
        n = 0
        for s in spans:
            self.pending.append(s)
            n += 1
            if len(self.pending) >= self.batch:
                self.flush()
        self.outcome.spans += n
        self.outcome.sessions += 1
        self.ready.append((info.harness, info.session_id, acked))

    def flush(self) -> None:
        """Send what is held; record the sessions all of whose spans are now acknowledged."""
        if self.pending and self.sender is not None:
            self.sender.send(self.pending)
        self.pending = []
        if self.ready and self.book is not None and self.sender is not None:
            self.book.record(self.sender.url, self.ready)
        self.ready = []


def _place(child: Built, calls: list[SubagentCall], taken: set[int]) -> int | None:
    """The span id of the parent's call that started ``child``, or ``None`` (then: under the parent's span)."""
    at = child.start_ms
    # The first open call whose time holds the start (calls and children both in the order they began),
    # else the last call begun before it.
    holding = [c for c in calls if c.span_id not in taken and c.start_ms <= at <= c.end_ms + SLACK_MS]
    before = [c for c in calls if c.span_id not in taken and c.start_ms <= at]
    if holding:
        best = holding[0]
    elif before:
        best = before[-1]
    else:
        return None
    taken.add(best.span_id)
    return best.span_id


def _settled(built: Built, settled_before: int | None, written_ms: int | None) -> bool:
    """Whether a session's span is due: its trace ends with its ``session_shutdown``, and either that
    record's time or the trace file's last write (``written_ms``) is at or before ``settled_before``
    (unix ms; ``None``: every session is).

    Either clock may say it: a trace's own times are the transcript's (skewed, shifted, or set in
    the future by whoever wrote it: it would never settle), the file's is this machine's (a session
    imported long after it ended was written just now).
    """
    if settled_before is None:
        return True
    quiet = built.end_ms if written_ms is None else min(built.end_ms, written_ms)
    return built.shut and quiet <= settled_before


def _to_send(info: SessionInfo, built: Built, ids: Ids, old: Acked | None, trace_hex: str,
             settled_before: int | None, written_ms: int | None = None) -> tuple[list[SpanData], Acked] | None:
    """The spans of one session to send, and what to record once they are acknowledged (``None``: nothing).

    The session's span is sent once, when the session is settled (:func:`_settled`); its record
    spans as their lines appear. A session that grows after its span was sent gets a further
    session span (a new id, under the first) once it settles again, and the record spans sent
    meanwhile hang under that one: no span id is ever sent twice (docs/otel.md, Decisions).
    """
    same = old is not None and old.trace_id == trace_hex
    parts = old.roots if same and old is not None else 0
    root_current = same and old is not None and old.roots > 0 and old.root_digest == built.digest
    lines_same = same and old is not None and old.size == built.size and old.digest == built.digest
    settled = _settled(built, settled_before, written_ms)
    if lines_same and (root_current or not settled):
        return None
    spans = list(changed(built, old.lines if same and old is not None else None))
    if parts > 0:
        first, now = built.spans[0].span_id, part_span_id(ids, info.session_id, parts)
        for span in spans:
            if span.parent_id == first:
                span.parent_id = now
    send_root = settled and not root_current
    if send_root:
        spans.insert(0, session_span(built, ids, info.session_id, parts))
    root_digest = built.digest if send_root else (old.root_digest if same and old is not None else b"")
    return spans, Acked(trace_hex, built.size, built.digest, built.lines, parts + send_root, root_digest)


def export(infos: Sequence[SessionInfo], chosen: Callable[[SessionInfo], bool], ids: Ids, batcher: Batcher, *,
           with_text: bool = False, acked: dict[tuple[str, str], Acked] | None = None,
           started: Callable[[SessionInfo, int], bool] | None = None, settled_before: int | None = None,
           part: tuple[int, int] = (0, 1)) -> Outcome:
    """Send the chosen sessions' new or changed spans through ``batcher``; its outcome.

    ``acked``: what the endpoint acknowledged (``None``: send everything, as to a file).
    ``started(info, start_ms)``: a filter on the session's start, once its trace is read.
    ``settled_before``: a session whose trace ended (``session_shutdown``) at or before this time
    (unix ms) is settled, and its session span due; ``None``: every session is.
    ``part`` (k, n): only every n-th family from the k-th (one of n worker processes: :func:`in_parts`).
    """
    from rematch_trace.export.otlp import SendFailed

    out = batcher.outcome
    for index, (top, kids) in enumerate(families(infos)):
        if index % part[1] != part[0]:
            continue
        members = [top, *(k for ks in kids.values() for k in ks)]
        if not any(chosen(m) for m in members):
            continue
        trace_id = ids.trace_id(top.session_id)
        raws: dict[tuple[str, str], bytes] = {}
        written: dict[tuple[str, str], int] = {}
        stale = False
        for m in members:
            try:
                written[(m.harness, m.session_id)] = m.trace.stat().st_mtime_ns // 1_000_000
                raws[(m.harness, m.session_id)] = raw = _complete(m.trace.read_bytes())
            except OSError as err:
                out.problems.append(f"{m.trace}: cannot read the trace ({err.strerror or err}); session skipped")
                continue
            old = acked.get((m.harness, m.session_id)) if acked is not None else None
            if (old is None or old.size != len(raw) or old.trace_id != f"{trace_id:032x}" or old.digest != _digest(raw)
                    or old.root_digest != old.digest):  # (its session span is still held: settled now?)
                stale = True
        if not stale:
            out.unchanged += sum(1 for m in members if chosen(m))
            continue
        # Parents before their children, a generation at a time: each child is placed under one of its
        # parent's calls, the children in the order they started (parallel calls, parallel subagents).
        calls_of: dict[str, tuple[list[SubagentCall], set[int], int]] = {}
        generation = [top]
        while generation:
            made: list[tuple[SessionInfo, Built]] = []
            for info in generation:
                got_raw = raws.get((info.harness, info.session_id))
                if got_raw is None:
                    continue
                try:
                    made.append((info, build(info, ids, trace_id, None, with_text=with_text, data=got_raw)))
                except (OSError, ValueError) as err:
                    out.problems.append(f"{info.trace}: cannot export ({err}); session skipped")
            made.sort(key=lambda m: (m[1].start_ms, m[0].session_id))
            for info, built in made:
                if info is not top and info.parent in calls_of:
                    calls, taken, parent_root = calls_of[info.parent]
                    built.spans[0].parent_id = _place(built, calls, taken) or parent_root
            for info, built in made:
                calls_of[info.session_id] = (built.subagent_calls, set(), built.spans[0].span_id)
                if not chosen(info) or (started is not None and not started(info, built.start_ms)):
                    continue
                trace_hex = f"{trace_id:032x}"
                if acked is None:  # a file: every span, the session's own as it is now
                    todo: tuple[list[SpanData], Acked] | None = (
                        built.spans, Acked(trace_hex, built.size, built.digest, built.lines, 1, built.digest))
                else:
                    todo = _to_send(info, built, ids, acked.get((info.harness, info.session_id)), trace_hex,
                                    settled_before, written.get((info.harness, info.session_id)))
                if todo is None:
                    out.unchanged += 1
                    continue
                try:
                    batcher.add(info, todo[0], todo[1])
                except SendFailed as err:
                    out.failed = str(err)
                    return out
            generation = [k for info, _ in made for k in kids.get(info.session_id, [])]
    try:
        batcher.flush()
    except SendFailed as err:
        out.failed = str(err)
    return out


#: The export of one part (k, n) in a worker process (:func:`in_parts`; set before the workers fork).
_PART: Callable[[tuple[int, int]], Outcome] | None = None


def _run_part(part: tuple[int, int]) -> Outcome:
    assert _PART is not None
    return _PART(part)


def in_parts(jobs: int, families_count: int, one: Callable[[tuple[int, int]], Outcome]) -> Outcome:
    """``one((k, n))`` for each of n parts, in n forked worker processes (in this one when n is 1); the
    outcomes summed (the first failure kept).

    Families are independent (their own traces, their own rows of the book, each batch recorded
    once acknowledged), so parts need nothing of each other: as the import's jobs, they share the
    cores, and the book's writes (SQLite, WAL) take turns.
    """
    global _PART
    n = max(1, min(jobs, families_count))
    if n == 1:
        return one((0, 1))
    import multiprocessing

    _PART = one
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            got = pool.map(_run_part, [(k, n) for k in range(n)])
    finally:
        _PART = None
    out = Outcome()
    for o in got:
        out.sessions += o.sessions
        out.spans += o.spans
        out.unchanged += o.unchanged
        out.problems.extend(o.problems)
        if out.failed is None:
            out.failed = o.failed
    return out


__all__ = ["BATCH_SPANS", "Batcher", "Outcome", "Sender", "export", "families", "in_parts", "ledger_sessions"]
