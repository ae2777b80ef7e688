"""Claude Code transcript lines in, the core's neutral records out.

One file can hold several sessions: a 1.0.x session file carries its
subagents' lines inline (``isSidechain: true``), each chain of them its own
stream and its own ``sub`` session. 2.0.x/2.1.x subagent files are one ``sub``
session each, stream ``""``.

Rules that need the next line wait in the ``state`` dict (JSON-able, bounded):

* an API response is written as several lines sharing ``message.id``; they
  form one open *group* until a line of another response, a typed input, an
  interrupt or a compaction closes it. Tool results of the group's calls that
  arrive meanwhile wait with it, so they follow their assistant message.
* a slash command is held until the next line says whether it started a model
  run: a skill's or prompt command's body arrives as the following ``isMeta``
  line, or a model response follows. Such a command is the user's input (its
  name a skill invoked, its arguments the text); a built-in command that runs
  no model (``/clear``, ``/model``) is passed on as typed, for the core to drop.

* a ``cost-state`` line (2.1.328: Claude Code saves the session's cost there
  as its process leaves the session: an exit, ``/clear``) ends a process
  lifetime: the open group is closed and a held command released then, and a
  :class:`~rematch_trace.host.vocab.SessionEnded` is passed on just before the
  next line that gives records (a resume), so the trace has one
  ``session_shutdown`` per lifetime, as the live capture writes at each
  ``SessionEnd``; a lifetime the file ends with ends with the session.

The end-of-input flush reads ``state`` without changing it: the core saves the
state at the end of the input and runs the flush again when the file grows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from rematch_trace.errors import RestartImport
from rematch_trace.host.sealed import Sealed, value_digest
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.text import clean, utf8_len
from rematch_trace.host.timestamps import iso_ms
from rematch_trace.host.vocab import OUTPUT_HEAD_CHARS as HEAD_CHARS
from rematch_trace.host.vocab import (
    Abort,
    AssistantMessage,
    Compaction,
    Instructions,
    ModelRef,
    Neutral,
    PermissionMode,
    RunEnd,
    Session,
    SessionEnded,
    SkillInvoked,
    ToolCall,
    ToolResult,
    TurnStarted,
    Usage,
    UserMessage,
)
from rematch_trace.trace.prelabel import normalize_mark

from .discover import session_stem
from .entries import instruction_entry
from .usertext import INTERRUPT_PREFIX, classify, is_stop_feedback, strip_context

#: 2: the transcript's text held in the state is saved as references to its lines (see ``_reread``).
STATE_VERSION = 2
PROVIDER = "anthropic"
#: Closed message ids remembered per stream, to drop a response written again.
MAX_SEEN_IDS = 256
#: The same for each inline subagent chain (a file may hold many; each is short).
MAX_SEEN_IDS_SIDECHAIN = 32
#: Line uuids remembered, to drop a line written twice.
MAX_RECENT_UUIDS = 64
#: Sidechain line uuids remembered, to route a line to its parent's chain.
MAX_SIDECHAIN_UUIDS = 4096
#: Results held for a call not seen yet (a result line written before its call's line), per stream.
MAX_EARLY_RESULTS = 64
#: Two spellings of one local command closer than this are one command.
SAME_COMMAND_MS = 2000

REJECT_PREFIX = "The user doesn't want to proceed with this tool use"
SYNTHETIC_MODEL = "<synthetic>"
TASK_NOTIFICATION = "<task-notification>"
_HANDLED = frozenset({"user", "assistant", "system", "attachment"})
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def translate(source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
    """Translate one Claude Code file's records (see the module docstring)."""
    return _Translator(source, state).run(records)


def _int(value: Any) -> int:
    """A token count: a non-negative int, anything else counts as 0."""
    if type(value) is int:
        return value if value > 0 else 0
    if type(value) is float and 0 < value < 1e18:
        return int(value)
    return 0


def clean_value(value: Any) -> Any:
    """A JSON value that orjson can write: lone surrogates replaced, huge ints as strings."""
    try:
        orjson.dumps(value)
    except TypeError:
        return _walk(value)
    return value


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(k)): _walk(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v) for v in value]
    if type(value) is int and not -(2**63) <= value < 2**64:
        return str(value)
    return value


