"""One session's conversation: its plugin's items, ordered, redacted and placed beside its trace.

The items are the ones the import stored of the session's source
(:mod:`rematch_trace.store.conversation_rows`: its plugin's ``conversation_items``, read in the
import's one pass, redacted). A source of which none are stored (a data folder from before they
were, a ``watch`` or a cluster's import) is read again through its plugin, and the conversation's
note says so. The core then:

* keeps the items of the session's own stream (a file may hold several);
* redacts every text and every string of a call's input with the events'
  redactor (:func:`rematch_trace.security.redact.default_redactor`), always,
  whatever the import's settings were (the stored items already are);
* pairs each call with its output, and with the trace's ``tool_result`` (its
  seq, error class) and ``tool_blocked`` records (denied or held);
* places the trace's marks and unpaired blocked calls by seq, and gives each
  prompt and call the seq of its trace record, so the seqs behind each flag
  are marked as on the timeline, and each piece of the assistant's text the
  seq of its turn (:mod:`rematch_trace.trace.turns`), where a search finds it;
* nests a subagent's conversation under the call that started it (one level
  deep, its link both ways).

A source that is gone, unclaimed, or whose plugin gives no conversation is
said so in :attr:`Conversation.status` and :attr:`Conversation.note`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

from rematch_trace.store.datafolder import DataDir

#: Statuses a conversation may have.
STATUSES = ("ok", "gone", "unclaimed", "no_plugin", "failed", "no_source")
#: A subagent's conversation is nested this many levels deep at most (deeper ones are links).
NEST_DEPTH = 2
#: The note of a conversation read from its transcript because the import stored none of it.
NOT_STORED = ("the import stored no conversation of this source (imported before rematch kept them, or by "
              "watch or a cluster): read from the transcript again; a new import stores it")


@attrs.define
class Entry:
    """One thing in the conversation, in the order it happened.

    ``kind``: ``prompt``, ``assistant``, ``call``, ``output`` (an output whose call
    is not in the transcript), ``blocked`` (a ``tool_blocked`` record whose call is
    not either), ``mark`` or ``compaction``. Every text is redacted.
    """

    kind: str
    t: int | None
    text: str = ""
    seq: int | None = None
    reasons: list[str] = attrs.field(factory=list)
    call_id: str = ""
    tool: str = ""
    input: Any = None
    output: str | None = None
    is_error: bool | None = None
    error_class: str | None = None
    blocked: list[dict[str, Any]] = attrs.field(factory=list)
    trigger: str = ""
    subagent: dict[str, Any] | None = None
    #: The subagents the call started after the first (omp's ``task`` runs several in one call).
    other_subagents: list[dict[str, Any]] = attrs.field(factory=list)


@attrs.define
class Conversation:
    """A session's conversation, or why there is none (``status`` and ``note``)."""

    key: str
    harness: str
    session_id: str
    source: str
    status: str
    note: str = ""
    entries: list[Entry] = attrs.field(factory=list)
    parent: dict[str, Any] | None = None
    flag_seqs: dict[str, list[int]] = attrs.field(factory=dict)
    #: Where the entries came from: ``store`` (what the import kept), ``transcript`` (read again) or ``trace``.
    read_from: str = "trace"

    def as_json(self) -> dict[str, Any]:
        """The conversation as plain JSON values (``rematch show --conversation --format json``)."""
        out: dict[str, Any] = attrs.asdict(self, recurse=True)
        return out


def ledger_rows(data: DataDir) -> dict[str, dict[str, Any]]:
    """Trace key -> its ledger row."""
    from rematch_trace.store.datafolder import key_of
    from rematch_trace.store.ledger import Ledger

    out: dict[str, dict[str, Any]] = {}
    if not data.ledger.exists():
        return out
    with Ledger(data.ledger, readonly=True) as ledger:
        for r in ledger.sessions():
            key = key_of(r)
            if key is not None:
                out[key] = r
    return out


def _host() -> Any:
    from rematch_trace.importing.worker import worker_host

    return worker_host()


def source_items(host: Any, path: str, harness: str,
                 problems: list[Any] | None = None) -> tuple[str, str, Iterator[Any] | None]:
    """``(status, note, items)`` of a source file through its plugin (importing/search_sources.py);
    ``problems``, when given, gets the reader's problems as the items are read."""
    from rematch_trace.importing.search_sources import source_items as read

    return read(host, path, harness, problems=problems)


