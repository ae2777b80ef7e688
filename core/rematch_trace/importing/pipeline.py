"""Wiring shared by the command and the tests: redaction and the event sink."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import attrs

from rematch_trace.host import vocab
from rematch_trace.host.facade import Host
from rematch_trace.host.source import Source
from rematch_trace.importing.settings import ImportSettings
from rematch_trace.security.sink_state import SinkState


class Sink(Protocol):
    """A consumer of one session's neutral records that writes a stream of its own."""

    def feed(self, rec: vocab.Neutral) -> list[dict[str, Any]]:
        """Take one record; return the output records now final."""

    def finish(self) -> list[dict[str, Any]]:
        """The remaining output records."""

    def state(self) -> SinkState:
        """A snapshot to continue from."""


#: Makes a session's security-event sink: (source, session record, saved state) -> sink.
SinkFactory = Callable[[Source, vocab.Session, "SinkState | None"], Sink]


@attrs.frozen
class Wiring:
    """The writers an import's settings call for: the security-event sink factory and the redactors."""

    #: Makes a session's security-event sink (``None``: no event stream).
    sink_factory: SinkFactory | None
    #: Replaces credentials in text written to the trace (``None``: no redaction).
    redact: Callable[[str], str] | None
    #: Replaces credentials in a tool input's strings.
    redact_input: Callable[[Any], Any] | None


_WIRING: dict[tuple[int, bool, bool], Wiring] = {}


def wiring(settings: ImportSettings, host: Host) -> Wiring:
    """What ``settings`` make of an import's writers for ``host``: built once per process and host."""
    key = (id(host), settings.events, settings.redact)
    cached = _WIRING.get(key)
    if cached is None:
        # Building them compiles the redaction and risk patterns: once, not per file.
        r_text, r_input = redactors(settings.redact)
        factory = sink_factory_for(host) if settings.events else None
        cached = _WIRING[key] = Wiring(factory, r_text, r_input)
    return cached


def redactors(enabled: bool) -> tuple[Callable[[str], str] | None, Callable[[Any], Any] | None]:
    """The trace's text and tool-input redactors (``None`` when redaction is off)."""
    if not enabled:
        return None, None
    from rematch_trace.security.redact import default_redactor

    r = default_redactor()
    return r.redact_text, r.redact_value


def sink_factory_for(host: Host) -> SinkFactory:
    """A factory of security-event sinks bound to ``host`` (for action types)."""
    from rematch_trace.security.events import EventSink
    from rematch_trace.security.redact import default_redactor

    redactor = default_redactor()

    def make(source: Source, session: vocab.Session, state: SinkState | None) -> Sink:
        return EventSink(source, session, host=host, redactor=redactor, state=state)

    return make
