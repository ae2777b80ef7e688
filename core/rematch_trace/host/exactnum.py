"""Exact JSON numbers: literals that binary64 would round, kept as their decimal value.

orjson, like every fast JSON parser, reads a number into a binary64 float or a
64-bit integer: ``0.1`` and ``0.10000000000000001`` become the same float, and
``18446744073709551616`` and ``18446744073709551617`` the same float too. Two
tool inputs that differ only there would then share an ``args_hash`` and an
action fingerprint.

So every line is first parsed by orjson. Most lines are then proven exact at
C speed: orjson writes the value back as the very same bytes
(:func:`parsed_exactly`). The others' raw bytes are searched
(:func:`may_be_inexact`) for a number token that binary64 could round: only
one with 16 or more digits or a three-digit exponent can be (binary64 holds
any 15 significant decimal digits, and exponents below 100 reach neither
overflow nor subnormals), and such a token is checked on its own; the rare
line with one that orjson would change is parsed a second time, exactly
(:func:`parse_exact`). There a literal becomes:

* a ``float`` when the float's shortest repr has the literal's exact value
  (``0.1``, ``1.5e300``): nothing is lost;
* an ``int`` when it is an integer inside orjson's 64-bit range (exact);
* an :class:`ExactNumber` otherwise, holding the literal's exact value as
  text (:func:`exact_text`).

:func:`exact_text` writes a decimal the way ECMAScript writes a number
(RFC 8785 section 3.2.2.3) but with all its significant digits, so for every
number a double holds exactly it is the RFC 8785 form itself; two literals of
different value never get the same text.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, localcontext
from typing import Any

import orjson

# Finding the rare risky token cheaply: one C-speed translate maps number bytes
# to classes (digits and "." -> 1, "e"/"E" -> 2, "+"/"-" -> 3), then substring
# searches find 16 digits in a row or a three-digit exponent; only there does
# Python look at the token itself.
# (Control bytes 1-3 never occur unescaped in JSON; class 4 keeps them apart.)
# bytes.maketrans rather than a loop over a bytes literal: compiled by Cython,
# such a loop yields one-byte strings where Python yields ints.
_TABLE = bytes.maketrans(
    b"\x01\x02\x03" + b"0123456789." + b"eE" + b"+-",
    b"\x04" * 3 + b"\x01" * 11 + b"\x02" * 2 + b"\x03" * 2,
)
_NEEDLES = (b"\x01" * 16, b"\x01\x02\x01\x01\x01", b"\x01\x02\x03\x01\x01\x01")
_NUMBER_BYTES = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_WHITESPACE = b" \t\r\n"
_VALUE_START = b":,["
_NUMBER = re.compile(r"(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?")
_INT64_MIN = -(2**63)
_UINT64_END = 2**64
_NOT_PARSED = object()
#: ``int()`` refuses longer digit strings (CPython's conversion limit).
_INT_DIGITS = 4000


class ExactNumber:
    """A JSON number kept exactly, as its :func:`exact_text`.

    Made for literals a float or a 64-bit integer would change; also for the
    non-standard ``NaN``/``Infinity`` literals the lenient fallback parser
    accepts (text ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, which no JSON
    number shares).
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    @property
    def finite(self) -> bool:
        """Whether it is a JSON number (not ``NaN`` or an infinity)."""
        return self.text[-1:].isdigit()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("ExactNumber", self.text))

    def __repr__(self) -> str:
        return f"ExactNumber({self.text!r})"

    def __str__(self) -> str:
        return self.text


def _layout(negative: bool, digits: str, point: int | str) -> str:
    """ECMAScript's number layout of ``0.<digits> x 10^point`` (digits without
    leading or trailing zeros), with every digit kept."""
    k = len(digits)
    if isinstance(point, int) and 0 < point <= 21:
        body = digits + "0" * (point - k) if k <= point else f"{digits[:point]}.{digits[point:]}"
    elif isinstance(point, int) and -6 < point <= 0:
        body = "0." + "0" * -point + digits
    else:
        if isinstance(point, int):
            e = point - 1
            exp = f"+{e}" if e >= 0 else str(e)
        else:  # an exponent too long for int(): Decimal adds exactly
            with localcontext() as ctx:
                ctx.prec = len(point) + 4
                value = Decimal(point) - 1
            exp = f"+{value}" if value >= 0 else str(value)
        body = (f"{digits[0]}.{digits[1:]}" if k > 1 else digits) + "e" + exp
    return "-" + body if negative else body


def exact_text(literal: str) -> str:
    """The exact value of a JSON number literal, written as RFC 8785 writes numbers.

    Raises :class:`ValueError` for text that is not a JSON number.
    """
    m = _NUMBER.fullmatch(literal)
    if m is None:
        raise ValueError(f"not a JSON number: {literal[:40]!r}")
    sign, whole, frac, exp = m.groups()
    frac = frac or ""
    every = whole + frac
    digits = every.lstrip("0")
    if not digits:
        return "0"
    shift = len(whole) - (len(every) - len(digits))
    digits = digits.rstrip("0")
    point: int | str
    if not exp:
        point = shift
    elif len(exp) <= _INT_DIGITS:
        point = int(exp) + shift
    else:
        with localcontext() as ctx:
            ctx.prec = len(exp) + 4
            point = str(Decimal(exp) + shift)
    return _layout(sign == "-", digits, point)


def _float(literal: str) -> float | ExactNumber:
    f = float(literal)
    text = repr(f)
    if text == literal or (f - f == 0 and exact_text(text) == exact_text(literal)):
        return f  # the float holds exactly the literal's (shortest) value
    return ExactNumber(exact_text(literal))


