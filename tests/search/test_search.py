"""``rematch search``: planted phrases found in every harness's corpus sessions, planted secrets never,
the index following import incrementally, ``forget`` and ``--rebuild``; all through the real CLI."""

from __future__ import annotations

import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "security"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hostile"))

from hostile_gen import cli_env
from test_security_planted import PLANTED, claude_code_file, codex_file, omp_file

#: One small corpus file per harness (paths under the shared corpus).
CORPUS_FILES = {
    "claude_code": "claude_code/projects/-Users-USER-spotter/55604662-cf2a-4331-851a-ec234028f8ca.jsonl",
    "codex": "codex/sessions/2025/12/09/rollout-2025-12-09T19-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl",
    "omp": "omp/sessions/--home-dev-acme-api--/2026-08-21T14-02-10-500Z_0198cc2a-13f0-7a6b-9c44-e07d5b31a9f2.jsonl",
}


def rematch(*args: str) -> subprocess.CompletedProcess[str]:
    """``rematch`` as a user runs it, with the three plugins."""
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True, text=True,
                          env=cli_env(), timeout=120, errors="replace")


def search(data: Path, *args: str) -> list[dict[str, Any]]:
    """The hits of ``rematch search --json``."""
    res = rematch("search", "--data", str(data), "--json", "--limit", "1000", *args)
    assert res.returncode in (0, 1), res.stderr
    hits = orjson.loads(res.stdout)
    assert isinstance(hits, list)
    assert (res.returncode == 1) == (not hits), "no hit exits 1, --json too"
    return hits


def imported(src: Path, data: Path, *extra: str) -> None:
    """Import ``src`` into ``data``, which must succeed."""
    res = rematch("import", str(src), "--data", str(data), "-q", *extra)
    assert res.returncode == 0, res.stdout + res.stderr


def corpus_copy(corpus_dir: Path, src: Path) -> Path:
    """The three :data:`CORPUS_FILES` copied under ``src``, laid out as in the corpus; ``src``."""
    for rel in CORPUS_FILES.values():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(corpus_dir / rel, src / rel)
    return src


def first_prompt_word(data: Path) -> str:
    """The longest word (5+ letters) of the first prompt of the one trace in ``data``."""
    trace = next((data / "traces").glob("*.jsonl"))
    for line in trace.read_bytes().splitlines():
        rec = orjson.loads(line)
        if rec.get("ev") == "input":
            words = re.findall(r"[A-Za-z]{5,}", rec["text"])
            if words:
                return max(words, key=len)
    raise AssertionError(f"no prompt with a long word in {trace}")


@pytest.mark.parametrize("harness", sorted(CORPUS_FILES))
def test_search_finds_a_planted_phrase_in_each_harness_corpus_session(
        harness: str, corpus_dir: Path, tmp_path: Path) -> None:
    source = corpus_dir / CORPUS_FILES[harness]
    probe = tmp_path / "probe"
    imported(source, probe)
    word = first_prompt_word(probe)
    raw = source.read_bytes()
    assert f'"{word}"'.encode() not in raw  # a word of the text, not a JSON key
    planted = f"zebraquokka{harness.replace('_', '')}"
    copy = tmp_path / "src" / source.relative_to(corpus_dir)
    copy.parent.mkdir(parents=True)
    copy.write_bytes(re.sub(rb"\b" + word.encode() + rb"\b", planted.encode(), raw))
    data = tmp_path / "data"
    imported(tmp_path / "src", data)
    hits = search(data, planted)
    assert hits, f"{planted} not found"
    assert {h["harness"] for h in hits} == {harness}
    assert all(h["kind"] in ("prompt", "assistant", "tool", "blocked", "mark") for h in hits)
    assert any(h["kind"] == "prompt" and "«" + planted + "»" in h["snippet"] for h in hits)
    # The filters: another harness, a day after the session, no match.
    other = "codex" if harness != "codex" else "claude_code"
    assert search(data, planted, "--harness", other) == []
    assert rematch("search", "--data", str(data), planted, "--harness", "none_such").returncode == 2  # a typo
    assert search(data, planted, "--since", "2999-01-01") == []
    assert search(data, planted, "--since", "2000-01-01")
    # The text output names the session and shows the snippet.
    res = rematch("search", "--data", str(data), planted)
    assert res.returncode == 0 and planted in res.stdout and "hit(s)" in res.stdout


