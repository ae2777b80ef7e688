"""JSON for saved states: what orjson refuses (lone surrogates) still round-trips."""

from __future__ import annotations

import json
from typing import Any

import orjson


def state_dumps(value: Any) -> bytes:
    """JSON of a saved state; lone surrogates (which orjson refuses) are escaped."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode()


def state_loads(data: bytes) -> Any:
    """Read back :func:`state_dumps`."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