def _trace(path: Path) -> tuple[list[dict[str, Any]], dict[int, list[str]], dict[str, list[int]]]:
    """The trace's records, the flag reasons of each seq, and each reason's seqs."""
    from rematch_trace.report.summary import trace_records
    from rematch_trace.trace.flags import FlagTracker

    tracker = FlagTracker()
    recs: list[dict[str, Any]] = []
    for rec in trace_records(path):
        if rec:
            tracker.observe(rec)
            recs.append(rec)
    why: dict[int, list[str]] = {}
    seqs = tracker.seqs()
    for reason, ss in seqs.items():
        for s in ss:
            why.setdefault(s, []).append(reason)
    return recs, why, {k: list(v) for k, v in seqs.items()}


#: A source of several sessions, read once for all of them: its path -> (status, note, items).
Shared = dict[str, tuple[str, str, list[Any] | None, bool]]


class _AsStored:
    """The redactor of items the store gives: they were redacted when stored."""

    @staticmethod
    def redact_text(text: str) -> str:
        """``text`` as it is."""
        return text

    @staticmethod
    def redact_value(value: Any) -> Any:
        """``value`` as it is."""
        return value


def _read_items(data: DataDir, path: str, harness: str,
                shared: Shared | None) -> tuple[str, str, list[Any] | None, bool]:
    """``(status, note, items, stored)`` of a source, every item read: the import's stored ones
    (``stored``), else read through its plugin; a source of more than one session is kept in ``shared``
    (the last such one only), so a report's pages of one database's sessions read it once."""
    from rematch_trace.host.vocab import Session
    from rematch_trace.store.conversation_rows import read

    if shared is not None and path in shared:
        return shared[path]
    kept = read(data, path)
    if kept is not None:
        if shared is not None and len({it.stream for it in kept if isinstance(it, Session)}) > 1:
            shared.clear()
            shared[path] = ("ok", "", kept, True)
        return "ok", "", kept, True
    return (*_read_source(path, harness, shared), False)


def _read_source(path: str, harness: str, shared: Shared | None) -> tuple[str, str, list[Any] | None]:
    """``(status, note, items)`` of a source read through its plugin (see :func:`_read_items`)."""
    from rematch_trace.host.vocab import Session
    problems: list[Any] = []
    try:
        status, note, items = source_items(_host(), path, harness, problems=problems)
    except Exception as err:  # a plugin that fails: said, never fatal to the page
        return "failed", f"the plugin failed reading {path}: {type(err).__name__}: {err}", None
    if items is None:
        return status, note, None
    try:
        got = list(items)
    except Exception as err:
        return "failed", f"the plugin failed reading {path}: {type(err).__name__}: {err}", []
    unreadable = next((p for p in problems if p.kind == "unreadable"), None)
    if unreadable is not None:  # (a hostile file swapped in): said, never an empty conversation
        return "failed", f"the source could not be read ({unreadable}): only the trace's records are shown", None
    if shared is not None and len({it.stream for it in got if isinstance(it, Session)}) > 1:
        shared.clear()
        shared[path] = (status, note, got, False)
    return status, note, got


