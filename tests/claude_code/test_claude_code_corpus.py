"""Every Claude Code file of the shared corpus imports, and its traces reconcile with the source.

The expected counts are computed here straight from the raw JSON lines, with
none of the plugin's code: a deliberately plain reading of the format.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cc_fixtures import synthesize

from rematch_trace.testing import validate_trace

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
CC = CORPUS / "claude_code"


def _files() -> list[Path]:
    if not CC.is_dir():
        return []
    skip = {"memory", "tool-results"}
    return sorted(p for p in CC.rglob("*.jsonl") if not skip & set(p.relative_to(CC).parts))


@pytest.fixture(autouse=True)
def _corpus_present() -> None:
    if not CC.is_dir():
        if os.environ.get("REMATCH_REQUIRE_CORPUS") == "1":
            pytest.fail(f"REMATCH_REQUIRE_CORPUS=1 but {CC} is missing")
        pytest.skip("shared corpus not present")


def _texts(content: Any) -> tuple[str, bool]:
    """(the text of a user line, whether it carries tool results)."""
    if isinstance(content, str):
        return content, False
    parts, results = [], False
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict):
            if block.get("type") == "tool_result":
                results = True
            elif block.get("type") == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "\n".join(parts), results


_MARK = re.compile(r"<command-name>/(?:rematch:)?rematch-mark</command-name>")


def expected_counts(path: Path, main_only: bool = False) -> dict[str, int]:
    """The counts the source implies, read line by line with json.

    :param main_only: count the main session's lines alone (not its inline subagents').
    """
    lines = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            try:
                value = json.loads(raw)
            except ValueError:
                continue
            if isinstance(value, dict):
                lines.append(value)
    own = path.stem
    if path.stem.startswith("agent-"):
        own = next(v["sessionId"] for v in lines if isinstance(v.get("sessionId"), str))
    c: Counter[str] = Counter(sessions=1)
    message_ids: set[str] = set()
    pending_interrupt = False
    command = False  # a slash command waits to show whether it starts a model run
    for v in lines:
        if v.get("sessionId", own) != own:
            continue  # a copy of another session's line
        if main_only and v.get("isSidechain") is True:
            continue
        typ = v.get("type")
        if (
            typ == "user"
            and v.get("isSidechain") is True
            and v.get("parentUuid") is None
            and own == path.stem
        ):
            c["sessions"] += 1  # an inline subagent chain starts
        if typ == "assistant":
            message_ids.add(v["message"]["id"])
            pending_interrupt = False
            c["inputs"] += command  # the model ran on the command: it was the request
            command = False
        if typ != "user":
            continue
        content = v["message"]["content"]
        text, has_results = _texts(content)
        if command and v.get("isMeta") and text.strip() and not text.lstrip().startswith(("<", "Caveat:")):
            c["inputs"] += 1  # its expansion follows: a prompt command or skill
        command = text.lstrip().startswith(("<command-name>", "<command-message>")) and not v.get("isMeta")
        if has_results:
            for block in content:
                if block.get("type") == "tool_result":
                    c["tool_results"] += 1
                    detail = v.get("toolUseResult")
                    interrupted = isinstance(detail, dict) and detail.get("interrupted") is True
                    c["tool_errors"] += block.get("is_error") is True or interrupted
                    c["rejected"] += detail == "User rejected tool use"
            continue
        if v.get("isMeta") or v.get("isCompactSummary"):
            continue
        s = text.strip()
        if s.startswith("[Request interrupted by user"):
            c["aborts"] += 1
            pending_interrupt = True
        elif _MARK.search(s) or (s and not s.startswith(("<", "Caveat:"))):
            c["inputs"] += 1
            c["interrupts"] += pending_interrupt and not _MARK.search(s)
            pending_interrupt = False
    c["turns"] = len(message_ids)
    for key in ("inputs", "tool_results", "tool_errors", "rejected", "aborts", "interrupts"):
        c.setdefault(key, 0)
    return dict(c)


def trace_counts(path: Path, main_only: bool = False) -> dict[str, int]:
    """The same counts, read from the traces the import wrote."""
    sessions = synthesize(path)
    if main_only:
        sessions = [s for s in sessions if s.session_id == path.stem]
    c: Counter[str] = Counter(sessions=len(sessions))
    for s in sessions:
        assert validate_trace(s.records) == [], s.session_id
        assert s.problems == []
        for r in s.records:
            ev = r["ev"]
            if ev == "input":
                c["inputs"] += 1
                c["interrupts"] += r["prelabel"] == "interrupt"
            elif ev == "turn_end":
                c["turns"] += 1
            elif ev == "tool_result":
                c["tool_results"] += 1
                c["tool_errors"] += r["is_error"]
                c["rejected"] += r["error_class"] == "rejected"
    for key in ("inputs", "tool_results", "tool_errors", "rejected", "interrupts", "turns"):
        c.setdefault(key, 0)
    return dict(c)


@pytest.mark.parametrize("path", _files(), ids=lambda p: str(p.relative_to(CC)))
def test_corpus_file_reconciles(path: Path) -> None:
    expected = expected_counts(path)
    got = trace_counts(path)
    aborts = expected.pop("aborts")
    assert got == expected
    assert aborts == _plugin_aborts(path)


@pytest.mark.parametrize(
    "path", [p for p in _files() if not p.stem.startswith("agent-")], ids=lambda p: str(p.relative_to(CC))
)
def test_corpus_main_session_holds_none_of_its_subagents_lines(path: Path) -> None:
    expected = expected_counts(path, main_only=True)
    expected.pop("aborts")
    expected["sessions"] = 1
    assert trace_counts(path, main_only=True) == expected


def _plugin_aborts(path: Path) -> int:
    from cc_fixtures import translate

    from rematch_trace.host.vocab import Abort

    return sum(isinstance(r, Abort) for r in translate(path))


def test_corpus_has_every_layout() -> None:
    files = _files()
    assert any(p.parent.name == "subagents" for p in files)
    assert any(p.name.startswith("agent-") and p.parent.name != "subagents" for p in files)
    assert sum(expected_counts(p)["sessions"] for p in files) > len(files)  # inline sidechains too


def test_subagent_sessions_are_named_for_their_parent() -> None:
    for path in _files():
        if not path.stem.startswith("agent-"):
            continue
        [s] = synthesize(path)
        assert s.agent_kind == "sub"
        assert s.session_id.endswith(f".agent-{path.stem[len('agent-') :]}")
        parent = s.session_id.split(".agent-")[0]
        assert (path.parent / f"{parent}.jsonl").exists() or path.parent.parent.name == parent
