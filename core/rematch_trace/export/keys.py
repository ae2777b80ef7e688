"""The export key: deterministic, keyed trace and span ids and the keyed ``args_hash``.

The key (32 random bytes) lives in the data folder as ``export.key`` (0600), made on first use.
Ids derived from it are stable across reruns (a rerun sends the same ids: idempotent) yet reveal
nothing of the session ids to whoever reads the backend; the keyed ``args_hash`` cannot be
matched against a dictionary of likely commands without the key (the conventions' advice for
``gen_ai.guardrail.security.content.input.hash``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

#: The key file's name inside the data folder.
KEY_NAME = "export.key"
_KEY_BYTES = 32


def load_key(root: Path) -> bytes:
    """The data folder's export key, made (0600, never replaced) when missing."""
    path = root / KEY_NAME
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:  # another export made it meanwhile: read theirs
            fd = os.open(path, flags)
        else:
            try:
                key = os.urandom(_KEY_BYTES)
                os.write(fd, key.hex().encode() + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            return key
    try:
        text = os.read(fd, 4096).decode("ascii", "replace").strip()
    finally:
        os.close(fd)
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != _KEY_BYTES:
        raise ValueError(f"{path} is not an export key (64 hex digits); remove it to make a new one "
                         "(the next export then sends every session again, under new ids)")
    return key


class Ids:
    """Trace and span ids and keyed hashes under one key."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def _mac(self, *parts: str) -> bytes:
        msg = "\x00".join(parts).encode("utf-8", "surrogatepass")
        return hmac.new(self._key, msg, hashlib.sha256).digest()

    def trace_id(self, root_session: str) -> int:
        """The trace id of the family whose top session is ``root_session`` (never 0)."""
        return int.from_bytes(self._mac("trace", root_session)[:16], "big") or 1

    def span_id(self, session_id: str, seq: int) -> int:
        """The id of the span made from record ``seq`` of a session (``-1``: the session's own span)."""
        return int.from_bytes(self._mac("span", session_id, str(seq))[:8], "big") or 1

    def args_hash(self, args_hash: str) -> str:
        """The trace's ``args_hash`` keyed (HMAC-SHA256, hex): comparable within this data folder only."""
        return "hmac-sha256:" + hmac.new(self._key, args_hash.encode("ascii", "replace"), hashlib.sha256).hexdigest()


__all__ = ["KEY_NAME", "Ids", "load_key"]
