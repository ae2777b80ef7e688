"""Which instruction files Claude Code loads are rematch entries (``loaded_entries``).

An instruction file (a ``CLAUDE.md``, a rules file: what an
``InstructionsLoaded`` hook names live, and a memory attachment names in the
transcript) is a rematch entry when a ``rematch.json`` manifest sits in its
folder, as a Codex skill is: the entry's ``id`` (else the folder's name),
``version`` and ``content_sha256`` come from the manifest. Read from disk when
the file is seen, live or at import (as the repository is), so the two agree
while the files stay as they were.
"""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from rematch_trace.host.vocab import EntryLoaded

#: A manifest larger than this is not read.
MAX_MANIFEST_BYTES = 64 * 1024
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def _manifest(folder: str) -> dict[str, Any] | None:
    path = os.path.join(folder, "rematch.json")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if (st.st_mode & 0o170000) != 0o100000 or st.st_size > MAX_MANIFEST_BYTES:
            return None
        doc = orjson.loads(os.read(fd, MAX_MANIFEST_BYTES + 1))
    except (OSError, orjson.JSONDecodeError):
        return None
    finally:
        os.close(fd)
    return doc if type(doc) is dict else None


def _ident(folder: str, doc: dict[str, Any]) -> str | None:
    ident = doc.get("id")
    if type(ident) is not str or not ident.strip():
        ident = os.path.basename(folder)
    return ident.strip()[:256] or None


def manifest_id(folder: str) -> str | None:
    """The id of the rematch entry in ``folder`` (its manifest's ``id``, else the folder's name), or ``None``."""
    doc = _manifest(folder)
    return None if doc is None else _ident(folder, doc)


def instruction_entry(stream: str, t: int | None, path: str) -> EntryLoaded | None:
    """The entry an instruction file at ``path`` is, or ``None`` (no manifest beside it)."""
    if not path or not os.path.isabs(path):
        return None
    folder = os.path.dirname(path)
    doc = _manifest(folder)
    if doc is None:
        return None
    ident = _ident(folder, doc)
    if ident is None:
        return None
    version = doc.get("version")
    version = str(version) if type(version) in (str, int, float) else None
    sha = doc.get("content_sha256")
    sha = sha.lower() if type(sha) is str and _SHA256.fullmatch(sha) else None
    return EntryLoaded(stream, t, ident, version[:64] if version else None, sha)
