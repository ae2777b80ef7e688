"""The ledger's rows, typed: what a source file and each of its sessions record."""

from __future__ import annotations

import attrs


@attrs.frozen(slots=True)
class SessionRow:
    """One session a source produced: where its outputs are, its flags, its place."""

    session_id: str
    agent_kind: str
    trace_path: str
    events_path: str | None
    flagged: bool
    reasons: list[str]
    #: Flag reason -> the trace seqs behind it.
    seqs: dict[str, list[int]]
    counts: dict[str, int]
    cwd: str
    repo: str | None
    repo_remote: str | None
    domain: str | None
    #: The session that started this one (a subagent's, sidechain's or compaction run's main
    #: session), as the transcript names it; ``None`` for a main session or when not known.
    parent: str | None = None
    #: The stored summary (the ledger's ``summary`` column: its basis and the summary, as JSON) when the
    #: import made it as it wrote the trace; ``None``: made later, from the trace (report/stored.py).
    summary: str | None = None


@attrs.frozen(slots=True)
class SourceRow:
    """One source file: what was read of it, how it ended, and the state to continue from."""

    path: str
    harness: str | None
    size: int
    mtime_ns: int
    outcome: str
    head_fp: str | None = None
    tail_fp: str | None = None
    offset: int = 0
    reason: str | None = None
    malformed: int = 0
    problems: int = 0
    saved: bytes | None = None
