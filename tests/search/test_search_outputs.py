"""Tool outputs and the assistant's text in ``rematch search``: read from each source transcript through its
plugin, found in each harness's corpus sessions, and a grown source read on from where the index stopped."""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path

import orjson
import pytest
from test_search import CORPUS_FILES, _grow_claude, imported, rematch, search


def _output_word(data: Path, sid: str, trace: bytes) -> tuple[str, int]:
    """A word (7+ letters) of a call's output that the trace does not hold, and that call's seq."""
    res = rematch("show", sid, "--data", str(data), "--format", "json")
    assert res.returncode == 0, res.stderr
    for e in orjson.loads(res.stdout)["entries"]:
        if e["kind"] == "call" and e["output"]:
            for word in re.findall(r"\b[A-Za-z]{7,}\b", e["output"]):
                if word.encode() not in trace:
                    return word, e["seq"]
    raise AssertionError("no output word that the trace lacks")


@pytest.mark.parametrize("harness", sorted(CORPUS_FILES))
def test_a_planted_word_of_a_tool_output_is_found_in_each_harness_corpus_session(
        harness: str, corpus_dir: Path, tmp_path: Path) -> None:
    rel = CORPUS_FILES[harness]
    src = tmp_path / "src"
    copy = src / rel
    copy.parent.mkdir(parents=True)
    shutil.copyfile(corpus_dir / rel, copy)
    first = tmp_path / "first"
    imported(src, first)
    [trace] = (first / "traces").glob("*.jsonl")
    word, seq = _output_word(first, trace.name[:-6], trace.read_bytes())
    planted = f"quokkaoutput{harness.replace('_', '')}"
    copy.write_bytes(re.sub(rb"\b" + word.encode() + rb"\b", planted.encode(), copy.read_bytes()))
    data = tmp_path / "data"
    imported(src, data)
    hits = search(data, planted)
    outputs = [h for h in hits if h["kind"] == "output"]
    assert outputs and all("«" + planted + "»" in h["snippet"] for h in outputs)
    assert seq in {h["seq"] for h in outputs}  # the hit names the call's seq in the trace
    assert {h["harness"] for h in hits} == {harness}


def test_a_grown_source_indexes_only_its_new_records(corpus_dir: Path, tmp_path: Path) -> None:
    src = tmp_path / "src" / "p"
    src.mkdir(parents=True)
    copy = src / Path(CORPUS_FILES["claude_code"]).name
    shutil.copyfile(corpus_dir / CORPUS_FILES["claude_code"], copy)
    data = tmp_path / "data"
    imported(tmp_path / "src", data)
    index = data / "search.sqlite"

    def source_rows() -> list[int]:
        with sqlite3.connect(index) as db:
            return [r[0] for r in db.execute("SELECT id FROM spans WHERE src IS NOT NULL ORDER BY id")]

    before = source_rows()
    assert before
    _grow_claude(copy, "flibbertigibbet")  # a prompt and the answer "done"
    with open(copy, "ab") as f:  # and an answer of the assistant's saying a new word
        last = orjson.loads(copy.read_bytes().splitlines()[-1])
        line = {**last, "uuid": "grow-3", "parentUuid": "grow-2", "timestamp": "2026-02-12T10:00:06.000Z",
                "message": {**last["message"], "id": "msg-grow-2",
                            "content": [{"type": "text", "text": "the snollygoster is fixed"}]}}
        f.write(orjson.dumps(line) + b"\n")
    imported(tmp_path / "src", data)
    after = source_rows()
    # The rows indexed before are kept as they were (the source was not read again), new ones follow.
    assert after[:len(before)] == before and len(after) > len(before)
    [hit] = search(data, "snollygoster")
    assert hit["kind"] == "assistant"
    # Forgotten, then imported again (the same file, the same stamp): its source is read again.
    [trace] = (data / "traces").glob("*.jsonl")
    word, _ = _output_word(data, copy.stem, trace.read_bytes())
    assert "output" in {h["kind"] for h in search(data, word)}
    res = rematch("forget", copy.stem, "--data", str(data))
    assert res.returncode == 0, res.stderr
    assert search(data, word) == []
    imported(tmp_path / "src", data)
    assert "output" in {h["kind"] for h in search(data, word)}
