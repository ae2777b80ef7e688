"""The model verdict contract: what an analysis model may answer, decoded strictly.

A model's answer is untrusted text. :func:`decode_model_verdict` accepts one
JSON object of exactly these members, through the IPC codec's bounds (16 KiB,
no duplicate keys, exact numbers)::

    schema_version       1
    category             one of CATEGORIES
    severity             one of SEVERITIES
    confidence           a number in [0, 1] (not a boolean)
    suspicious           true or false
    rationale            text, at most 1,000 characters
    evidence             at most 8 texts of at most 300 characters
    recommended_action   one of RECOMMENDED_ACTIONS
    drift                one of DRIFT (how far the action strays from the user's request)
    limitations          at most 8 texts of at most 300 characters

Anything else (another member, a value outside its list, an over-long text,
a confidence that is not a number in range) is a :class:`ModelVerdictError`.
So is a text that instructs someone to execute something
(:func:`~rematch_trace.live.verdicts.instructions.instructs`): a code fence, a
shell prompt line, an imperative to run, execute, paste, install, type into a
shell..., or, in the rationale and limitations, a clause that starts with a
command (``sudo ...``, ``curl ... | sh``). A verdict describes; it never carries a
command for the host to run (``evidence`` may quote the observed one).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from rematch_trace.live.ipc.codec import DecodeError, decode_payload
from rematch_trace.live.verdicts.instructions import instructs

SCHEMA_VERSION = 1
#: What the action is, by the model's account.
CATEGORIES: tuple[str, ...] = (
    "benign", "credential_exposure", "data_exfiltration", "destructive_change", "privilege_escalation",
    "persistence", "remote_code_execution", "security_bypass", "scope_drift", "prompt_injection", "other",
)
SEVERITIES: tuple[str, ...] = ("none", "low", "medium", "high", "critical")
RECOMMENDED_ACTIONS: tuple[str, ...] = ("no_override", "hold_for_approval", "deny")
DRIFT: tuple[str, ...] = ("none", "minor", "major", "unknown")
MAX_VERDICT_BYTES = 16 << 10
MAX_RATIONALE = 1000
MAX_ITEMS = 8
MAX_ITEM = 300
_FIELDS = ("schema_version", "category", "severity", "confidence", "suspicious", "rationale", "evidence",
           "recommended_action", "drift", "limitations")

class ModelVerdictError(ValueError):
    """A model answer that breaks the contract; ``code`` names the fault, ``field`` where."""

    def __init__(self, code: str, field: str, message: str) -> None:
        super().__init__(f"{code}: {field}: {message}" if field else f"{code}: {message}")
        self.code = code
        self.field = field


@attrs.frozen
class ModelVerdict:
    """A decoded model verdict (see the module docstring for each field's domain)."""

    schema_version: int
    category: str
    severity: str
    confidence: float
    suspicious: bool
    rationale: str
    evidence: tuple[str, ...]
    recommended_action: str
    drift: str
    limitations: tuple[str, ...]


def _enum(obj: dict[str, Any], key: str, values: tuple[str, ...]) -> str:
    v = obj[key]
    if type(v) is not str:
        raise ModelVerdictError("wrong_type", key, "must be a string")
    if v not in values:
        raise ModelVerdictError("invalid_value", key, f"must be one of {', '.join(values)}")
    return v


def _text(key: str, v: Any, limit: int) -> str:
    if type(v) is not str:
        raise ModelVerdictError("wrong_type", key, "must be a string")
    if len(v) > limit:
        raise ModelVerdictError("too_long", key, f"{len(v)} characters, the bound is {limit}")
    # Evidence may quote the observed command as it is; no field may tell its reader to run one.
    if instructs(v, prose=not key.startswith("evidence")):
        raise ModelVerdictError("execution_instruction", key, "instructs to execute something")
    return v


def _texts(obj: dict[str, Any], key: str) -> tuple[str, ...]:
    v = obj[key]
    if type(v) is not list:
        raise ModelVerdictError("wrong_type", key, "must be an array of strings")
    if len(v) > MAX_ITEMS:
        raise ModelVerdictError("too_long", key, f"{len(v)} items, the bound is {MAX_ITEMS}")
    return tuple(_text(f"{key}[{i}]", x, MAX_ITEM) for i, x in enumerate(v))


def check_model_verdict(obj: Any) -> ModelVerdict:
    """A :class:`ModelVerdict` from a decoded JSON value, or :class:`ModelVerdictError`."""
    if type(obj) is not dict:
        raise ModelVerdictError("wrong_type", "", "a verdict is a JSON object")
    for k in obj:
        if k not in _FIELDS:
            raise ModelVerdictError("additional_property", str(k)[:64], "not a field of a model verdict")
    for k in _FIELDS:
        if k not in obj:
            raise ModelVerdictError("missing_field", k, "required")
    if type(obj["schema_version"]) is not int or obj["schema_version"] != SCHEMA_VERSION:
        raise ModelVerdictError("unsupported_version", "schema_version", f"must be {SCHEMA_VERSION}")
    conf = obj["confidence"]
    if type(conf) not in (int, float):
        raise ModelVerdictError("wrong_type", "confidence", "must be a number")
    if not (math.isfinite(conf) and 0 <= conf <= 1):
        raise ModelVerdictError("invalid_value", "confidence", "must be within [0, 1]")
    if type(obj["suspicious"]) is not bool:
        raise ModelVerdictError("wrong_type", "suspicious", "must be true or false")
    return ModelVerdict(
        schema_version=SCHEMA_VERSION,
        category=_enum(obj, "category", CATEGORIES),
        severity=_enum(obj, "severity", SEVERITIES),
        confidence=float(conf),
        suspicious=obj["suspicious"],
        rationale=_text("rationale", obj["rationale"], MAX_RATIONALE),
        evidence=_texts(obj, "evidence"),
        recommended_action=_enum(obj, "recommended_action", RECOMMENDED_ACTIONS),
        drift=_enum(obj, "drift", DRIFT),
        limitations=_texts(obj, "limitations"),
    )


def decode_model_verdict(data: bytes | str) -> ModelVerdict:
    """Decode a model's raw answer (bytes or text) into a :class:`ModelVerdict`.

    :raises ModelVerdictError: ``too_long``, ``not_json`` (with the codec's code), or a field fault.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > MAX_VERDICT_BYTES:
        raise ModelVerdictError("too_long", "", f"{len(raw)} bytes, the bound is {MAX_VERDICT_BYTES}")
    try:
        value = decode_payload(raw)
    except DecodeError as err:
        raise ModelVerdictError("not_json", "", f"{err.code}: {err.message}") from None
    return check_model_verdict(value)


__all__ = [
    "CATEGORIES",
    "DRIFT",
    "RECOMMENDED_ACTIONS",
    "SCHEMA_VERSION",
    "SEVERITIES",
    "ModelVerdict",
    "ModelVerdictError",
    "check_model_verdict",
    "decode_model_verdict",
]
