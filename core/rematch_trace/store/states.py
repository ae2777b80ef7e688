"""JSON for saved states: what orjson refuses (lone surrogates) still round-trips."""

from __future__ import annotations

import json
from typing import Any

import orjson

from rematch_trace.trace.exactnum import json_default, parse_exact, parsed_exactly


def state_dumps(value: Any) -> bytes:
    """JSON of a saved state; lone surrogates (which orjson refuses) are escaped.

    Exact numbers (a tool input shown in a held-back record) are written exactly.
    """
    try:
        return orjson.dumps(value, default=json_default)
    except orjson.JSONEncodeError:
        # (an exact number is written as its text here, as the record writer does)
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str).encode()


def state_loads(data: bytes) -> Any:
    """Read back :func:`state_dumps`, exact numbers exactly (so a resumed import writes them alike)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return parse_exact(data)
    return value if parsed_exactly(data, value) else parse_exact(data)