def read_conversation(data: DataDir, key: str, *, depth: int = 0,
                      rows: dict[str, dict[str, Any]] | None = None, shared: Shared | None = None) -> Conversation:
    """The conversation of the session whose trace is ``traces/<key>.jsonl``.

    ``shared``: a dict the caller keeps across the sessions it reads (a report's build), in which a
    source of several sessions (an opencode database) is kept once read.
    """
    from rematch_trace.host.conversation import Called, Compacted, Returned, Said, Spawned
    from rematch_trace.host.vocab import Session
    from rematch_trace.security.redact import default_redactor

    rows = ledger_rows(data) if rows is None else rows
    row = rows.get(key) or {}
    trace_path = data.traces / f"{key}.jsonl"
    recs, why, flag_seqs = _trace(trace_path) if trace_path.is_file() else ([], {}, {})
    start = next((r for r in recs if r.get("ev") == "session_start"), {})
    session_id = str(row.get("session_id") or start.get("session_id") or key)
    harness = str(row.get("harness") or "")
    conv = Conversation(key, harness, session_id, str(row.get("source_path") or ""), "no_source", flag_seqs=flag_seqs)
    parent_id = start.get("parent_session_id") if isinstance(start.get("parent_session_id"), str) else None
    if parent_id:
        pkey = next((k for k, r in rows.items() if r.get("session_id") == parent_id and r.get("harness") == harness),
                    None)
        conv.parent = {"session_id": parent_id, "key": pkey, "call_id": None}
    if not conv.source or (row.get("mode") == "live" and not os.path.isfile(conv.source)):
        conv.note = "no source transcript is recorded for this session (a live capture): only the trace's records are shown"
        if conv.source:
            conv.status, conv.note = "gone", f"the source transcript {conv.source} is gone: only the trace's records are shown"
        conv.entries = _trace_only(recs, why)
        return conv
    conv.note = ""
    status, note, items, stored = _read_items(data, conv.source, harness, shared)
    conv.status, conv.note = status, note
    if items is None:
        conv.entries = _trace_only(recs, why)
        return conv
    conv.read_from = "store" if stored else "transcript"
    if not stored and not conv.note:
        conv.note = NOT_STORED
    red: Any = _AsStored() if stored else default_redactor()
    # The stream of this session: the one whose Session has its id, else the file's first.
    entries: list[Entry] = []
    calls: dict[str, Entry] = {}
    spawned: dict[str, list[str]] = {}
    got = items
    # This session's stream: the one its Session names, else the file's main one.
    mine = next((it for it in got if isinstance(it, Session) and it.session_id == session_id), None)
    own = mine.stream if mine is not None else ""
    if conv.parent is None and mine is not None and mine.parent_session_id:
        pid = mine.parent_session_id
        pkey = next((k for k, r in rows.items() if r.get("session_id") == pid and r.get("harness") == harness), None)
        conv.parent = {"session_id": pid, "key": pkey, "call_id": None}
    try:
        for it in got:
            if isinstance(it, Session) or it.stream != own:
                continue
            if isinstance(it, Said):
                entries.append(Entry("prompt" if it.role == "user" else "assistant", it.t, red.redact_text(it.text)))
            elif isinstance(it, Called):
                e = Entry("call", it.t, call_id=it.call_id, tool=red.redact_text(str(it.name)),
                          input=red.redact_value(it.input))
                calls[it.call_id] = e
                entries.append(e)
            elif isinstance(it, Returned):
                call = calls.get(it.call_id) if it.call_id else None
                if call is None or call.output is not None:
                    entries.append(Entry("output", it.t, call_id=it.call_id, output=red.redact_text(it.output),
                                         is_error=it.is_error))
                else:
                    call.output = red.redact_text(it.output)
                    call.is_error = it.is_error
            elif isinstance(it, Compacted):
                last = entries[-1] if entries else None
                if last is not None and last.kind == "compaction" and not last.text and not it.trigger:
                    last.text = red.redact_text(it.summary)
                else:
                    entries.append(Entry("compaction", it.t, red.redact_text(it.summary), trigger=it.trigger))
            elif isinstance(it, Spawned):
                started = spawned.setdefault(it.call_id, [])
                if it.session_id not in started:  # a rollout may say so twice (an event, the call's output)
                    started.append(it.session_id)
    except (AttributeError, TypeError) as err:  # an item of the wrong shape
        conv.status = "failed"
        conv.note = f"the plugin gave an item rematch cannot read in {conv.source}: {err}"
    _place(entries, calls, recs, why)
    _place_said(entries, recs)
    for cid, sub_ids in spawned.items():
        call = calls.get(cid)
        if call is None:
            continue
        for sub_id in sub_ids:
            sub_key = next((k for k, r in rows.items()
                            if r.get("session_id") == sub_id and r.get("harness") == harness), None)
            link: dict[str, Any] = {"session_id": sub_id, "key": sub_key, "conversation": None}
            if sub_key is not None and depth + 1 < NEST_DEPTH:
                sub = read_conversation(data, sub_key, depth=depth + 1, rows=rows, shared=shared)
                sub.parent = {"session_id": session_id, "key": key, "call_id": cid}
                link["conversation"] = sub
            if call.subagent is None:
                call.subagent = link
            else:
                call.other_subagents.append(link)
    if conv.parent is not None and conv.parent.get("key"):
        _find_spawner(data, conv, rows, shared)
    conv.entries = entries
    return conv


