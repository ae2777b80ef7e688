"""Wiring shared by the command and the tests: redaction and the event sink."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rematch_trace.host import vocab
from rematch_trace.host.facade import Host
from rematch_trace.host.source import Source
from rematch_trace.importing.source_import import Sink, SinkFactory
from rematch_trace.security.sink_state import SinkState


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
