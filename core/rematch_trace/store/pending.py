"""``pending/<session_id>.json``: the flag file of a session worth reflecting on."""

from __future__ import annotations

from pathlib import Path

import orjson

from rematch_trace.store.datafolder import DataDir, write_atomic


def _read_small(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(1 << 20)
    except OSError:
        return None


def write_pending(
    data: DataDir,
    session_id: str,
    agent: str,
    reasons: list[str],
    seqs: dict[str, list[int]],
    trace: Path,
    fsync: bool = False,
) -> None:
    """Write the session's pending file when it has flag reasons, else remove it."""
    pending = data.pending_path(session_id)
    if not reasons:
        try:
            pending.unlink()
        except FileNotFoundError:
            pass
        return
    body = {"session_id": session_id, "agent": agent, "reasons": reasons, "seqs": seqs, "trace": f"traces/{trace.name}"}
    text = orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n"
    if _read_small(pending) != text:  # a continued session's flags seldom change
        write_atomic(pending, text, fsync)
