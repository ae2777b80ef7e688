"""Builders for the hostile suite: small valid transcripts of each harness, and a CLI runner.

Every builder returns plain dicts (one per transcript line) so a test can break
any field of any record kind before writing the file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

HARNESSES = ("claude_code", "codex", "omp")
PLUGINS_ENV = "claude_code,codex,omp,pi"

CC_SID = "11111111-2222-3333-4444-555555555555"
CODEX_SID = "019a0000-1111-7222-8333-444444444444"
OMP_SID = "0198cc2a-0000-7000-8000-00000000a001"


def sid_for(harness: str, n: int = 0) -> str:
    """A session id of ``harness``'s shape, distinct per ``n``."""
    base = {"claude_code": CC_SID, "codex": CODEX_SID, "omp": OMP_SID}[harness]
    return base[:-6] + f"{n:06d}" if n else base


def _ts(n: int) -> str:
    return f"2026-02-10T21:{n // 60 % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z"


def claude_code_lines(sid: str = CC_SID, cwd: str = "/work/project", turns: int = 2) -> list[dict[str, Any]]:
    """A Claude Code session: user prompt, assistant text, tool call, tool result, per turn."""
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    n = 0

    def base(typ: str, **extra: Any) -> dict[str, Any]:
        nonlocal parent, n
        n += 1
        uuid = f"u-{sid[:8]}-{n:05d}"
        line = {
            "parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
            "sessionId": sid, "version": "2.1.39", "gitBranch": "main", "type": typ, "uuid": uuid,
            "timestamp": _ts(n),
        }
        line.update(extra)
        parent = uuid
        return line

    for t in range(turns):
        lines.append(base("user", message={"role": "user", "content": f"please do task {t}"}))
        lines.append(base("assistant", requestId=f"req_{t}", message={
            "id": f"msg_{t}a", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": f"working on {t}"}], "stop_reason": None,
            "usage": {"input_tokens": 3, "output_tokens": 4}}))
        lines.append(base("assistant", requestId=f"req_{t}", message={
            "id": f"msg_{t}a", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "tool_use", "id": f"toolu_{t}", "name": "Bash",
                         "input": {"command": f"ls dir{t}"}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 9}}))
        lines.append(base("user", toolUseResult={"stdout": "a\nb", "stderr": "", "interrupted": False},
                          message={"role": "user", "content": [
                              {"type": "tool_result", "tool_use_id": f"toolu_{t}", "content": "a\nb",
                               "is_error": t % 2 == 1}]}))
        lines.append(base("assistant", requestId=f"req_{t}b", message={
            "id": f"msg_{t}b", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": f"done {t}"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 7}}))
    lines.append(base("system", subtype="turn_duration", durationMs=1200))
    return lines


def codex_lines(sid: str = CODEX_SID, cwd: str = "/work/repo", turns: int = 2) -> list[dict[str, Any]]:
    """A Codex rollout: session_meta, then per turn a context, prompt, call, output, answer."""
    n = 0

    def env(kind: str, payload: Any) -> dict[str, Any]:
        nonlocal n
        n += 1
        return {"timestamp": _ts(n), "type": kind, "payload": payload}

    lines = [env("session_meta", {
        "id": sid, "timestamp": "2026-02-10T21:00:00.000Z", "cwd": cwd, "originator": "codex_cli_rs",
        "cli_version": "0.120.0", "model_provider": "openai", "git": {"branch": "main"}})]
    for t in range(turns):
        lines.append(env("event_msg", {"type": "task_started", "turn_id": f"turn-{t}"}))
        lines.append(env("turn_context", {"cwd": cwd, "approval_policy": "never", "model": "gpt-5-codex",
                                          "turn_id": f"turn-{t}"}))
        lines.append(env("response_item", {"type": "message", "role": "user",
                                           "content": [{"type": "input_text", "text": f"please do task {t}"}]}))
        lines.append(env("event_msg", {"type": "user_message", "message": f"please do task {t}", "images": []}))
        lines.append(env("response_item", {"type": "reasoning", "summary": [{"type": "summary_text",
                                                                            "text": "thinking"}]}))
        lines.append(env("response_item", {"type": "function_call", "name": "shell",
                                           "arguments": orjson.dumps({"command": ["ls", f"d{t}"]}).decode(),
                                           "call_id": f"call_{t}"}))
        lines.append(env("response_item", {"type": "function_call_output", "call_id": f"call_{t}",
                                           "output": orjson.dumps({"output": "a\nb", "metadata": {
                                               "exit_code": t % 2, "duration_seconds": 0.1}}).decode()}))
        lines.append(env("response_item", {"type": "message", "role": "assistant",
                                           "content": [{"type": "output_text", "text": f"done {t}"}]}))
        lines.append(env("event_msg", {"type": "agent_message", "message": f"done {t}"}))
        lines.append(env("event_msg", {"type": "token_count", "info": {"total_token_usage": {
            "input_tokens": 10 * (t + 1), "cached_input_tokens": 2, "output_tokens": 5, "reasoning_output_tokens": 0,
            "total_tokens": 10 * (t + 1) + 5}, "last_token_usage": {
            "input_tokens": 10, "cached_input_tokens": 2, "output_tokens": 5, "reasoning_output_tokens": 0,
            "total_tokens": 15}, "model_context_window": 200000}, "rate_limits": {}}))
        lines.append(env("event_msg", {"type": "task_complete", "turn_id": f"turn-{t}",
                                       "last_agent_message": f"done {t}"}))
    return lines


def omp_lines(sid: str = OMP_SID, cwd: str = "/home/dev/proj", turns: int = 2) -> list[dict[str, Any]]:
    """An omp v3 session: header, then per turn user, assistant with a call, result, answer."""
    lines: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": sid, "timestamp": "2026-08-21T14:02:10.500Z", "cwd": cwd}]
    leaf: str | None = None
    n = 0

    def entry(typ: str, **payload: Any) -> None:
        nonlocal leaf, n
        n += 1
        eid = f"e{n:07d}"
        e = {"type": typ, "id": eid, "parentId": leaf, "timestamp": _ts(n)}
        e.update(payload)
        lines.append(e)
        leaf = eid

    entry("model_change", provider="anthropic", modelId="claude-opus-4-5")
    ms = 1787320942586
    for t in range(turns):
        entry("message", message={"role": "user", "content": [{"type": "text", "text": f"please do task {t}"}],
                                  "timestamp": ms + 10 * t})
        entry("message", message={
            "role": "assistant", "content": [{"type": "thinking", "thinking": "hmm"},
                                             {"type": "text", "text": f"working {t}"},
                                             {"type": "toolCall", "id": f"tc_{t}", "name": "bash",
                                              "arguments": {"command": f"ls d{t}"}}],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-opus-4-5",
            "usage": {"input": 10, "output": 5, "cacheRead": 100, "cacheWrite": 7, "totalTokens": 122,
                      "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0.0, "cacheWrite": 0.0, "total": 0.3}},
            "stopReason": "toolUse", "timestamp": ms + 10 * t + 1})
        entry("message", message={"role": "toolResult", "toolCallId": f"tc_{t}", "toolName": "bash",
                                  "content": [{"type": "text", "text": "a\nb"}], "isError": t % 2 == 1,
                                  "timestamp": ms + 10 * t + 2})
        entry("message", message={
            "role": "assistant", "content": [{"type": "text", "text": f"done {t}"}], "api": "anthropic-messages",
            "provider": "anthropic", "model": "claude-opus-4-5",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            "stopReason": "stop", "timestamp": ms + 10 * t + 3})
    return lines


def lines_for(harness: str, sid: str | None = None, cwd: str | None = None, turns: int = 2) -> list[dict[str, Any]]:
    """A valid transcript of ``harness`` as a list of line objects."""
    kw: dict[str, Any] = {"turns": turns}
    if sid is not None:
        kw["sid"] = sid
    if cwd is not None:
        kw["cwd"] = cwd
    if harness == "claude_code":
        return claude_code_lines(**kw)
    if harness == "codex":
        return codex_lines(**kw)
    return omp_lines(**kw)


def path_for(root: Path, harness: str, sid: str) -> Path:
    """Where ``harness`` would keep a session ``sid`` under ``root`` (name as it writes it)."""
    if harness == "claude_code":
        return root / "claude" / "projects" / "-work-project" / f"{sid}.jsonl"
    if harness == "codex":
        return root / "codex" / "sessions" / "2026" / "02" / "10" / f"rollout-2026-02-10T21-00-00-{sid}.jsonl"
    # omp's own folder (``~/.omp/agent/sessions``): a file of the format pi and omp share, without omp's
    # title slot, is omp's there (and pi's elsewhere: docs/trace-schema.md, Decisions).
    return root / ".omp" / "agent" / "sessions" / "--home-dev-proj--" / f"2026-08-21T14-02-10-500Z_{sid}.jsonl"


def dump(line: Any) -> bytes:
    """One JSONL line (``bytes`` and ``str`` lines are written as they are)."""
    if isinstance(line, bytes):
        return line + b"\n"
    if isinstance(line, str):
        return line.encode("utf-8", "surrogatepass") + b"\n"
    try:
        return orjson.dumps(line) + b"\n"
    except TypeError:  # what orjson refuses (a 70-bit integer): plain json writes it
        return json.dumps(line, separators=(",", ":")).encode() + b"\n"


def write(path: Path, lines: list[Any]) -> Path:
    """Write ``lines`` as JSONL, creating the folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(dump(x) for x in lines))
    return path


def make(root: Path, harness: str, n: int = 0, turns: int = 2, cwd: str | None = None) -> Path:
    """Write one valid session of ``harness`` under ``root``; return its path."""
    sid = sid_for(harness, n)
    return write(path_for(root, harness, sid), lines_for(harness, sid, cwd, turns))


# -- running the CLI -------------------------------------------------------------------------


def cli_env(**extra: str) -> dict[str, str]:
    """The environment for a ``rematch`` subprocess: the three plugins, no user folders."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "PYTEST_"))}
    env["REMATCH_LOAD_PLUGINS"] = PLUGINS_ENV
    env.update(extra)
    return env


def import_cmd(out: Path, *paths: Path, jobs: int = 1) -> list[str]:
    """The argv of ``rematch import --json`` into ``out``."""
    return [sys.executable, "-m", "rematch_trace.cli", "import", *map(str, paths), "--out", str(out),
            "--json", "-j", str(jobs)]


def run_import(out: Path, *paths: Path, jobs: int = 1, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``rematch import`` to completion; text output."""
    return subprocess.run(import_cmd(out, *paths, jobs=jobs), capture_output=True, text=True, timeout=timeout,
                          env=cli_env(**env), errors="replace")


def report(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The JSON report a ``--json`` run printed."""
    value: dict[str, Any] = orjson.loads(proc.stdout)
    return value


def assert_clean_stderr(proc: subprocess.CompletedProcess[str]) -> None:
    """No traceback, and every line is a one-line ``rematch:`` / ``Error:`` message."""
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    for line in proc.stderr.splitlines():
        assert line.startswith(("rematch: ", "Error: ")), f"unexpected stderr line: {line!r}"


def traces(out: Path) -> dict[str, bytes]:
    """Trace file name -> bytes, for every trace in a data folder."""
    d = out / "traces"
    return {p.name: p.read_bytes() for p in sorted(d.glob("*.jsonl"))} if d.is_dir() else {}


def trace_records(data: bytes) -> list[dict[str, Any]]:
    """The parsed lines of a trace file."""
    return [orjson.loads(x) for x in data.splitlines() if x.strip()]


def tree_snapshot(root: Path, exclude: Path | None = None) -> dict[str, tuple[int, int]]:
    """Path -> (size, mtime_ns) of every entry under ``root`` outside ``exclude``, links not followed."""
    snap: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        d = Path(dirpath)
        if exclude is not None and (d == exclude or exclude in d.parents):
            dirnames[:] = []
            continue
        for name in filenames + dirnames:
            p = d / name
            if exclude is not None and p == exclude:
                continue
            st = os.lstat(p)
            snap[str(p)] = (st.st_size if not p.is_dir() or p.is_symlink() else 0, st.st_mtime_ns)
    return snap


def iter_jsonl_files(folder: Path) -> Iterator[Path]:
    """Every ``*.jsonl`` under ``folder``."""
    yield from sorted(folder.rglob("*.jsonl"))
