"""Decompressing streams for plugins: zstd that notices a cut-off frame."""

from __future__ import annotations

import io
from typing import IO, Any

_CHUNK = 1024 * 1024


class DamagedStream(OSError):
    """A compressed stream is corrupt, or ends inside a frame (the file was cut off)."""


class _ZstdFrames(io.RawIOBase):
    """Frame after frame of a zstd file, raising :class:`DamagedStream` at a cut.

    zstandard's ``stream_reader`` ends quietly where a frame is cut off, which
    would lose the rest of a transcript without a word.
    """

    def __init__(self, raw: IO[bytes]) -> None:
        import zstandard

        self._zstd = zstandard
        self._raw = raw
        self._obj: Any = None
        self._pending = b""
        self._in_frame = False

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        # The compressed file is this stream's own: closing the view closes it.
        if not self.closed:
            self._raw.close()
        super().close()

    def readinto(self, b: Any) -> int:
        while not self._pending:
            chunk = self._raw.read(_CHUNK)
            if not chunk:
                if self._in_frame:
                    raise DamagedStream("the last zstd frame is cut off")
                return 0
            self._feed(chunk)
        n = min(len(b), len(self._pending))
        b[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def _feed(self, chunk: bytes) -> None:
        out = []
        while chunk:
            if self._obj is None:
                self._obj = self._zstd.ZstdDecompressor().decompressobj()
            try:
                out.append(self._obj.decompress(chunk))
            except self._zstd.ZstdError as err:
                raise DamagedStream(f"corrupt zstd data: {err}") from None
            self._in_frame = not self._obj.eof
            if self._obj.eof:
                chunk = self._obj.unused_data
                self._obj = None
            else:
                chunk = b""
        self._pending += b"".join(out)


def open_zstd(raw: IO[bytes]) -> IO[bytes]:
    """A buffered, line-readable view of a zstd file's decompressed bytes.

    Needs the ``zstandard`` package. A cut-off last frame raises
    :class:`DamagedStream` (an :class:`OSError`) once the readable part is read.
    Closing the view closes ``raw``.
    """
    return io.BufferedReader(_ZstdFrames(raw), _CHUNK)