#: (parent source path, size, mtime) -> {subagent session id: the call that started it}; a report reads
#: each parent's source once for all its subagents' pages.
_SPAWNERS: dict[tuple[str, int, int], dict[str, str]] = {}


def _find_spawner(data: DataDir, conv: Conversation, rows: dict[str, dict[str, Any]],
                  shared: Shared | None = None) -> None:
    """The parent's call that started this subagent (its ``Spawned`` item), for the link back."""
    from rematch_trace.host.conversation import Spawned

    assert conv.parent is not None
    prow = rows.get(str(conv.parent["key"])) or {}
    path = str(prow.get("source_path") or "")
    kept = shared.get(path) if shared is not None else None
    if kept is not None:  # the parent's source is the one already read (an opencode database)
        conv.parent["call_id"] = next((it.call_id for it in kept[2] or () if isinstance(it, Spawned)
                                       and it.session_id == conv.session_id), None)
        return
    from rematch_trace.store.conversation_rows import path_of, read

    # The stored rows when there are (their file's stamp), else the source read through its plugin.
    stored = path_of(data, path)
    try:
        st = os.stat(stored)
        from_store = True
    except OSError:
        from_store = False
        try:
            st = os.stat(path)
        except OSError:
            return  # the link back names the parent session without the call
    stamp = (str(stored) if from_store else path, st.st_size, st.st_mtime_ns)
    found = _SPAWNERS.get(stamp)
    if found is None:
        found = {}
        try:
            items: Iterable[Any] | None = read(data, path) if from_store else None
            if items is None:
                _, _, items = source_items(_host(), path, str(prow.get("harness") or ""))
            for it in items or ():
                if isinstance(it, Spawned):
                    found.setdefault(it.session_id, it.call_id)
        except Exception:
            return  # a plugin failing on the parent's file: no call named
        if len(_SPAWNERS) > 64:
            _SPAWNERS.clear()
        _SPAWNERS[stamp] = found
    conv.parent["call_id"] = found.get(conv.session_id)


def _place(entries: list[Entry], calls: dict[str, Entry], recs: list[dict[str, Any]],
           why: dict[int, list[str]]) -> None:
    """Give entries their trace seqs and flags; insert the trace's marks and unpaired blocked calls by seq."""
    from rematch_trace.security.redact import default_redactor

    red = default_redactor()
    results: dict[str, dict[str, Any]] = {}
    blocked: dict[str, list[dict[str, Any]]] = {}
    inputs: list[dict[str, Any]] = []
    loose: list[dict[str, Any]] = []
    for r in recs:
        ev = r.get("ev")
        if ev == "tool_result" and isinstance(r.get("call_id"), str):
            results.setdefault(r["call_id"], r)
        elif ev == "tool_blocked" and isinstance(r.get("call_id"), str):
            if r["call_id"] in calls:
                blocked.setdefault(r["call_id"], []).append(r)
            else:
                loose.append(r)
        elif ev == "input":
            inputs.append(r)
        elif ev == "mark":
            loose.append(r)
    for cid, e in calls.items():
        res = results.get(cid)
        if res is not None:
            r = res
            e.seq = r.get("seq") if type(r.get("seq")) is int else None
            e.error_class = r.get("error_class") if isinstance(r.get("error_class"), str) else None
            if e.is_error is None:
                e.is_error = bool(r.get("is_error"))
        for b in blocked.get(cid, []):
            e.blocked.append(_blocked(b))
            if e.seq is None and type(b.get("seq")) is int:
                e.seq = b["seq"]
    # Prompts: the trace's inputs in order, matched by time, else by the start of their text.
    i = 0
    for e in entries:
        if e.kind != "prompt" or i >= len(inputs):
            continue
        for j in range(i, min(i + 8, len(inputs))):
            r = inputs[j]
            text = r.get("text") if isinstance(r.get("text"), str) else ""
            if r.get("t") == e.t or (text and e.text.strip()[:40] == text.strip()[:40]):
                e.seq = r.get("seq") if type(r.get("seq")) is int else None
                i = j + 1
                break
    for e in entries:
        if e.seq is not None:
            e.reasons = list(why.get(e.seq, []))
    if not loose:
        return
    # Each loose record goes after the last entry placed at a smaller seq (entries without one follow theirs).
    placed: list[tuple[int, Entry]] = []
    high = -1
    for e in entries:
        if e.seq is not None:
            high = max(high, e.seq)
        placed.append((high, e))
    for r in sorted(loose, key=lambda x: int(x["seq"]) if type(x.get("seq")) is int else 0):
        seq = r.get("seq") if type(r.get("seq")) is int else None
        e = (Entry("blocked", _t(r), seq=seq, tool=str(r.get("tool") or ""), call_id=str(r.get("call_id") or ""),
                   blocked=[_blocked(r)]) if r.get("ev") == "tool_blocked"
             else Entry("mark", _t(r), red.redact_text(str(r.get("note") or "")), seq=seq, trigger=str(r.get("class") or "")))
        e.reasons = list(why.get(seq, [])) if seq is not None else []
        at = len(placed)
        if seq is not None:
            at = next((k for k, (h, _) in enumerate(placed) if h > seq), len(placed))
        placed.insert(at, (seq if seq is not None else high, e))
    entries[:] = [e for _, e in placed]


