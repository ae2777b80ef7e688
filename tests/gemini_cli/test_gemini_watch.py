"""``rematch watch`` following Gemini CLI's default folder, with no Gemini code in the core.

A real watcher (``REMATCH_LOAD_PLUGINS=gemini_cli``, ``HOME`` a temporary one) sees a log
appended line by line and an older version's document rewritten whole (by rename, and in
place), while a ``logs.json`` beside them changes too: the watcher's traces, events and ledger
end as a batch import of the final files has them, and the ``.json`` no plugin claims is never
reported.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "watch"))

from watch_helpers import Home, Watch, append, assert_same_as_batch, ledger_rows

FIXTURES = Path(__file__).parent / "fixtures"
LOG = FIXTURES / "session-2026-12-01T18-35-c0445b57.jsonl"
DOC = FIXTURES / "session-2025-06-30T10-02-5f0c2a7e.json"


class GeminiHome(Home):
    """The temporary home, its rematch runs loading the Gemini CLI plugin alone."""

    def env(self, **extra: str) -> dict[str, str]:
        """The home's environment, ``REMATCH_LOAD_PLUGINS=gemini_cli``."""
        return super().env(**{"REMATCH_LOAD_PLUGINS": "gemini_cli", **extra})


def _recorded(out: Path, path: Path) -> bool:
    """Whether the ledger holds ``path`` imported at its current size and mtime."""
    st = path.stat()
    rows = ledger_rows(out, "SELECT size, mtime_ns, outcome FROM sources WHERE path = ?", (str(path),))
    return bool(rows) and rows[0][2] in ("imported", "resumed") and rows[0][:2] == (st.st_size, st.st_mtime_ns)


def _wait(out: Path, paths: list[Path], watch: Watch, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not all(_recorded(out, p) for p in paths):
        assert watch.proc.poll() is None, watch.stderr
        assert time.monotonic() < deadline, (ledger_rows(out, "SELECT path, size, mtime_ns, outcome FROM sources"),
                                             watch.stderr)
        time.sleep(0.02)


def test_watch_follows_a_log_and_a_rewritten_document(tmp_path: Path) -> None:
    """Appends, a rename over the document and an in-place rewrite: the watcher ends as a batch import."""
    home = GeminiHome(tmp_path)
    chats = home.home / ".gemini" / "tmp" / "demo" / "chats"
    chats.mkdir(parents=True)
    log, doc_path, noise = chats / LOG.name, chats / DOC.name, chats.parent / "logs.json"
    lines = LOG.read_bytes().splitlines(keepends=True)
    doc = json.loads(DOC.read_text())
    full = doc["messages"]
    append(log, b"".join(lines[:5]))
    out, ref = tmp_path / "out", tmp_path / "ref"
    watch = Watch(home, out)
    try:
        watch.wait_for("watching")
        _wait(out, [log], watch)
        for line in lines[5:]:
            append(log, line)
        noise.write_text('[{"sessionId": "x", "messageId": 0, "type": "user", "message": "hi"}]')
        for n in (2, 4):
            doc["messages"] = full[:n]
            tmp = doc_path.with_name(".tmp")
            tmp.write_text(json.dumps(doc, indent=2))
            os.replace(tmp, doc_path)  # rewritten whole, as a rename
            _wait(out, [doc_path], watch)
        doc["messages"] = full
        doc_path.write_text(json.dumps(doc, indent=2))  # and in place
        _wait(out, [log, doc_path], watch)
    finally:
        code = watch.stop(signal.SIGTERM)
    assert code == 0, watch.stderr
    assert "Traceback" not in watch.stderr and "logs.json" not in watch.stderr, watch.stderr
    assert ledger_rows(out, "SELECT count(*) FROM sources WHERE path = ?", (str(noise),)) == [(0,)]
    assert_same_as_batch(home, out, ref)
    assert ledger_rows(out, "SELECT count(*) FROM sessions") == [(2,)]