@pytest.mark.parametrize("redact", [True, False], ids=["redacted-import", "no-redact-import"])
def test_search_never_finds_a_planted_secret(redact: bool, tmp_path: Path) -> None:
    for make in (claude_code_file, codex_file, omp_file):
        sub = tmp_path / make.__name__
        sub.mkdir()
        make(sub)
    data = tmp_path / "data"
    imported(tmp_path, data, *(() if redact else ("--no-redact",)))
    # Text around the secrets is indexed: the search works on these sessions.
    assert {h["harness"] for h in search(data, "please use these")} == {"claude_code", "codex", "omp"}
    # The tool outputs around the secrets are indexed too (from the source transcripts, redacted).
    outputs = [h for h in search(data, "result") if h["kind"] == "output"]
    assert {h["harness"] for h in outputs} == {"claude_code", "codex", "omp"}
    for secret in PLANTED:
        assert search(data, f'"{secret}"') == [], secret
    # Nor is any secret anywhere in the index's bytes (its text, its FTS tables, its journal).
    for f in data.glob("search.sqlite*"):
        blob = f.read_bytes()
        for secret in PLANTED:
            assert secret.encode() not in blob, (f.name, secret)


def _grow_claude(path: Path, phrase: str) -> None:
    """Append one more prompt (saying ``phrase``) and an answer to a Claude Code transcript."""
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    base = {k: last[k] for k in ("sessionId", "cwd", "version") if k in last}
    lines = [
        {**base, "type": "user", "uuid": "grow-1", "parentUuid": last.get("uuid"), "isSidechain": False,
         "userType": "external", "timestamp": "2026-02-12T10:00:00.000Z",
         "message": {"role": "user", "content": f"now please {phrase} the thing"}},
        {**base, "type": "assistant", "uuid": "grow-2", "parentUuid": "grow-1", "isSidechain": False,
         "userType": "external", "timestamp": "2026-02-12T10:00:05.000Z", "requestId": "req-grow",
         "message": {"id": "msg-grow", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
                     "usage": {"input_tokens": 3, "output_tokens": 2}}},
    ]
    with open(path, "ab") as f:
        for x in lines:
            f.write(orjson.dumps(x) + b"\n")


def test_a_grown_trace_indexes_only_its_new_records_and_forget_drops_them(corpus_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src" / "p"
    src.mkdir(parents=True)
    copy = src / Path(CORPUS_FILES["claude_code"]).name
    shutil.copyfile(corpus_dir / CORPUS_FILES["claude_code"], copy)
    data = tmp_path / "data"
    imported(tmp_path / "src", data)
    index = data / "search.sqlite"

    def spans() -> list[tuple[int, int]]:
        with sqlite3.connect(index) as db:
            return [(r[0], r[1]) for r in db.execute("SELECT id, off FROM spans ORDER BY off")]

    before = spans()
    assert before and search(data, "flibbertigibbet") == []
    _grow_claude(copy, "flibbertigibbet")
    imported(tmp_path / "src", data)
    after = spans()
    hits = search(data, "flibbertigibbet")
    assert [h["kind"] for h in hits] == ["prompt"]
    # The records indexed before are the same rows (not read again); the new ones come after them.
    kept = [s for s in after if s[0] <= max(i for i, _ in before)]
    assert len(kept) >= len(before) - 3  # at most the rewritten tail (final records) is read again
    assert set(kept) <= set(before)
    assert len(after) > len(kept)
    # No record twice: each seq has one row.
    seqs = [h["seq"] for h in search(data, "flibbertigibbet")]
    assert len(seqs) == len(set(seqs))
    # rematch forget drops the session's entries at once.
    sid = copy.stem
    res = rematch("forget", sid, "--data", str(data))
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(index) as db:
        assert db.execute("SELECT count(*) FROM spans").fetchone()[0] == 0
        assert db.execute("SELECT count(*) FROM text").fetchone()[0] == 0


def test_rebuild_and_a_deleted_index_come_back_whole(corpus_dir: Path, tmp_path: Path) -> None:
    src = corpus_copy(corpus_dir, tmp_path / "src")
    data = tmp_path / "data"
    imported(src, data)
    first = search(data, "the")
    assert first
    res = rematch("search", "--data", str(data), "--rebuild")
    assert res.returncode == 0 and "index rebuilt" in res.stdout
    assert search(data, "the") == first
    for f in data.glob("search.sqlite*"):
        f.unlink()
    assert search(data, "the") == first  # made again by the search itself
    # A query FTS5 would take as syntax is text here.
    assert isinstance(search(data, 'AND OR NOT ( "'), list)