def _place_said(entries: list[Entry], recs: list[dict[str, Any]]) -> None:
    """Give each piece of the assistant's text the seq of the turn it was written in (trace.turns: the rule
    the search index places its hits by), after the marks are placed (a turn's seq is not where its text
    stands among the calls)."""
    from rematch_trace.trace.turns import Turns

    turns = Turns((r["t"], r["seq"]) for r in recs
                  if r.get("ev") == "turn_end" and type(r.get("t")) is int and type(r.get("seq")) is int)
    if not turns:
        return
    for e in entries:
        if e.kind == "assistant" and e.seq is None:
            e.seq = turns.seq_at(e.t)


def _t(r: Mapping[str, Any]) -> int | None:
    return r.get("t") if type(r.get("t")) is int else None


def _blocked(r: Mapping[str, Any]) -> dict[str, Any]:
    """A ``tool_blocked`` record as the view shows it: denied or held, by what, why, at which seq."""
    from rematch_trace.security.redact import default_redactor

    hook, reason = str(r.get("hook_id") or ""), default_redactor().redact_text(str(r.get("reason") or ""))
    held = "hold" in reason.lower() or "held" in reason.lower() or "approval" in reason.lower()
    return {"seq": r.get("seq"), "state": "held" if held else "denied", "hook_id": hook, "reason": reason}


def _trace_only(recs: list[dict[str, Any]], why: dict[int, list[str]]) -> list[Entry]:
    """What the trace alone says of the conversation (a source that is gone): prompts, turns' text, calls."""
    from rematch_trace.security.redact import default_redactor

    red = default_redactor()
    out: list[Entry] = []
    for r in recs:
        ev, seq = r.get("ev"), r.get("seq") if type(r.get("seq")) is int else None
        e: Entry | None = None
        if ev == "input":
            e = Entry("prompt", _t(r), red.redact_text(str(r.get("text") or "")), seq=seq)
        elif ev == "turn_end" and r.get("text_head"):
            e = Entry("assistant", _t(r), red.redact_text(str(r.get("text_head"))), seq=seq)
        elif ev == "tool_result":
            e = Entry("call", _t(r), seq=seq, call_id=str(r.get("call_id") or ""), tool=str(r.get("tool") or ""),
                      input=red.redact_value(r.get("input")), is_error=bool(r.get("is_error")),
                      error_class=r.get("error_class") if isinstance(r.get("error_class"), str) else None)
        elif ev == "tool_blocked":
            e = Entry("blocked", _t(r), seq=seq, tool=str(r.get("tool") or ""), blocked=[_blocked(r)])
        elif ev == "mark":
            e = Entry("mark", _t(r), red.redact_text(str(r.get("note") or "")), seq=seq,
                      trigger=str(r.get("class") or ""))
        if e is not None:
            e.reasons = list(why.get(seq, [])) if seq is not None else []
            out.append(e)
    return out