def _int(literal: str) -> int | ExactNumber:
    if len(literal) <= 18:
        return int(literal)
    if len(literal) <= _INT_DIGITS:
        value = int(literal)
        if _INT64_MIN <= value < _UINT64_END:
            return value
    return ExactNumber(exact_text(literal))


def _constant(name: str) -> ExactNumber:
    return ExactNumber(name)


def parse_exact(data: bytes | str) -> Any:
    """Parse one JSON document keeping every number exact (see the module docstring).

    Accepts what :func:`json.loads` accepts; raises :class:`ValueError` otherwise.
    """
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_constant)


def parsed_exactly(data: bytes, value: Any) -> bool:
    """Whether orjson's ``value`` of the line ``data`` holds every number exactly.

    The cheap proof first: when orjson writes ``value`` back byte for byte as
    the line (most lines: harnesses write compact JSON), every number token in
    it is the shortest form of the double or the 64-bit integer orjson read, so
    nothing was rounded. Otherwise :func:`may_be_inexact` looks at the tokens.
    """
    end = len(data)
    while end and data[end - 1] in b"\r\n":
        end -= 1
    try:
        again = orjson.dumps(value)
    except orjson.JSONEncodeError:  # deeper than orjson writes
        again = b""
    if len(again) == end and data.startswith(again):
        return True
    return not may_be_inexact(data)


def may_be_inexact(data: bytes) -> bool:
    """Whether a JSON text holds a number token that a float or a 64-bit integer would change.

    Looks only at tokens of 16+ digits or with a three-digit exponent in a
    value position (after ``:``, ``,``, ``[`` or at the start); such text
    inside a string can only cause a needless second parse.
    """
    t = data.translate(_TABLE)
    n = len(t)
    for needle in _NEEDLES:
        i = t.find(needle)
        while i >= 0:
            start, end = i, i + len(needle)
            while start > 0 and 0 < t[start - 1] < 4:
                start -= 1
            while end < n and 0 < t[end] < 4:
                end += 1
            j = start - 1
            while j >= 0 and data[j] in _WHITESPACE:
                j -= 1
            if j < 0 or data[j] in _VALUE_START:
                token = data[start:end]
                if _NUMBER_BYTES.fullmatch(token) and not _exact_in_orjson(token):
                    return True
            i = t.find(needle, end)
    return False


def _exact_in_orjson(token: bytes) -> bool:
    """Whether orjson reads this number token without changing its value."""
    if b"." not in token and b"e" not in token and b"E" not in token:
        # (past 20 characters no integer fits 64 bits; int() would refuse thousands of digits)
        return len(token) <= 18 or (len(token) <= 20 and _INT64_MIN <= int(token) < _UINT64_END)
    f = float(token)
    text = repr(f)
    # (compared as exact texts: Decimal refuses exponents past 10^18)
    return text.encode() == token or (f - f == 0 and exact_text(text) == exact_text(token.decode()))


def loads_exact(data: bytes | str) -> Any:
    """orjson's parse of ``data``, parsed again exactly unless :func:`parsed_exactly`.

    What orjson refuses goes to :func:`parse_exact` (as the line reader's
    fallback does). Raises :class:`ValueError` for text that is not JSON, or
    nested too deeply to parse again.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        value = _NOT_PARSED  # what orjson refuses (1e400, lone surrogates) the exact parser may take
    if value is _NOT_PARSED or not parsed_exactly(raw, value):
        try:
            return parse_exact(data)
        except RecursionError:
            raise ValueError("JSON nested too deeply to read its numbers exactly") from None
    return value


def exactify(value: Any) -> Any:
    """``value`` with every :class:`~decimal.Decimal` and out-of-range integer made exact.

    For trees a Decimal-producing parser built (ijson for lines too long for
    orjson); iterative, so any depth is fine.
    """
    root = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        v = parent[key]
        if isinstance(v, Decimal):
            parent[key] = _float(str(v)) if v.is_finite() else ExactNumber(
                "NaN" if v.is_nan() else ("-Infinity" if v.is_signed() else "Infinity")
            )
        elif type(v) is int and not _INT64_MIN <= v < _UINT64_END:
            parent[key] = ExactNumber(big_int_text(v))
        elif isinstance(v, dict):
            stack.extend((v, k) for k in v)
        elif isinstance(v, list):
            stack.extend((v, i) for i in range(len(v)))
    return root[0]


def big_int_text(v: int) -> str:
    """The :func:`exact_text` of an integer of any size."""
    try:
        return exact_text(str(v))
    except ValueError:  # past CPython's int-to-text digit limit: Decimal converts exactly
        return exact_text(format(Decimal(v), "f"))


def json_default(value: Any) -> Any:
    """orjson's ``default=``: an :class:`ExactNumber` written as its exact number.

    (A plugin state's :class:`~rematch_trace.host.sealed.Sealed` values are written by
    :func:`~rematch_trace.host.sealed.state_dumps`, which knows them.)

    ``null`` for one beyond the binary64 range (``1e400``) or not finite, as a
    float's overflow always showed: orjson, which reads traces back, refuses
    such a literal.
    """
    if isinstance(value, ExactNumber):
        return orjson.Fragment(value.text) if value.finite and float(value.text) - float(value.text) == 0 else None
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


__all__ = ["ExactNumber", "big_int_text", "exact_text", "exactify", "json_default", "loads_exact", "may_be_inexact",
           "parse_exact", "parsed_exactly"]
