"""Canonical JSON (RFC 8785) and the hashes taken over it."""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal
from typing import Any

import orjson
import rfc8785

from rematch_trace.errors import NonExactNumber

_MAX_SAFE = 2**53 - 1


def _fast_ok(value: Any, depth: int = 0) -> bool:
    """Whether orjson's sorted output is already RFC 8785 for ``value``.

    True for trees of str, int in the exact range, bool, None, lists and dicts
    whose keys hold no character above U+FFFF (where UTF-16 and code-point
    order differ) and no lone surrogate. Floats take the exact path.
    """
    if depth > 200:
        return False
    t = type(value)
    if t is str:
        return bool(value.isascii() or _utf8_ok(value))
    if t is bool or value is None:
        return True
    if t is int:
        return bool(-_MAX_SAFE <= value <= _MAX_SAFE)
    if t is list:
        return all(_fast_ok(v, depth + 1) for v in value)
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or not (k.isascii() or _key_ok(k)):
                return False
            if not _fast_ok(v, depth + 1):
                return False
        return True
    return False


def _utf8_ok(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _key_ok(k: str) -> bool:
    return _utf8_ok(k) and all(ord(c) <= 0xFFFF for c in k)


def _exact(value: Any) -> Any:
    """Check every number is exactly representable; turn Decimals into floats."""
    t = type(value)
    if t is bool or value is None or t is str:
        return value
    if t is int:
        if not -_MAX_SAFE <= value <= _MAX_SAFE:
            raise NonExactNumber(f"integer {value} is outside the exact range ±(2^53-1)")
        return value
    if t is float:
        if not math.isfinite(value):
            raise NonExactNumber(f"number {value!r} is not finite")
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise NonExactNumber(f"number {value} is not finite")
        f = float(value)
        if not math.isfinite(f) or Decimal(repr(f)) != value:
            raise NonExactNumber(f"number {value} has no exact binary64 representation")
        return f
    if t is list or t is tuple:
        return [_exact(v) for v in value]
    if t is dict:
        return {str(k): _exact(v) for k, v in value.items()}
    raise NonExactNumber(f"value of type {t.__name__} is not JSON")


# The trace's args_hash and the event's fingerprint canonicalise the same tool
# input one after the other: remember the last few results by identity (holding
# the object, so its id cannot be reused while remembered).
_MEMO: dict[int, tuple[Any, bytes | NonExactNumber]] = {}


def canonical_input(value: Any) -> bytes:
    """:func:`canonical_json` of a tool input, computed once per input object."""
    key = id(value)
    hit = _MEMO.get(key)
    if hit is not None and hit[0] is value:
        result = hit[1]
    else:
        try:
            result = canonical_json(value)
        except NonExactNumber as err:
            result = err
        except (RecursionError, TypeError, ValueError) as err:
            result = NonExactNumber(f"tool input cannot be canonicalised: {type(err).__name__}")
        if len(_MEMO) >= 16:
            _MEMO.clear()
        _MEMO[key] = (value, result)
    if isinstance(result, NonExactNumber):
        raise result
    return result


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical JSON of ``value``.

    Raises :class:`~rematch_trace.errors.NonExactNumber` for a number with no
    exact representation (an integer beyond ±(2^53-1), a non-finite or
    inexact decimal), so that two different originals never canonicalise alike.
    """
    if _fast_ok(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass  # lone surrogates: the exact path below handles them
    exact = _exact(value)
    try:
        return bytes(rfc8785.dumps(exact))
    except (rfc8785.CanonicalizationError, UnicodeEncodeError) as err:
        safe = _surrogate_safe(exact)
        if safe == exact:
            raise NonExactNumber(str(err)) from None
        # Lone surrogates have no UTF-8 form. Escape them, and prefix a byte that
        # valid UTF-8 never holds, so the result collides with no valid input.
        return b"\xff" + bytes(rfc8785.dumps(safe))


def _surrogate_safe(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, list | tuple):
        return [_surrogate_safe(v) for v in value]
    if isinstance(value, dict):
        return {_surrogate_safe(k): _surrogate_safe(v) for k, v in value.items()}
    return value


def args_hash(value: Any) -> str:
    """sha256 (hex) of the canonical JSON of a tool's full, untruncated input."""
    return hashlib.sha256(canonical_input(value)).hexdigest()
