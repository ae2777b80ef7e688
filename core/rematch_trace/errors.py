"""Exceptions, and the core's fallback classifier of tool errors."""

from __future__ import annotations

import re


class RematchError(Exception):
    """An error to show the user as one line, without a traceback."""


class RestartImport(Exception):
    """Raised by a plugin when appended bytes cannot continue the saved state.

    The core then re-imports the source from the start.
    """


class NonExactNumber(ValueError):
    """A number in a tool input that has no exact canonical representation."""


# Ordered: the first pattern that matches the head of a failed result decides.
_CLASSIFIERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("rejected", re.compile(
        r"rejected by user|user rejected|doesn't want to proceed|declined by user"
        r"|user denied|permission to use \S+ (?:has been|was) denied|rejected by user approval",
        re.I)),
    ("interrupted", re.compile(
        r"aborted by user|interrupted by user|tool execution was aborted|request was aborted"
        r"|\binterrupted\b|cancelled by user|canceled by user", re.I)),
    ("timeout", re.compile(r"timed out|timeout|deadline exceeded|exit code:? 124\b", re.I)),
    ("sandbox", re.compile(r"sandbox|seatbelt|landlock", re.I)),
    ("permission", re.compile(r"permission denied|operation not permitted|EACCES|EPERM|access is denied", re.I)),
    ("not_found", re.compile(
        r"no such file|not found|does not exist|ENOENT|cannot find|could not find|unknown tool|unsupported call",
        re.I)),
    ("invalid_input", re.compile(
        r"invalid (?:input|argument|parameter|params)|failed to parse|validation (?:error|failed)"
        r"|inputvalidationerror|must be|missing required|unexpected (?:argument|parameter)"
        r"|has not been read yet|string to replace not found|old_string", re.I)),
    ("exit_nonzero", re.compile(
        r"exit(?:ed)? (?:with )?code:? *-?[1-9]\d*|exit status -?[1-9]\d*"
        r"|process exited with code -?[1-9]\d*|\"exit_code\": *-?[1-9]\d*", re.I)),
)

_EXIT_CODE = re.compile(
    r"(?:exit code:?|exited with code|exit status|process exited with code|\"exit_code\":) *(-?\d+)", re.I
)


def exit_code_of(text: str) -> int | None:
    """The first exit code stated in a tool output, or ``None``."""
    m = _EXIT_CODE.search(text)
    return int(m.group(1)) if m else None


def classify_error(text: str) -> str:
    """Classify a failed tool result from the start of its output.

    The fallback when a plugin gives no structured class: always one of
    :data:`rematch_trace.vocab.ERROR_CLASSES`, ``tool_error`` when nothing matches.
    """
    head = text[:4096]
    for cls, pattern in _CLASSIFIERS:
        if pattern.search(head):
            return cls
    return "tool_error"