def measure(content: Any) -> tuple[int, str]:
    """The size in UTF-8 bytes of a tool output as recorded, and its head.

    Text blocks count their text; image and document blocks the base64 data
    they carry.
    """
    if isinstance(content, str):
        if content.isascii():
            return len(content), content[:HEAD_CHARS]
        try:
            # Without a lone surrogate the size is the strict encoding's, and no part needs cleaning.
            return len(content.encode("utf-8")), content[:HEAD_CHARS]
        except UnicodeEncodeError:
            return utf8_len(content), clean(content[:HEAD_CHARS])
    if content is None:
        return 0, ""
    if isinstance(content, list):
        n = 0
        head: list[str] = []
        room = HEAD_CHARS
        for block in content:
            text: Any = block.get("text") if isinstance(block, dict) else block
            if isinstance(text, str):
                n += utf8_len(text)
                if room > 0:
                    head.append(text[:room])
                    room -= len(head[-1]) + 1
                continue
            if isinstance(block, dict):
                src = block.get("source")
                if isinstance(src, dict) and isinstance(src.get("data"), str):
                    n += len(src["data"])
        return n, clean("\n".join(head)[:HEAD_CHARS])
    try:
        raw = orjson.dumps(content)
    except (TypeError, orjson.JSONEncodeError):
        return 0, ""
    return len(raw), raw[: HEAD_CHARS * 2].decode("utf-8", "replace")[:HEAD_CHARS]


def _usage(u: dict[str, Any], output: int) -> list[int]:
    """The counts of a usage object (``output`` is its ``output_tokens``, already read): input, output,
    cache read, cache write, and of the cache write the 1-hour writes."""
    # (each count is _int's, spelled inline for the usual positive int: this runs on every response line)
    get = u.get
    i = get("input_tokens")
    cr = get("cache_read_input_tokens")
    cw = get("cache_creation_input_tokens")
    cache_write = cw if type(cw) is int and cw > 0 else _int(cw)
    breakdown = get("cache_creation")
    hour = 0
    if isinstance(breakdown, dict):
        h = breakdown.get("ephemeral_1h_input_tokens")
        hour = h if type(h) is int and h > 0 else _int(h)
        # The nested breakdown is right where the flat field was once reported as 0 (2.1.152).
        total = 0
        for x in breakdown.values():
            total += x if type(x) is int and x > 0 else _int(x)
        if total > 0:
            cache_write = total
    return [
        i if type(i) is int and i > 0 else _int(i),
        output,
        cr if type(cr) is int and cr > 0 else _int(cr),
        cache_write,
        min(hour, cache_write),
    ]


def _new_stream() -> dict[str, Any]:
    return {"on": False, "g": None, "p": [], "seen": [], "hold": None, "lc": None}


def _new_group(mid: str | None, t: int | None) -> dict[str, Any]:
    # m model, u usage [in, out, cache_read, cache_write, of it 1-hour], o its output_tokens, $ cost,
    # s stop_reason, k skills, h what the response holds of the transcript: x texts,
    # c calls [id, name, input], r server-side results (sealed: saved as the byte spans
    # of the lines absorbed, which a continuation reads again, see _reread)
    return {
        "id": mid,
        "t": t,
        "m": None,
        "u": None,
        "o": -1,
        "$": None,
        "s": None,
        "k": [],
        "h": Sealed({"x": [], "c": [], "r": []}, []),
    }


def _held(g: dict[str, Any]) -> dict[str, list[Any]]:
    """The texts, calls and server-side results of a group (``x``, ``c``, ``r``)."""
    held: dict[str, list[Any]] = g["h"].value
    return held


def _result(stream: str, r: list[Any]) -> ToolResult:
    call_id, t, nbytes, head, is_error, error_class = r
    if type(head) is Sealed:
        head = head.value
    return ToolResult(stream, t, call_id, nbytes, head, is_error, error_class)


def _digest(text: str) -> str:
    """What the state keeps of a command's text to tell the same command again (not the text)."""
    return value_digest(text)


_MODELS: dict[str, ModelRef] = {}


def _model(name: str) -> ModelRef:
    """The (immutable, so shared) model reference of ``name``: one per model, not one per response."""
    ref = _MODELS.get(name)
    if ref is None:
        if len(_MODELS) >= 256:  # a bound for hostile input; a real file names a few models
            _MODELS.clear()
        ref = _MODELS[name] = ModelRef(PROVIDER, name)
    return ref


def group_records(stream: str, g: dict[str, Any], pending: list[list[Any]]) -> list[Neutral]:
    """The records a closed group stands for: its message, its skills, then its results."""
    usage = None
    if g["u"] is not None:
        # A state saved before the 1-hour share was kept holds four counts.
        i, o, cr, cw, *hour = g["u"]
        usage = Usage(i, o, cr, cw, i + o + cr + cw, g["$"], hour[0] if hour else 0)
    held = _held(g)
    out: list[Neutral] = [
        AssistantMessage(
            stream,
            g["t"],
            model=_model(g["m"]) if g["m"] else None,
            usage=usage,
            stop_reason=g["s"],
            text="\n".join(held["x"]),
            tool_calls=tuple([ToolCall(c[0], c[1], c[2]) for c in held["c"]]),
        )
    ]
    for name in g["k"]:
        out.append(SkillInvoked(stream, g["t"], name))
    for r in held["r"]:
        out.append(_result(stream, r))
    for r in pending:
        out.append(_result(stream, r))
    return out


