"""Canonical JSON (RFC 8785) and the hashes taken over it."""

from __future__ import annotations

import hashlib
import math
from decimal import Decimal
from typing import Any

import orjson
import rfc8785

from rematch_trace.errors import NonExactNumber
from rematch_trace.host.exactnum import ExactNumber, big_int_text, exact_text

_MAX_SAFE = 2**53 - 1


def _fast_ok(value: Any, depth: int = 0) -> bool:
    """Whether orjson's sorted output is already RFC 8785 for ``value`` (when orjson writes it at all).

    True for trees of str, int in the exact range, bool, None, lists and dicts
    whose keys hold no character above U+FFFF (where UTF-16 and code-point
    order differ). Floats take the exact path. A string holding a lone
    surrogate passes here: orjson refuses it, which sends it to the exact path
    just the same (see :func:`canonical_json`).
    """
    if depth > 200:
        return False
    t = type(value)
    if t is dict:
        for k, v in value.items():
            if type(k) is not str or not (k.isascii() or _key_ok(k)):
                return False
            # The common values without a call: a string, a flag, a null, a small integer.
            tv = type(v)
            if tv is str or tv is bool or v is None:
                continue
            if tv is int:
                if -_MAX_SAFE <= v <= _MAX_SAFE:
                    continue
                return False
            if not _fast_ok(v, depth + 1):
                return False
        return True
    if t is str or t is bool or value is None:
        return True
    if t is int:
        return bool(-_MAX_SAFE <= value <= _MAX_SAFE)
    if t is list:
        for v in value:
            tv = type(v)
            if tv is str or tv is bool or v is None:
                continue
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


class _NeedsExactPath(Exception):
    """A number RFC 8785's binary64 form would change: take :func:`_exact_json`."""


def _exact(value: Any) -> Any:
    """Check every number is a finite binary64 one; turn exact Decimals into floats.

    Raises :class:`_NeedsExactPath` for an integer beyond ±(2^53-1), an
    :class:`~rematch_trace.host.exactnum.ExactNumber` or a Decimal no float
    holds exactly.
    """
    t = type(value)
    if t is bool or value is None or t is str:
        return value
    if t is int:
        if not -_MAX_SAFE <= value <= _MAX_SAFE:
            raise _NeedsExactPath
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
            raise _NeedsExactPath
        return f
    if t is ExactNumber:
        raise _NeedsExactPath
    if t is list or t is tuple:
        return [_exact(v) for v in value]
    if t is dict:
        return {str(k): _exact(v) for k, v in value.items()}
    raise NonExactNumber(f"value of type {t.__name__} is not JSON")


def _exact_json(value: Any) -> bytes:
    """RFC 8785 extended to exact numbers (see :mod:`rematch_trace.host.exactnum`).

    Every number is written by ECMAScript's layout with all its significant
    digits (:func:`~rematch_trace.host.exactnum.exact_text`): the RFC 8785
    form for a number a double holds, the exact value for any other, so no two
    different values share a text. Non-standard ``NaN``/``Infinity`` literals
    read from a transcript are written as those bare words, which no JSON
    value is. Lone surrogates are escaped as in :func:`canonical_json`.
    """
    out: list[str] = []
    escaped = [False]
    _write(value, out, escaped)
    data = "".join(out).encode("utf-8")
    return b"\xff" + data if escaped[0] else data


def _string(s: str, escaped: list[bool]) -> str:
    try:
        return orjson.dumps(s).decode("utf-8")  # orjson writes strings as RFC 8785 does
    except orjson.JSONEncodeError:
        escaped[0] = True
        return orjson.dumps(s.encode("utf-8", "backslashreplace").decode("utf-8")).decode("utf-8")


def _utf16_key(item: tuple[str, Any]) -> bytes:
    return item[0].encode("utf-16be", "surrogatepass")


def _write(value: Any, out: list[str], escaped: list[bool]) -> None:
    t = type(value)
    if value is None:
        out.append("null")
    elif t is bool:
        out.append("true" if value else "false")
    elif t is str:
        out.append(_string(value, escaped))
    elif t is int:
        out.append(str(value) if -_MAX_SAFE <= value <= _MAX_SAFE else big_int_text(value))
    elif t is float:
        if not math.isfinite(value):
            raise NonExactNumber(f"number {value!r} is not finite")
        out.append(exact_text(repr(value)))
    elif t is ExactNumber:
        out.append(value.text)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise NonExactNumber(f"number {value} is not finite")
        out.append(exact_text(format(value, "f") if abs(value.adjusted()) < 10000 else str(value)))
    elif t is list or t is tuple:
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _write(v, out, escaped)
        out.append("]")
    elif t is dict:
        items = [(_escape_key(str(k), escaped), v) for k, v in value.items()]
        items.sort(key=_utf16_key)
        out.append("{")
        for i, (k, v) in enumerate(items):
            if i:
                out.append(",")
            out.append(_string(k, escaped))
            out.append(":")
            _write(v, out, escaped)
        out.append("}")
    else:
        raise NonExactNumber(f"value of type {t.__name__} is not JSON")


def _escape_key(k: str, escaped: list[bool]) -> str:
    """A key with lone surrogates escaped (keys sort by their escaped form, as in the RFC 8785 path)."""
    if k.isascii() or _utf8_ok(k):
        return k
    escaped[0] = True
    return k.encode("utf-8", "backslashreplace").decode("utf-8")


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

    A number RFC 8785 cannot write exactly (an integer beyond ±(2^53-1), an
    :class:`~rematch_trace.host.exactnum.ExactNumber`, a Decimal no double
    holds) is written with its exact value (:func:`_exact_json`), so two
    different originals never canonicalise alike. Raises
    :class:`~rematch_trace.errors.NonExactNumber` for a non-finite float or
    Decimal, or a value that is not JSON.
    """
    if _fast_ok(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
        except orjson.JSONEncodeError:
            pass  # lone surrogates: the exact path below handles them
    try:
        exact = _exact(value)
    except _NeedsExactPath:
        return _exact_json(value)
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
