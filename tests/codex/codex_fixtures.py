"""Fixture builders for the Codex plugin's tests: rollout lines the tests write themselves."""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

import rematch_codex as plugin
from rematch_codex import discover
from rematch_codex import translate as tr
from rematch_trace.host.source import RawRecord, Source
from rematch_trace.host.vocab import Neutral
from rematch_trace.store.states import state_dumps, state_loads
from rematch_trace.testing import SynthesizedSession, synthesize_file

SID = "019a0000-1111-7222-8333-444444444444"
PARENT = "0199ffff-0000-7000-8000-000000000000"
MODEL = "gpt-5-codex"


def turn_id(n: int) -> str:
    """A UUIDv7 turn id created ``n`` ms after ``SID`` (negative: before it)."""
    base = int(SID[:8] + SID[9:13], 16) + n
    h = f"{base:012x}"
    return f"{h[:8]}-{h[8:12]}-7000-8000-{n % 10**12:012d}"


def usage(inp: int, cached: int, out: int) -> dict[str, int]:
    """A Codex TokenUsage object (total = input + output, as Codex counts it)."""
    return {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": inp + out,
    }


class Lines:
    """Builds envelope rollout lines with timestamps 10 ms apart (``gap`` jumps ahead)."""

    def __init__(self, start_ms: int = 1_767_225_600_000) -> None:
        self.ms = start_ms
        self.ids = itertools.count(1)

    def _ts(self) -> str:
        self.ms += 10
        s, ms = divmod(self.ms, 1000)
        import datetime as dt

        return dt.datetime.fromtimestamp(s, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}Z"

    def gap(self, ms: int) -> None:
        """Let ``ms`` milliseconds pass before the next line."""
        self.ms += ms

    def env(self, kind: str, payload: Any, **extra: Any) -> dict[str, Any]:
        """A raw envelope line."""
        return {"timestamp": self._ts(), **extra, "type": kind, "payload": payload}

    def meta(self, sid: str = SID, **fields: Any) -> dict[str, Any]:
        """A session_meta line."""
        payload = {
            "id": sid,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": "/work/repo",
            "originator": "codex_cli_rs",
            "cli_version": "0.120.0",
            "model_provider": "openai",
            **fields,
        }
        return self.env("session_meta", payload)

    def turn_context(self, model: str = MODEL, **fields: Any) -> dict[str, Any]:
        """A turn_context line."""
        return self.env("turn_context", {"cwd": "/work/repo", "approval_policy": "never", "model": model, **fields})

    def event(self, kind: str, **fields: Any) -> dict[str, Any]:
        """An event_msg line."""
        return self.env("event_msg", {"type": kind, **fields})

    def item(self, kind: str, **fields: Any) -> dict[str, Any]:
        """A response_item line."""
        return self.env("response_item", {"type": kind, **fields})

    def message(self, role: str, *texts: str) -> dict[str, Any]:
        """A message item with one text content item per text."""
        kind = "output_text" if role == "assistant" else "input_text"
        return self.item("message", role=role, content=[{"type": kind, "text": t} for t in texts])

    def user(self, *texts: str) -> dict[str, Any]:
        """A user-role message."""
        return self.message("user", *texts)

    def assistant(self, text: str) -> dict[str, Any]:
        """An assistant message."""
        return self.message("assistant", text)

    def reasoning(self) -> dict[str, Any]:
        """A reasoning item (no visible text)."""
        return self.item("reasoning", summary=[{"type": "summary_text", "text": "thinking"}], content=None)

    def call(self, name: str, args: Any, call_id: str | None = None) -> dict[str, Any]:
        """A function_call (arguments serialised as Codex does, a JSON string)."""
        cid = call_id or f"call_{next(self.ids)}"
        return self.item("function_call", name=name, arguments=orjson.dumps(args).decode(), call_id=cid)

    def custom(self, name: str, text: str, call_id: str | None = None) -> dict[str, Any]:
        """A custom_tool_call (freeform input)."""
        cid = call_id or f"call_{next(self.ids)}"
        return self.item("custom_tool_call", name=name, input=text, call_id=cid, status="completed")

    def output(self, call_id: str, output: Any, kind: str = "function_call_output") -> dict[str, Any]:
        """A tool output item."""
        return self.item(kind, call_id=call_id, output=output)

    def tokens(self, total: dict[str, int] | None, last: dict[str, int] | None = None) -> dict[str, Any]:
        """A token_count event (``total`` None: a rate-limit-only event)."""
        if total is None and last is None:
            return self.event("token_count", info=None, rate_limits={})
        info: dict[str, Any] = {"model_context_window": 200000}
        if total is not None:
            info["total_token_usage"] = total
        if last is not None:
            info["last_token_usage"] = last
        return self.event("token_count", info=info, rate_limits={})


def rollout_path(tmp_path: Path, sid: str = SID, folder: str = "sessions/2026/01/01") -> Path:
    """Where Codex would write a rollout of thread ``sid``."""
    d = tmp_path / folder
    d.mkdir(parents=True, exist_ok=True)
    return d / f"rollout-2026-01-01T00-00-00-{sid}.jsonl"


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    """Write ``lines`` as JSONL."""
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def source_of(path: Path) -> Source:
    """The source the plugin claims ``path`` as (failing the test when it does not)."""
    source = discover.detect(path, path.read_bytes()[:4096], "codex")
    assert source is not None, f"not claimed: {path}"
    return source


def raw_records(path: Path, start: int = 0) -> list[RawRecord]:
    """The raw records the plugin reads from ``path``."""
    return [r for r in discover.read(source_of(path), start) if isinstance(r, RawRecord)]


def translate(path: Path, state: dict[str, Any] | None = None) -> list[Neutral]:
    """Every neutral record ``path`` translates to, from a fresh state."""
    return list(tr.translate(source_of(path), iter(raw_records(path)), {} if state is None else state))


def run(tmp_path: Path, lines: list[dict[str, Any]], sid: str = SID) -> list[Neutral]:
    """Write ``lines`` as a rollout and translate it."""
    return translate(write(rollout_path(tmp_path, sid), lines))


def of(records: list[Neutral], kind: type) -> list[Any]:
    """The records of one neutral type."""
    return [r for r in records if isinstance(r, kind)]


def split_run(source: Source, records: list[RawRecord], cut: int) -> list[Neutral]:
    """Translate in two passes paused after ``cut`` records, as the core resumes a grown file.

    The first pass's output after its records ran out (the final flush) is
    dropped and its state is snapshotted at that moment through JSON, exactly
    like the core; the second pass continues from that snapshot.
    """
    state: dict[str, Any] = {}
    snapshot: dict[str, Any] = {}
    done = {"flag": False}

    def feed(part: list[RawRecord]) -> Iterator[RawRecord]:
        yield from part
        snapshot.update(state_loads(state_dumps(state)))  # as the core saves it
        done["flag"] = True

    first: list[Neutral] = []
    for rec in tr.translate(source, feed(records[:cut]), state):
        if not done["flag"]:
            first.append(rec)
    second = list(tr.translate(source, iter(records[cut:]), snapshot))
    return first + second


def events_available() -> bool:
    """Whether the core's security-event sink exists yet (it is optional here)."""
    return importlib.util.find_spec("rematch_trace.security.events") is not None


def synth(path: Path, out: Path | None = None) -> list[SynthesizedSession]:
    """Import ``path`` through the real core with this plugin."""
    return synthesize_file(path, [plugin], out=out, hint="codex", events=events_available())