class _Window:
    """A bounded list of strings from ``state`` (oldest first), with a count of each for O(1) lookups.

    The list stays the one in ``state``, changed in place exactly as before;
    the counts only spare a scan of up to a few hundred ids per line.
    """

    __slots__ = ("counts", "items", "limit")

    def __init__(self, items: list[Any], limit: int) -> None:
        self.items = items
        self.limit = limit
        self.counts: dict[str, int] = {}
        for x in items:
            if type(x) is str:
                self.counts[x] = self.counts.get(x, 0) + 1

    def __contains__(self, x: str) -> bool:
        return x in self.counts

    def add(self, x: str) -> None:
        """Append ``x``, dropping the oldest entry past the limit."""
        items = self.items
        counts = self.counts
        items.append(x)
        counts[x] = counts.get(x, 0) + 1
        if len(items) > self.limit:
            old = items.pop(0)
            if type(old) is str:
                n = counts[old] - 1
                if n:
                    counts[old] = n
                else:
                    del counts[old]


class _Translator:
    """The translation of one file; everything that must survive a pause lives in ``state``."""

    def __init__(self, source: Source, state: dict[str, Any]) -> None:
        self.source = source
        self.sub = source.agent_kind == "sub"
        self.stem = session_stem(source.path)
        version = state.get("v")
        if version is None:
            state.update(self._fresh())
        elif version != STATE_VERSION:
            raise RestartImport(f"claude_code state version {version!r}")
        self.st = state
        self.streams: dict[str, dict[str, Any]] = state["streams"]
        self.recent = _Window(state["ru"], MAX_RECENT_UUIDS)
        #: Each stream's closed message ids (``seen`` in its state), made on first use.
        self.seen: dict[str, _Window] = {}
        #: The byte span of the line being translated (where a sealed value is read again).
        self.at: list[int] = [0, 0]
        #: The records of a scratch translation (see _scratch).
        self.out: list[Neutral] = []
        if version is not None:
            self._unseal()

    def _fresh(self) -> dict[str, Any]:
        path = self.source.path
        own: str | None = None
        agent: str | None = None
        name: str | None = None
        if self.sub:
            agent = self.stem[len("agent-") :] if self.stem.startswith("agent-") else self.stem
            for folder in list(path.parents)[:3]:
                if folder.name == "subagents":
                    own = folder.parent.name
                    break
            name = _agent_type(path)
        elif _UUID.match(self.stem):
            own = self.stem
        return {
            "v": STATE_VERSION,
            "own": own,  # the file's own session id (subagent files: their parent's)
            "agent": agent,
            "name": name,
            "cwd": "",
            "ver": None,
            "streams": {},
            "scn": 0,  # sidechain chains seen
            "scm": {},  # sidechain line uuid -> stream
            "scl": "",  # the latest sidechain stream
            "ru": [],  # recent line uuids
        }

    # -- sealed values: what the state holds of the transcript, read again on a continuation --

    def _unseal(self) -> None:
        """Read again, from the transcript, the values a saved state holds as references.

        The state of a continued import holds, of the transcript's text, only where
        it is (see :class:`~rematch_trace.host.sealed.Sealed`): the lines an open
        response was absorbed from, and the line of a held command or of a result
        waiting for its response. Each is read and translated again as it was; a line
        that is no longer there, or no longer gives the value saved, makes the file
        read whole (:class:`RestartImport`).
        """
        for ss in self.streams.values():
            g = ss["g"]
            if g is not None:
                saved = g["h"]
                rebuilt = _new_group(g["id"], g["t"])
                for at in _spans(saved):
                    v = _reread(self.source, at)
                    msg = v.get("message")
                    if type(msg) is not dict:
                        raise RestartImport("claude_code: a held response line changed")
                    rebuilt["h"].where.append(at)
                    self._absorb(rebuilt, msg, v)
                _check(rebuilt["h"], saved)
                g["h"] = rebuilt["h"]
            hold = ss["hold"]
            if hold is not None:
                at = _span(hold[0])
                again = self._scratch(at)
                texts = [h[0] for x in again.streams.values() if (h := x["hold"]) is not None]
                if len(texts) != 1:
                    raise RestartImport("claude_code: a held command's line changed")
                _check(texts[0], hold[0])
                hold[0] = texts[0]
            for r in (*ss["p"], *(ss.get("e") or ())):
                at = _span(r[3])
                found = self._result_again(at, r[0])
                if found is None:
                    raise RestartImport("claude_code: a held result's line changed")
                _check(found, r[3])
                r[3] = found

    def _result_again(self, at: list[int], call_id: str) -> Sealed | None:
        """The output head of ``call_id``'s result on the line at ``at``, translated again alone.

        Read alone, the line's result finds no open call: it is the scratch's early result
        (waiting for its call's line), or, were it passed on, one of its records.
        """
        again = self._scratch(at)
        for x in again.out:
            if type(x) is ToolResult and x.call_id == call_id:
                return Sealed(x.output_head, at)
        for st in again.streams.values():
            for e in st.get("e") or ():
                if e[0] == call_id and type(e[3]) is Sealed:
                    return Sealed(e[3].value, at)
        return None

    def _scratch(self, at: list[int]) -> _Translator:
        """A fresh translation of the one line at ``at`` (its records in ``.out``)."""
        again = _Translator(self.source, {})
        again.at = at
        again.line(_reread(self.source, at), again.out)
        return again

    # -- driving ------------------------------------------------------------------------

    def run(self, records: Iterator[RawRecord]) -> Iterator[Neutral]:
        """Translate ``records``, then flush what is still open."""
        out: list[Neutral] = []
        line = self.line
        for rec in records:
            value = rec[3]  # (.value, without the named field's lookup on every line)
            if type(value) is dict:
                self.at = [rec[1], rec[2]]
                line(value, out)
                if out:
                    yield from out
                    out.clear()
        yield from self.flush()

    def line(self, v: dict[str, Any], out: list[Neutral]) -> None:
        """Translate one line into ``out``."""
        typ = v.get("type")
        if type(typ) is not str or typ not in _HANDLED:
            if typ == "permission-mode":
                self._mode_line(v)
            elif typ == "cost-state":
                self._lifetime_end(v, out)
            # progress lines carry copies of subagent messages: never counted.
            return
        st = self.st
        sid = v.get("sessionId")
        if type(sid) is str:
            if not sid.isascii():  # (clean's own first test, spared a call on every line)
                sid = clean(sid)
            own = st["own"]
            if own is None:
                st["own"] = sid
            elif sid != own:
                # A resumed session's copy of another session's line.
                return
        uuid = v.get("uuid")
        if type(uuid) is str:
            if not uuid.isascii():
                uuid = clean(uuid)
            recent = self.recent
            if uuid in recent.counts:  # (the window's own test, spared a method call on every line)
                return
            recent.add(uuid)
        if not st["cwd"]:
            cwd = v.get("cwd")
            if type(cwd) is str:
                st["cwd"] = clean(cwd)
        if st["ver"] is None:
            ver = v.get("version")
            if type(ver) is str and ver:
                st["ver"] = clean(ver)
        # Only an inline sidechain line (1.0.x) has a stream of its own.
        key = "" if self.sub or v.get("isSidechain") is not True else self._chain_key(v, typ)
        ss = self.streams.get(key)
        if ss is None:
            ss = self.streams[key] = _new_stream()
        at = len(out)
        if typ == "assistant":
            self._assistant(key, ss, v, out)
        elif typ == "user":
            self._user(key, ss, v, out)
        elif typ == "system":
            self._system(key, ss, v, out)
        else:
            self._attachment(key, ss, v, out)
        if key == "" and st.get("life") and len(out) > at:
            # The first records of a later process on this session: the last lifetime ended before them.
            del st["life"]
            out.insert(at, SessionEnded("", iso_ms(v.get("timestamp")), "process_end", lifetime=True))

    def _lifetime_end(self, v: dict[str, Any], out: list[Neutral]) -> None:
        """A ``cost-state`` line of this session: its process left it (see the module docstring)."""
        sid = v.get("sessionId")
        ss = self.streams.get("")
        if self.sub or ss is None or not ss["on"] or (type(sid) is str and self.st["own"] not in (None, clean(sid))):
            return  # (a subagent's file, nothing recorded yet, or another session's line)
        # What waits for a next line of this process is complete: no later line of it will come.
        self._close("", ss, out)
        hold = ss["hold"]
        if hold is not None:
            ss["hold"] = None
            out.append(UserMessage("", hold[1], hold[0].value))
        self.st["life"] = 1

    def flush(self) -> list[Neutral]:
        """What is still open, as records; leaves ``state`` as it is."""
        out: list[Neutral] = []
        main = self.streams.get("")
        if main is None or not main["on"]:
            out.append(self._session("", None))
        for key, ss in self.streams.items():
            hold = ss["hold"]
            if hold is not None:
                out.append(UserMessage(key, hold[1], hold[0].value))
            if ss["g"] is not None:
                out.extend(group_records(key, ss["g"], ss["p"]))
            out.extend(_result(key, r) for r in ss.get("e") or ())
        return out

    # -- streams and sessions -------------------------------------------------------------

    def _chain_key(self, v: dict[str, Any], typ: Any) -> str:
        """The stream of an inline sidechain line (``isSidechain: true`` in a main session's file)."""
        st = self.st
        chains: dict[str, str] = st["scm"]
        parent = v.get("parentUuid")
        key = chains.get(clean(parent)) if type(parent) is str else None
        if key is None:
            message = v.get("message")
            opens = parent is None or (
                typ == "user" and isinstance(message, dict) and isinstance(message.get("content"), str)
            )
            if opens or not st["scl"]:
                st["scn"] += 1
                key = f"sidechain-{st['scn']}"
            else:
                # The parent was forgotten (or never shown): the latest chain is the best guess.
                key = st["scl"]
        st["scl"] = key
        uuid = v.get("uuid")
        if type(uuid) is str:
            chains[clean(uuid)] = key
            if len(chains) > MAX_SIDECHAIN_UUIDS:
                del chains[next(iter(chains))]
        return key

    def _session(self, key: str, t: int | None) -> Session:
        st = self.st
        own = st["own"]
        cwd = st["cwd"]
        ver = st["ver"]
        if key == "":
            if self.sub:
                sid = f"{own}.agent-{st['agent']}" if own else self.stem
                return Session("", t, sid, cwd, "sub", st["name"], ver, own)
            return Session("", t, own or self.stem, cwd, "main", None, ver, None)
        main = own or self.stem
        return Session(key, t, f"{main}.{key}", cwd, "sub", None, ver, main)

    def _prep(self, key: str, ss: dict[str, Any], t: int | None, out: list[Neutral], ran: bool = False) -> None:
        """Make the stream ready for a new record: its Session first, a held command released.

        ``ran``: the record is a model response, so the held command started a
        model run and is the user's input; otherwise it is passed on as typed
        (the core drops slash lines).
        """
        if not ss["on"]:
            out.append(self._session(key, t))
            ss["on"] = True
        hold = ss["hold"]
        if hold is not None:
            ss["hold"] = None
            out.append(_command_input(key, hold) if ran else UserMessage(key, hold[1], hold[0].value))

    def _context(self, key: str, ss: dict[str, Any], t: int | None, out: list[Neutral]) -> None:
        """Pass on a prompt id or permission mode seen since the last time (stream ready)."""
        pid = ss.get("pid")
        if pid is not None and pid != ss.get("pide"):
            ss["pide"] = pid
            out.append(TurnStarted(key, t, pid))
        mode = ss.get("pm")
        if mode is not None and mode != ss.get("pme"):
            ss["pme"] = mode
            out.append(PermissionMode(key, t, mode))

    def _instructions(
        self, key: str, ss: dict[str, Any], att: dict[str, Any], t: int | None, out: list[Neutral]
    ) -> None:
        """Instruction files loaded into the context: an ``Instructions`` record each (its path)."""
        paths = _instruction_paths(att)
        if not paths:
            return
        if not ss["on"]:
            # The stream's Session first; a held command stays held (this is no sign it ran or not).
            out.append(self._session(key, t))
            ss["on"] = True
        for path in paths:
            out.append(Instructions(key, t, "", path))
            entry = instruction_entry(key, t, path)
            if entry is not None:
                out.append(entry)

    def _mode_line(self, v: dict[str, Any]) -> None:
        """A ``permission-mode`` line (2.1.x): the main session's mode from here on."""
        mode = v.get("permissionMode")
        sid = v.get("sessionId")
        if type(mode) is not str or not mode or (type(sid) is str and self.st["own"] not in (None, clean(sid))):
            return
        ss = self.streams.get("")
        if ss is None:
            ss = self.streams[""] = _new_stream()
        ss["pm"] = clean(mode)

    def _close(self, key: str, ss: dict[str, Any], out: list[Neutral]) -> None:
        g = ss["g"]
        if g is None:
            return
        out.extend(group_records(key, g, ss["p"]))
        ss["p"] = []
        ss["g"] = None
        if g["id"] is not None:
            self._seen(key, ss).add(g["id"])

    def _seen(self, key: str, ss: dict[str, Any]) -> _Window:
        seen = self.seen.get(key)
        if seen is None:
            seen = self.seen[key] = _Window(ss["seen"], MAX_SEEN_IDS if key == "" else MAX_SEEN_IDS_SIDECHAIN)
        return seen

    # -- assistant ------------------------------------------------------------------------

    def _assistant(self, key: str, ss: dict[str, Any], v: dict[str, Any], out: list[Neutral]) -> None:
        msg = v.get("message")
        if type(msg) is not dict:
            return
        mid = msg.get("id")
        if type(mid) is not str or not mid:
            mid = None
        elif not mid.isascii():
            mid = clean(mid)
        g = ss["g"]
        if g is None or mid is None or g["id"] != mid:
            if mid is not None and mid in self._seen(key, ss):
                # The same response written again (a replay after compaction or a resume).
                return
            self._close(key, ss, out)
            t = iso_ms(v.get("timestamp"))
            self._prep(key, ss, t, out, ran=True)
            self._context(key, ss, t, out)
            g = ss["g"] = _new_group(mid, t)
        g["h"].where.append(self.at)
        self._absorb(g, msg, v)
        early = ss.get("e")
        if early:
            # Results written before this line: they pair with its calls by tool_use_id.
            ids = {c[0] for c in _held(g)["c"]}
            ss["p"].extend(r for r in early if r[0] in ids)
            ss["e"] = [r for r in early if r[0] not in ids]
        if mid is None:
            self._close(key, ss, out)

    def _absorb(self, g: dict[str, Any], msg: dict[str, Any], v: dict[str, Any]) -> None:
        if g["m"] is None:
            model = msg.get("model")
            if type(model) is str and model and model != SYNTHETIC_MODEL:
                g["m"] = clean(model)
        stop = msg.get("stop_reason")
        if type(stop) is str and stop:
            g["s"] = clean(stop)
        usage = msg.get("usage")
        if type(usage) is dict:
            # Early lines of a response carry a streaming placeholder; the largest count is final.
            out_tokens = usage.get("output_tokens")
            if type(out_tokens) is not int or out_tokens < 0:
                out_tokens = _int(out_tokens)
            if out_tokens >= g["o"]:
                g["u"] = _usage(usage, out_tokens)
                g["o"] = out_tokens
                cost = v.get("costUSD")
                g["$"] = (
                    float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None
                )
        content = msg.get("content")
        held = _held(g)
        if type(content) is str:
            if content:
                held["x"].append(clean(content))
            return
        if type(content) is not list:
            return
        for block in content:
            if type(block) is not dict:
                continue
            bt = block.get("type")
            if bt == "text":
                text = block.get("text")
                if type(text) is str and text:
                    held["x"].append(clean(text))
            elif bt == "tool_use" or bt == "server_tool_use":
                call_id = block.get("id")
                name = block.get("name")
                if type(call_id) is str and call_id and type(name) is str:
                    tool_input = block.get("input")
                    held["c"].append([clean(call_id), clean(name), clean_value(tool_input)])
                    if name == "Skill" and type(tool_input) is dict:
                        skill = tool_input.get("skill") or tool_input.get("command")
                        if type(skill) is str and skill.strip():
                            g["k"].append(clean(skill.strip().lstrip("/").split()[0]))
            elif type(bt) is str and bt.endswith("_tool_result"):
                # Server-side tools (web search) answer inside the response itself.
                call_id = block.get("tool_use_id")
                if type(call_id) is str and call_id:
                    body = block.get("content")
                    failed = type(body) is dict and str(body.get("type", "")).endswith("_error")
                    nbytes, head = measure(body)
                    held["r"].append([clean(call_id), g["t"], nbytes, head, failed, None])

    # -- user -----------------------------------------------------------------------------

    def _user(self, key: str, ss: dict[str, Any], v: dict[str, Any], out: list[Neutral]) -> None:
        msg = v.get("message")
        if type(msg) is not dict:
            return
        # User lines carry the permission mode (and, from 2.1.x, the prompt's id): passed on
        # before the next input or response.
        mode = v.get("permissionMode")
        if type(mode) is str and mode:
            ss["pm"] = clean(mode)
        prompt_id = v.get("promptId")
        if type(prompt_id) is str and prompt_id:
            ss["pid"] = clean(prompt_id)
        content = msg.get("content")
        texts: list[str]
        images = 0
        if type(content) is str:
            texts = [content]
        elif type(content) is list:
            texts = []
            results: list[dict[str, Any]] = []
            for block in content:
                if type(block) is not dict:
                    continue
                bt = block.get("type")
                if bt == "tool_result":
                    results.append(block)
                elif bt == "text":
                    text = block.get("text")
                    if type(text) is str:
                        texts.append(text)
                elif bt == "image" or bt == "document":
                    images += 1
            if results:
                t = iso_ms(v.get("timestamp"))
                self._results(key, ss, v, results, t, out)
                if texts and any(x.lstrip().startswith(INTERRUPT_PREFIX) for x in texts):
                    self._abort(key, ss, t, out)
                return
        else:
            return
        if v.get("isMeta") is True:
            if is_stop_feedback(v):
                # A Stop hook blocked the stop and the loop goes on: the stop was one (live, its
                # Stop hook ended the run), the loop after it a run of its own with no input.
                self._close(key, ss, out)
                out.append(RunEnd(key, iso_ms(v.get("timestamp")), "stop"))
                return
            hold = ss["hold"]
            if hold is not None and not v.get("sourceToolUseID") and any(_expands(x) for x in texts):
                # The command the user typed was a skill or a prompt command: its body
                # follows as a meta line, and the model runs on it.
                ss["hold"] = None
                out.append(_command_input(key, hold))
            return
        if v.get("isCompactSummary") is True or v.get("isVisibleInTranscriptOnly") is True:
            return
        kept = [x for x in map(strip_context, texts) if x]
        if not kept and not images:
            return
        kind, text = classify("\n".join(kept)) if kept else ("input", "")
        if kind == "skip":
            g = ss["g"]
            if g is not None and g["s"] == "end_turn" and kept[0].lstrip().startswith(TASK_NOTIFICATION):
                # A background task's notification, submitted by Claude Code after the loop
                # stopped: the loop it starts is a run of its own, with no input (as live,
                # where a Stop ended the first).
                self._close(key, ss, out)
                out.append(RunEnd(key, iso_ms(v.get("timestamp")), "stop"))
            return
        t = iso_ms(v.get("timestamp"))
        if kind == "abort":
            self._abort(key, ss, t, out)
        elif kind == "command":
            self._command(key, ss, text, t, out)
        else:
            self._close(key, ss, out)
            self._release(key, ss, out)
            self._prep(key, ss, t, out)
            self._context(key, ss, t, out)
            out.append(UserMessage(key, t, text))

    def _release(self, key: str, ss: dict[str, Any], out: list[Neutral], *rs: list[Any]) -> None:
        """Pass on results whose call never came (all held ones when ``rs`` is empty)."""
        if not rs:
            rs = tuple(ss.get("e") or ())
            ss["e"] = []
        for r in rs:
            self._prep(key, ss, r[1], out)
            out.append(_result(key, r))

    def _abort(self, key: str, ss: dict[str, Any], t: int | None, out: list[Neutral]) -> None:
        self._close(key, ss, out)
        self._release(key, ss, out)
        self._prep(key, ss, t, out)
        out.append(Abort(key, t))

    def _command(self, key: str, ss: dict[str, Any], text: str, t: int | None, out: list[Neutral]) -> None:
        text = clean(text)
        last = ss["lc"]
        digest = _digest(text)
        if (
            last is not None
            and last[0] == digest
            and t is not None
            and last[1] is not None
            and abs(t - last[1]) <= SAME_COMMAND_MS
        ):
            # 2.1.x may write one local command both as a user line and a system line.
            return
        self._close(key, ss, out)
        self._release(key, ss, out)
        self._prep(key, ss, t, out)
        self._context(key, ss, t, out)
        ss["hold"] = [Sealed(text, self.at), t]
        ss["lc"] = [digest, t]

    def _results(
        self,
        key: str,
        ss: dict[str, Any],
        v: dict[str, Any],
        results: list[dict[str, Any]],
        t: int | None,
        out: list[Neutral],
    ) -> None:
        g = ss["g"]
        open_calls = {c[0] for c in _held(g)["c"]} if g is not None else None
        # toolUseResult describes the line's one result; with several it is ambiguous.
        detail = v.get("toolUseResult") if len(results) == 1 else None
        for block in results:
            call_id = block.get("tool_use_id")
            if type(call_id) is not str or not call_id:
                continue
            nbytes, head = measure(block.get("content"))
            is_error = block.get("is_error") is True
            error_class: str | None = None
            if type(detail) is dict:
                if detail.get("interrupted") is True:
                    is_error = True
                    error_class = "interrupted"
            elif type(detail) is str and is_error and detail.startswith("User rejected"):
                error_class = "rejected"
            if error_class is None and is_error and head.startswith(REJECT_PREFIX):
                error_class = "rejected"
            r: list[Any] = [clean(call_id), t, nbytes, head, is_error, error_class]
            if open_calls is not None and call_id in open_calls:
                r[3] = Sealed(head, self.at)  # (waits in the state for the response to close)
                ss["p"].append(r)
            else:
                # Claude Code may write a result before the assistant line with its call (the
                # parentUuid chain is right, the file order is not): held until that line, or
                # until the run ends, when it is passed on alone (its call is in no line read).
                r[3] = Sealed(head, self.at)  # (waits in the state for its call's line)
                early = ss.setdefault("e", [])
                early.append(r)
                if len(early) > MAX_EARLY_RESULTS:
                    self._release(key, ss, out, early.pop(0))

    # -- system and attachment lines ----------------------------------------------------------

    def _system(self, key: str, ss: dict[str, Any], v: dict[str, Any], out: list[Neutral]) -> None:
        subtype = v.get("subtype")
        if subtype == "compact_boundary":
            t = iso_ms(v.get("timestamp"))
            self._close(key, ss, out)
            self._prep(key, ss, t, out)
            meta = v.get("compactMetadata")
            trigger = meta.get("trigger") if type(meta) is dict else None
            out.append(Compaction(key, t, trigger if type(trigger) is str else ""))
        elif subtype == "local_command":
            content = v.get("content")
            if type(content) is str:
                kind, text = classify(content)
                if kind == "command":
                    self._command(key, ss, text, iso_ms(v.get("timestamp")), out)

    def _attachment(self, key: str, ss: dict[str, Any], v: dict[str, Any], out: list[Neutral]) -> None:
        att = v.get("attachment")
        if type(att) is not dict:
            return
        kind = att.get("type")
        if kind in ("nested_memory", "instructions"):
            self._instructions(key, ss, att, iso_ms(v.get("timestamp")), out)
            return
        if kind != "queued_command":
            return
        origin = att.get("origin")
        origin_kind = origin.get("kind") if type(origin) is dict else None
        if att.get("commandMode", "prompt") != "prompt" or origin_kind not in (None, "human"):
            return
        prompt = att.get("prompt")
        if type(prompt) is list:
            prompt = "\n".join(b["text"] for b in prompt if type(b) is dict and type(b.get("text")) is str)
        if type(prompt) is not str:
            return
        kind, text = classify(prompt)
        if kind != "input":
            return
        t = iso_ms(v.get("timestamp"))
        # A prompt typed while Claude worked, delivered into the running turn: an interrupt.
        self._close(key, ss, out)
        self._prep(key, ss, t, out)
        out.append(Abort(key, t, "queued"))
        out.append(UserMessage(key, t, text))


