"""A conversation as terminal text or Markdown (``rematch show SESSION --conversation``).

Long texts are folded: the first :data:`FOLD_LINES` lines (at most :data:`FOLD_CHARS`
characters) and a note saying how much more there is and that ``--full`` shows it.
Every text is shown with its hidden characters escaped (control and bidi
characters), so a transcript cannot drive the terminal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from rematch_trace.conversation.view import Conversation, Entry
from rematch_trace.host.text import one_line
from rematch_trace.report.text import visible, when

#: Lines of a long text shown before the fold.
FOLD_LINES = 12
#: Characters of a long text shown before the fold.
FOLD_CHARS = 1500


def fold(text: str, full: bool) -> tuple[str, str]:
    """``(shown, note)``: the text, or its start and a note on what is left out."""
    if full:
        return text, ""
    lines = text.split("\n")
    head = "\n".join(lines[:FOLD_LINES])
    if len(head) > FOLD_CHARS:
        head = head[:FOLD_CHARS]
    if len(head) >= len(text):
        return text, ""
    rest_lines = text[len(head):].count("\n")
    return head, f"… {len(text) - len(head):,} more characters ({rest_lines:,} more lines): --full shows all"


def input_text(value: Any) -> str:
    """A call's input for people: a command or a mapping's fields one per line, the rest as JSON."""
    if isinstance(value, dict):
        parts = []
        for k, v in value.items():
            parts.append(f"{k}: {v if isinstance(v, str) else orjson.dumps(v, default=str).decode()}")
        return "\n".join(parts)
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode() if value is not None else ""


def _safe(text: str) -> str:
    """Multi-line text with its hidden characters escaped, each line on its own."""
    return "\n".join(one_line(line) for line in str(visible(text)).split("\n"))


def _block(text: str, indent: str, full: bool) -> Iterator[str]:
    shown, note = fold(text, full)
    for line in _safe(shown).split("\n"):
        yield f"{indent}{line}".rstrip()
    if note:
        yield f"{indent}{note}"


def _head(e: Entry, label: str) -> str:
    seq = f"#{e.seq} " if e.seq is not None else ""
    flags = f"   <- {', '.join(e.reasons)}" if e.reasons else ""
    bang = "!" if e.reasons else " "
    return f"{bang} {seq}{when(e.t, '%Y-%m-%d %H:%M:%S')}  {label}{flags}"


#: Said under a call that has no output, by the conversation's status: the transcript read, or why not.
NO_OUTPUT = {"ok": "(no output in the transcript)", "gone": "(output not shown: the source transcript is gone)"}


def no_output(status: str) -> str:
    """What a call without output says: none in the transcript, or no transcript read (the trace keeps none)."""
    return NO_OUTPUT.get(status, "(output not shown: no transcript was read, the trace keeps none)")


def shell_escape(e: Entry) -> bool:
    """Whether a prompt is a shell command the user ran themselves (``!cmd``), not words to the model."""
    return e.kind == "prompt" and e.text.startswith("!") and "\n" not in e.text.strip()


def entry_lines(e: Entry, indent: str, full: bool, read: str = "ok") -> Iterator[str]:
    """The lines of one entry (and, under a call, its subagent's conversation, indented); ``read`` is the
    conversation's status (a call without output says whether a transcript was read)."""
    inner = indent + "    "
    if e.kind in ("prompt", "assistant"):
        yield indent + _head(e, "user" if e.kind == "prompt" else "assistant")
        yield from _block(e.text, inner, full)
    elif e.kind == "call":
        status = ""
        if e.is_error:
            status = f"  ERROR {e.error_class or ''}".rstrip()
        yield indent + _head(e, f"tool {one_line(e.tool)}{status}")
        yield from _block(input_text(e.input), inner + "> ", full)
        for b in e.blocked:
            yield f"{inner}{b['state'].upper()} by {one_line(b['hook_id'] or '?')} (#{b['seq']}): {one_line(b['reason'])}"
        if e.output is not None:
            yield f"{inner}{'error' if e.is_error else 'output'}:"
            yield from _block(e.output or "(empty)", inner + "  ", full)
        elif not e.blocked:
            yield f"{inner}{no_output(read)}"
        for link in [e.subagent, *e.other_subagents] if e.subagent is not None else []:
            yield from _subagent(link, inner, full)
    elif e.kind == "output":
        yield indent + _head(e, "output" + (" (error)" if e.is_error else ""))
        yield from _block(e.output or "(empty)", inner, full)
    elif e.kind == "blocked":
        yield indent + _head(e, f"tool {one_line(e.tool)} blocked")
        for b in e.blocked:
            yield f"{inner}{b['state'].upper()} by {one_line(b['hook_id'] or '?')}: {one_line(b['reason'])}"
    elif e.kind == "mark":
        yield indent + _head(e, f"mark {one_line(e.trigger)}")
        if e.text:
            yield from _block(e.text, inner, full)
    elif e.kind == "compaction":
        yield indent + _head(e, "context compacted" + (f" ({one_line(e.trigger)})" if e.trigger else ""))
        if e.text:
            yield from _block(e.text, inner + "| ", full)


def _subagent(link: dict[str, Any], indent: str, full: bool) -> Iterator[str]:
    sid = one_line(link["session_id"])
    yield f"{indent}subagent {sid}: rematch show {sid} --conversation"
    sub = link.get("conversation")
    if isinstance(sub, Conversation):
        if sub.note:
            yield f"{indent}  ({one_line(sub.note)})"
        for e in sub.entries:
            yield from entry_lines(e, indent + "  | ", full, sub.status)


def render_text(conv: Conversation, full: bool = False) -> Iterator[str]:
    """The conversation as terminal lines."""
    yield f"{one_line(conv.harness or '?')} session {one_line(conv.session_id)}"
    if conv.source:
        yield f"source: {one_line(conv.source)}"
    if conv.parent is not None:
        call = f", call {one_line(conv.parent['call_id'])}" if conv.parent.get("call_id") else ""
        yield f"subagent of {one_line(conv.parent['session_id'])}{call}"
    if conv.note:
        yield f"NOTE: {one_line(conv.note)}"
    for reason, seqs in conv.flag_seqs.items():
        yield f"flag {reason}: " + " ".join(f"#{s}" for s in seqs)
    yield ""
    for e in conv.entries:
        yield from entry_lines(e, "", full, conv.status)
    if not conv.entries:
        yield "(nothing said in this session)"


def _md_fence(text: str) -> str:
    """A fenced block that the text itself cannot close."""
    longest = max((len(run) for run in text.split("\n") if set(run) == {"`"}), default=0)
    ticks = "`" * max(3, longest + 1)
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def render_markdown(conv: Conversation, full: bool = True, level: int = 2) -> Iterator[str]:
    """The conversation as Markdown (an export: nothing folded unless ``full`` is false)."""
    h = "#" * level
    if level == 2:
        yield f"# {conv.harness} session {visible(conv.session_id)}"
        yield ""
        if conv.source:
            yield f"Source: `{visible(conv.source)}`"
        if conv.parent is not None:
            yield f"Subagent of {visible(conv.parent['session_id'])}" + (
                f", started by call `{visible(conv.parent['call_id'])}`" if conv.parent.get("call_id") else "")
        if conv.note:
            yield f"> **Note:** {visible(conv.note)}"
        yield ""
    before: list[Entry | None] = [None, *conv.entries]
    for prev, e in zip(before, conv.entries, strict=False):
        seq = f" #{e.seq}" if e.seq is not None else ""
        flags = f" — flagged: {', '.join(e.reasons)}" if e.reasons else ""
        stamp = when(e.t, "%Y-%m-%d %H:%M:%S")
        if shell_escape(e):
            # `!cmd`: a command the user ran in the harness's shell, not a prompt to the model.
            yield f"{h} User ran a shell command{seq} ({stamp}){flags}"
            yield ""
            yield _md_fence(str(visible(e.text)))
        elif e.kind in ("prompt", "assistant"):
            yield f"{h} {'User' if e.kind == 'prompt' else 'Assistant'}{seq} ({stamp}){flags}"
            yield ""
            yield str(visible(fold(e.text, full)[0]))
        elif e.kind == "output" and not e.tool:
            # An output with no call in the transcript: a `!cmd`'s, or a call's the transcript lost.
            title = "Shell command output" if prev is not None and shell_escape(prev) else "Output (no call)"
            yield f"{h} {title}{seq} ({stamp}){flags}"
            if e.output is not None:
                yield ""
                yield _md_fence(str(visible(fold(e.output, full)[0])))
        elif e.kind in ("call", "blocked", "output"):
            err = f" — error {e.error_class or ''}".rstrip() if e.is_error else ""
            yield f"{h} Tool `{visible(e.tool) or 'output'}`{seq} ({stamp}){err}{flags}"
            yield ""
            if e.input is not None:
                yield _md_fence(str(visible(fold(input_text(e.input), full)[0])))
            for b in e.blocked:
                yield f"**{b['state']}** by {visible(b['hook_id'])}: {visible(b['reason'])}"
            if e.output is not None:
                yield ""
                yield "Error:" if e.is_error else "Output:"
                yield _md_fence(str(visible(fold(e.output, full)[0])))
            elif e.kind == "call" and not e.blocked:
                yield no_output(conv.status)
            for link in [e.subagent, *e.other_subagents] if e.subagent is not None else []:
                yield ""
                yield f"Subagent `{visible(link['session_id'])}`:"
                sub = link.get("conversation")
                if isinstance(sub, Conversation):
                    for line in render_markdown(sub, full, min(level + 1, 6)):
                        yield "> " + line if line else ">"
        elif e.kind == "mark":
            yield f"{h} Mark `{visible(e.trigger)}`{seq} ({stamp}){flags}"
            yield ""
            yield str(visible(e.text))
        elif e.kind == "compaction":
            yield f"{h} Context compacted{f' ({visible(e.trigger)})' if e.trigger else ''} ({stamp})"
            yield ""
            if e.text:
                yield _md_fence(str(visible(fold(e.text, full)[0])))
        yield ""
