"""The ledger's saved states hold no host input: a planted secret never reaches ``sources.saved``.

A transcript cut at every line (a response still open, a command held, a result
waiting for its response) is imported by the ``rematch`` CLI; each saved state
is read from ``ledger.sqlite`` and searched for every planted secret. The file
then grows to its end and the continued import must write exactly what a cold
import of the whole file writes.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import orjson
from test_security_planted import PLANTED, TEXTS, claude_code_file

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


def _leaks(blob: bytes) -> list[str]:
    return [s for s in PLANTED if s.encode() in blob or orjson.dumps(s)[1:-1] in blob]


def _saved(data: Path) -> list[bytes]:
    con = sqlite3.connect(data / "ledger.sqlite")
    try:
        return [bytes(row[0]) for row in con.execute("select saved from sources") if row[0]]
    finally:
        con.close()


def _outputs(data: Path) -> dict[str, bytes]:
    return {str(p.relative_to(data)): p.read_bytes() for d in ("traces", "events") for p in sorted((data / d).rglob("*"))
            if p.is_file()}


def _import(data: Path, path: Path) -> None:
    subprocess.run([REMATCH, "import", "--out", str(data), str(path)], check=True, capture_output=True)


def test_no_planted_secret_in_any_saved_state(tmp_path: Path) -> None:
    path = claude_code_file(tmp_path)
    _with_text_and_command(path)
    whole = path.read_bytes()
    sid = path.stem.encode()
    cuts = range(2, whole.count(b"\n") + 1)
    # One session per cut point (its own id), so that one import reads them all.
    grown: dict[Path, bytes] = {}
    for n in cuts:
        own = sid[:-4] + b"%04d" % n
        body = whole.replace(sid, own)
        copy = tmp_path / "cuts" / f"cut{n}" / (own.decode() + ".jsonl")
        copy.parent.mkdir(parents=True)
        copy.write_bytes(b"".join(body.splitlines(keepends=True)[:n]))
        grown[copy] = body
    data, cold = tmp_path / "data", tmp_path / "cold"
    _import(data, tmp_path / "cuts")
    states = _saved(data)
    assert len(states) == len(grown)
    for blob in states:
        assert not _leaks(blob), f"a saved state holds {_leaks(blob)}"
    # Each file grows to its end: the continuation writes what a cold import of the whole file writes.
    for copy, body in grown.items():
        copy.write_bytes(body)
    _import(data, tmp_path / "cuts")
    _import(cold, tmp_path / "cuts")
    assert _outputs(data) == _outputs(cold)
    assert all(not _leaks(blob) for blob in _saved(data))