def _instruction_paths(att: dict[str, Any]) -> list[str]:
    """The instruction files (CLAUDE.md, rules, memory) an attachment loads, in order.

    ``nested_memory`` names one file (``path``, or its ``content.path``); the
    grouped ``instructions`` form lists ``files[].path``.
    """
    if att.get("type") == "nested_memory":
        items: list[Any] = [att]
    else:
        files = att.get("files")
        items = files if type(files) is list else []
    paths: list[str] = []
    for item in items:
        if type(item) is not dict:
            continue
        path = item.get("path")
        content = item.get("content")
        if type(path) is not str and type(content) is dict:
            path = content.get("path")
        if type(path) is str and path and clean(path) not in paths:
            paths.append(clean(path))
    return paths


def _expands(text: str) -> bool:
    """Whether a meta line's text is a command's expansion (a prompt or skill body, not a caveat)."""
    return bool(text.strip()) and classify(text)[0] == "input"


def _span(saved: Any) -> list[int]:
    """The byte span a sealed value of a saved state was read at."""
    at = saved.get("at") if type(saved) is dict else None
    if type(at) is not list or len(at) != 2 or not all(type(x) is int and x >= 0 for x in at):
        raise RestartImport("claude_code: a saved state without its sealed value's place")
    return at


def _spans(saved: Any) -> list[list[int]]:
    """The byte spans of the lines a saved group was absorbed from."""
    at = saved.get("at") if type(saved) is dict else None
    if type(at) is not list or not at:
        raise RestartImport("claude_code: a saved group without its lines")
    return [_span({"at": x}) for x in at]


