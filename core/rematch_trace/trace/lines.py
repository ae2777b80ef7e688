"""A trace or event record as its output line: one place for the import and live capture alike."""

from __future__ import annotations

import json
from typing import Any

import orjson

from rematch_trace.host.exactnum import json_default

#: orjson ends each line itself (no second bytes object to append the newline to).
_LINE = orjson.OPT_APPEND_NEWLINE


def dumps_record(rec: dict[str, Any]) -> bytes:
    """One output line: the record's JSON and a newline."""
    try:
        return orjson.dumps(rec, default=json_default, option=_LINE)
    except orjson.JSONEncodeError:
        # What orjson refuses (an integer past 64 bits, a lone surrogate in an id
        # from a hostile file): plain json writes it, ASCII-escaped.
        return json.dumps(rec, ensure_ascii=True, separators=(",", ":"), default=str).encode() + b"\n"


def dumps_records(recs: list[dict[str, Any]]) -> bytes:
    """The output lines of ``recs``, joined: what :func:`dumps_record` gives each, one write for all."""
    try:
        if len(recs) == 1:  # the common case (one event for one record)
            return orjson.dumps(recs[0], default=json_default, option=_LINE)
        return b"".join([orjson.dumps(r, default=json_default, option=_LINE) for r in recs])
    except orjson.JSONEncodeError:
        return b"".join([dumps_record(r) for r in recs])  # the one orjson refuses falls back alone
