"""Settling live sessions from outside a hook: what a killed writer or a vanished session left.

The reading commands call :func:`settle_live` first (as they settle the import
journal). For each live session whose lock is free:

* outputs longer than the committed length lose the bytes past it (a writer
  killed between appending and saving its state);
* an ended session whose pending file and ledger row were not written yet gets
  them;
* a session with no event for :data:`STALE_MS` (its harness was killed, or
  its ``SessionEnd`` hook never ran) is ended as ``SessionEnd`` would end it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rematch_trace.host.facade import Host
from rematch_trace.live.folder import live_dir, lock_path, log_error
from rematch_trace.live.session_writer import (
    LockTimeout,
    SessionLock,
    SessionWriter,
    read_state,
    session_of_state,
)
from rematch_trace.store.datafolder import DataDir


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _overlong(data: DataDir, session_id: str, state: dict[str, Any]) -> bool:
    """Whether an output holds bytes past its committed length (a writer died mid-append)."""
    lens = state.get("ended") or state
    return (_size(data.trace_path(session_id)) > int(lens.get("trace_len", 0))
            or _size(data.events_path(session_id)) > int(lens.get("events_len", 0)))


#: A session silent this long is over (a day: longer than any pause in a live session).
STALE_MS = 24 * 3600 * 1000


def settle_live(data: DataDir, host: Host | None = None, *, now_ms: int | None = None, stale_ms: int = STALE_MS) -> int:
    """Settle every live session of ``data`` that needs it; return how many were touched."""
    folder = live_dir(data.root)
    if not folder.is_dir():
        return 0
    now = int(time.time() * 1000) if now_ms is None else now_ms
    n = 0
    for path in sorted(folder.glob("*.json")):
        state = read_state(path)
        if state is None or "session" not in state:
            continue
        ended = state.get("ended")
        stale = ended is None and now - int(state.get("last_ms") or now) >= stale_ms
        needs_record = ended is not None and not state.get("recorded")
        session = session_of_state(state["session"])
        if not (stale or needs_record or _overlong(data, session.session_id, state)):
            continue
        try:
            with SessionLock(lock_path(data, session.session_id), seconds=0):
                if host is None:
                    from rematch_trace.live.capture import default_host

                    host = default_host()
                writer = SessionWriter.load(host, data, str(state.get("harness") or ""), session, "")
                if stale:
                    writer.end(now)
                elif needs_record:
                    writer.record(host.place(session.cwd or ""))
                    writer.st["recorded"] = True
                    writer.save()
                else:
                    writer.trace.close()
                    writer.events.close()
                    continue
                n += 1
        except LockTimeout:
            continue  # a writer is at work: it settles the session itself
        except Exception as err:  # one broken session must not stop the others, nor the command
            log_error(data.root, "settle", f"{path.name}: {type(err).__name__}: {err}")
    return n
