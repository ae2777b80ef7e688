"""Exceptions, and the core's fallback classifier of tool errors."""

from __future__ import annotations

import re


class RematchError(Exception):
    """An error to show the user as one line, without a traceback."""


class NothingFound(RematchError):
    """Nothing there to work on (no such file or folder): exit status 1, not a fatal error."""


def yaml_mistake(origin: object, err: Exception) -> str:
    """A YAML syntax error as one ``file:line:column: problem`` line (PyYAML's own text is several lines,
    and its first alone loses where the mistake is). ``err`` is a ``yaml.YAMLError``; its marks are
    read as attributes so that this module does not import PyYAML."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or getattr(err, "context", None)
    text = " ".join(str(problem or err).split())
    if mark is None:
        return f"{origin}: not YAML: {text}"
    begun, context = getattr(err, "context_mark", None), getattr(err, "context", None)
    if begun is not None and context and begun is not mark and begun.line != mark.line:
        # Where the unclosed part began (a bracket opened two lines up): the mistake is often there.
        text += f" ({' '.join(str(context).split())} at line {begun.line + 1}, column {begun.column + 1})"
    return f"{origin}:{mark.line + 1}:{mark.column + 1}: not YAML: {text}"


class RestartImport(Exception):
    """Raised by a plugin when appended bytes cannot continue the saved state.

    The core then re-imports the source from the start.
    """


class NonExactNumber(ValueError):
    """A number in a tool input that has no exact canonical representation."""


# Ordered: the first class with a phrase in the (lowercased) head decides.
# Plain substring tests: this runs on every failed result, so no regex scans.
_PHRASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rejected", ("rejected by user", "user rejected", "doesn't want to proceed", "declined by user",
                  "user denied", "has been denied", "was denied", "rejected by user approval")),
    ("interrupted", ("aborted by user", "interrupted by user", "tool execution was aborted",
                     "request was aborted", "interrupted", "cancelled by user", "canceled by user")),
    ("timeout", ("timed out", "timeout", "deadline exceeded")),
    ("sandbox", ("sandbox", "seatbelt", "landlock")),
    ("permission", ("permission denied", "operation not permitted", "eacces", "eperm", "access is denied")),
    ("not_found", ("no such file", "not found", "does not exist", "enoent", "cannot find", "could not find",
                   "unknown tool", "unsupported call")),
    ("invalid_input", ("invalid input", "invalid argument", "invalid parameter", "invalid params",
                       "failed to parse", "validation error", "validation failed", "inputvalidationerror",
                       "must be", "missing required", "unexpected argument", "unexpected parameter",
                       "has not been read yet", "string to replace not found", "old_string")),
)
_TIMEOUT_EXIT = re.compile(r"exit code:? 124\b")

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
    :data:`rematch_trace.host.vocab.ERROR_CLASSES`, ``tool_error`` when nothing matches.
    """
    head = text[:4096].lower()
    for cls, phrases in _PHRASES:
        if cls == "timeout" and _TIMEOUT_EXIT.search(head):
            return cls
        for phrase in phrases:
            if phrase in head:
                return cls
    code = exit_code_of(head)
    if code is not None and code != 0:
        return "exit_nonzero"
    return "tool_error"
