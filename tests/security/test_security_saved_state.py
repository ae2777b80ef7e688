"""The ledger's saved states hold no host input: a planted secret never reaches ``ledger.sqlite``.

A transcript of each harness (Claude Code, Codex, omp) cut at every line (a
response still open, a command held, a result waiting for its response or for
its outcome event) is imported by the ``rematch`` CLI; every column of every
table of ``ledger.sqlite`` (``sources.saved`` above all) is searched for every
planted secret. The file then grows to its end and the continued import must
write exactly what a cold import of the whole file writes.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from test_security_planted import PLANTED, TEXTS, claude_code_file, codex_file, omp_file

REMATCH = str(Path(sys.executable).with_name("rematch"))


def _with_text_and_command(path: Path) -> None:
    """Add an assistant text and a slash command holding the secrets to the planted session."""
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    base = lines[1]
    text = {**base, "uuid": "ut", "requestId": "rt", "message": {
        **base["message"], "id": "mt", "content": [{"type": "text", "text": "noted:\n" + "\n".join(TEXTS)}],
        "stop_reason": "end_turn"}}
    cmd = {**lines[0], "uuid": "uc", "message": {"role": "user", "content": (
        "<command-name>/deploy</command-name>\n<command-args>" + " ".join(TEXTS[::3]) + "</command-args>")}}
    # The text opens a response before the first call's (same id as the call: one response).
    text["message"]["id"] = base["message"]["id"]
    done = {**text, "uuid": "ud", "requestId": "rd", "message": {**text["message"], "id": "md",
                                                              "content": [{"type": "text", "text": "deployed"}]}}
    out = [lines[0], text, *lines[1:], cmd, done]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in out))


def _with_open_responses(path: Path) -> None:
    """Add to the planted rollout what a Codex state holds between lines.

    An assistant text holding the secrets, a reasoning item, an outcome event
    after an output (the result held for it), token counts, a web search holding
    a secret (its result known at once), a ``skills.read`` call and a closing
    message and turn end.
    """
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    ts = [x["timestamp"] for x in lines]

    def env(i: int, kind: str, payload: dict[str, object]) -> dict[str, object]:
        return {"timestamp": ts[min(i, len(ts) - 1)], "type": kind, "payload": payload}

    def tokens(n: int) -> dict[str, object]:
        total = {"input_tokens": 10 * n, "cached_input_tokens": 0, "output_tokens": n, "total_tokens": 11 * n}
        return {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": total}}

    out = [*lines[:4],
           env(4, "response_item", {"type": "reasoning", "summary": []}),
           env(4, "response_item", {"type": "message", "role": "assistant",
                                    "content": [{"type": "output_text", "text": "noted:\n" + "\n".join(TEXTS)}]}),
           lines[4], lines[5],
           env(5, "event_msg", {"type": "exec_command_end", "call_id": "c1", "exit_code": 3,
                                "aggregated_output": "\n".join(TEXTS)}),
           env(5, "event_msg", tokens(1)),
           *lines[6:],
           env(20, "response_item", {"type": "web_search_call", "status": "completed",
                                     "action": {"type": "search", "query": TEXTS[5]}}),
           env(20, "response_item", {"type": "function_call", "namespace": "skills", "name": "read",
                                     "arguments": orjson.dumps({"package": "deploy-kit"}).decode(), "call_id": "c5"}),
           env(20, "event_msg", tokens(2)),
           env(20, "response_item", {"type": "function_call_output", "call_id": "c5", "output": "\n".join(TEXTS)}),
           env(20, "response_item", {"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": "done " + TEXTS[0]}]}),
           env(20, "event_msg", tokens(3)),
           env(20, "event_msg", {"type": "task_complete"})]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in out))


def _claude_code(tmp: Path) -> tuple[Path, str]:
    path = claude_code_file(tmp)
    _with_text_and_command(path)
    return path, "11111111-2222-3333-4444-555555555555"


def _codex(tmp: Path) -> tuple[Path, str]:
    path = codex_file(tmp)
    _with_open_responses(path)
    return path, "019a0000-0000-7000-8000-000000000001"


def _omp(tmp: Path) -> tuple[Path, str]:
    return omp_file(tmp), "0198cc2a-0000-7000-8000-000000000001"


HARNESSES = {"claude_code": _claude_code, "codex": _codex, "omp": _omp}


def _leaks(blob: bytes) -> list[str]:
    return [s for s in PLANTED if s.encode() in blob or orjson.dumps(s)[1:-1] in blob]


def _saved(data: Path) -> list[bytes]:
    con = sqlite3.connect(data / "ledger.sqlite")
    try:
        return [bytes(row[0]) for row in con.execute("select saved from sources") if row[0]]
    finally:
        con.close()


def _ledger_leaks(data: Path) -> list[str]:
    """Each (table, secret) where a planted secret is in a column of the ledger."""
    con = sqlite3.connect(data / "ledger.sqlite")
    try:
        found = []
        tables = [r[0] for r in con.execute("select name from sqlite_master where type = 'table'")]
        for table in tables:
            for row in con.execute(f'select * from "{table}"'):
                for value in row:
                    body = value if isinstance(value, bytes) else str(value).encode()
                    found += [f"{table}: {s}" for s in _leaks(body)]
        return found
    finally:
        con.close()


def _outputs(data: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data)): p.read_bytes() for d in ("traces", "events") for p in sorted((data / d).rglob("*"))
            if p.is_file()}


def _import(data: Path, path: Path) -> None:
    subprocess.run([REMATCH, "import", "--out", str(data), str(path)], check=True, capture_output=True)


@pytest.mark.parametrize("harness", sorted(HARNESSES))
def test_no_planted_secret_in_any_saved_state(tmp_path: Path, harness: str) -> None:
    path, session = HARNESSES[harness](tmp_path)
    whole = path.read_bytes()
    sid = session.encode()
    cuts = range(2, whole.count(b"\n") + 1)
    # One session per cut point (its own id), so that one import reads them all.
    grown: dict[Path, bytes] = {}
    for n in cuts:
        own = sid[:-4] + b"%04d" % n
        body = whole.replace(sid, own)
        copy = tmp_path / "cuts" / f"cut{n}" / path.name.replace(session, own.decode())
        copy.parent.mkdir(parents=True)
        copy.write_bytes(b"".join(body.splitlines(keepends=True)[:n]))
        grown[copy] = body
    data, cold = tmp_path / "data", tmp_path / "cold"
    _import(data, tmp_path / "cuts")
    states = _saved(data)
    assert len(states) == len(grown)
    leaking = [blob for blob in states if _leaks(blob)]
    assert not leaking, f"{len(leaking)} of {len(states)} saved states hold {sorted({s for b in leaking for s in _leaks(b)})}"
    assert _ledger_leaks(data) == []
    # Each file grows to its end: the continuation writes what a cold import of the whole file writes.
    for copy, body in grown.items():
        copy.write_bytes(body)
    _import(data, tmp_path / "cuts")
    _import(cold, tmp_path / "cuts")
    continued, fresh = _outputs(data), _outputs(cold)
    assert len(continued) >= 2 * len(grown)  # a trace and an event stream per session
    assert continued == fresh
    assert _ledger_leaks(data) == []


def test_an_older_codex_state_is_read_whole_once(tmp_path: Path) -> None:
    """A state saved before the Codex state version 2 (no ``v``) is not continued: the file is read whole."""
    path, _ = _codex(tmp_path)
    whole = path.read_bytes()
    path.write_bytes(b"".join(whole.splitlines(keepends=True)[:7]))  # a response open: a text, a call
    data, cold = tmp_path / "data", tmp_path / "cold"
    _import(data, path)
    con = sqlite3.connect(data / "ledger.sqlite")
    try:
        (blob,) = con.execute("select saved from sources").fetchone()
        saved = orjson.loads(blob)
        assert saved["plugin"].pop("v") == 2
        with con:
            con.execute("update sources set saved = ?", (orjson.dumps(saved),))
    finally:
        con.close()
    path.write_bytes(whole)
    _import(data, path)
    _import(cold, path)
    assert _outputs(data) == _outputs(cold)
    (state,) = [orjson.loads(blob) for blob in _saved(data)]
    assert state["plugin"]["v"] == 2