def _check(value: Sealed, saved: Any) -> None:
    """A value read again must be the one saved (else the transcript changed: read it whole)."""
    if not value.matches(saved):
        raise RestartImport("claude_code: a line read again no longer gives what the state held")


def _reread(source: Source, at: list[int]) -> dict[str, Any]:
    """The transcript line at byte span ``at``, parsed (as the reader gave it the first time)."""
    from .reader import read

    start, end = at
    for item in read(source, start):
        if type(item) is RawRecord and item.offset == start and item.end == end and type(item.value) is dict:
            value: dict[str, Any] = item.value
            return value
        break
    raise RestartImport(f"claude_code: no line at bytes {start}-{end} any more")


def _command_input(key: str, hold: list[Any]) -> UserMessage:
    """A slash command that started a model run, as the user's input.

    Its name goes to ``skills`` and its arguments are the text; a mark command
    (``/rematch-mark <class>``) stays as typed, for the core to read the mark.
    """
    typed: str = hold[0].value
    t = hold[1]
    if normalize_mark(typed) != typed:
        return UserMessage(key, t, typed)
    name, _, args = typed.partition(" ")
    name = name.lstrip("/")
    return UserMessage(key, t, args.strip(), skills=(name,) if name else ())


def _agent_type(path: Path) -> str | None:
    """The subagent's type from its ``agent-<id>.meta.json`` sidecar (2.1.172+), if any."""
    meta = path.with_name(session_stem(path) + ".meta.json")
    try:
        if meta.stat().st_size > 64 * 1024:
            return None
        value = orjson.loads(meta.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if type(value) is not dict:
        return None
    found = value.get("agentType") or value.get("subagentType")
    return found if type(found) is str and found else None
