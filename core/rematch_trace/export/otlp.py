"""Sending spans: the OpenTelemetry SDK's OTLP HTTP/protobuf exporter, or OTLP JSON to a file.

The only module that imports OpenTelemetry; loaded by the commands that export, so no other
command starts slower. The exporter honours the standard ``OTEL_EXPORTER_OTLP_*`` variables
(endpoint, headers, timeout, compression, certificates); ``--endpoint`` and ``--header`` given
on the command line win over them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from rematch_trace.export.spans import SpanData

#: The path of the traces signal under an OTLP/HTTP base URL.
TRACES_PATH = "/v1/traces"


def traces_url(endpoint: str | None) -> str:
    """The full traces URL: ``endpoint`` (a base URL, as ``OTEL_EXPORTER_OTLP_ENDPOINT``, or already the
    traces URL), else the standard variables, else the SDK's default (``http://localhost:4318``)."""
    if endpoint:
        base = endpoint.rstrip("/")
        return base if base.endswith(TRACES_PATH) else base + TRACES_PATH
    signal = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if signal:
        return signal
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318").rstrip("/")
    return base + TRACES_PATH


def shown_url(url: str) -> str:
    """``url`` without the user and password it may carry (never printed, never kept in the data folder)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an endpoint URL that cannot be parsed)"
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _resource() -> Any:
    from importlib.metadata import PackageNotFoundError, version

    from opentelemetry.sdk.resources import OTELResourceDetector, Resource

    try:
        ours = version("rematch-trace")
    except PackageNotFoundError:
        ours = "unknown"
    # rematch's defaults, then OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME over them (Resource.create alone
    # lets the code's attributes win). A fixed instance id: the SDK's default is random per process, and the
    # same export must give the same bytes.
    ours_first = Resource.create({"service.name": "rematch", "service.version": ours, "service.instance.id": "rematch"})
    return ours_first.merge(OTELResourceDetector().detect())


class Converter:
    """:class:`SpanData` to the SDK's ``ReadableSpan`` (one resource and scope for every span)."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import Event, ReadableSpan
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        from rematch_trace.export.spans import SEMCONV_REVISION

        self._readable, self._event, self._ctx, self._status = ReadableSpan, Event, SpanContext, Status
        self._error, self._unset = StatusCode.ERROR, Status(StatusCode.UNSET)
        self._internal = SpanKind.INTERNAL
        self._flags = TraceFlags(TraceFlags.SAMPLED)
        self.resource = _resource()
        self._scope = InstrumentationScope("rematch_trace.export", schema_url=None,
                                           attributes={"rematch.semconv": SEMCONV_REVISION})

    def __call__(self, s: SpanData) -> Any:
        ctx = self._ctx(s.trace_id, s.span_id, is_remote=False, trace_flags=self._flags)
        parent = (self._ctx(s.trace_id, s.parent_id, is_remote=False, trace_flags=self._flags)
                  if s.parent_id is not None else None)
        status = self._status(self._error, s.error) if s.error is not None else self._unset
        events = [self._event(name, attributes, timestamp=ts) for name, ts, attributes in s.events]
        return self._readable(name=s.name, context=ctx, parent=parent, resource=self.resource,
                              attributes=s.attributes, events=events, kind=self._internal, status=status,
                              start_time=s.start_ns, end_time=s.end_ns, instrumentation_scope=self._scope)


class SendFailed(Exception):
    """The endpoint did not acknowledge a batch (down, refused, an error status): the reason."""


class _Caught(logging.Handler):
    """Keeps the exporter's log lines of one export (how it says why a batch failed)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.lines.append(record.getMessage())


def _watched_session() -> Any:
    """A ``requests`` session that remembers why its last request failed (the SDK's log line says only
    "timeout, max retries or shutdown")."""
    import requests

    class Watched(requests.Session):
        last: str | None = None

        def send(self, request: Any, **kwargs: Any) -> Any:
            try:
                response = super().send(request, **kwargs)
            except requests.RequestException as err:
                text = str(err)
                self.last = ("connection refused" if "Connection refused" in text
                             else f"{type(err).__name__}: {text.splitlines()[0][:200] if text else ''}")
                raise
            if response.status_code >= 300:
                self.last = f"HTTP {response.status_code} {response.reason or ''}".rstrip()
            return response

    return Watched()


class HttpSender:
    """Sends batches with the SDK's OTLP HTTP/protobuf exporter; :meth:`send` raises :class:`SendFailed`."""

    def __init__(self, endpoint: str | None, headers: Mapping[str, str], timeout: float | None) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        full = traces_url(endpoint)
        #: The endpoint as said and as the acknowledgement book keys it: without user or password.
        self.url = shown_url(full)
        self._session = _watched_session()
        self._exporter = OTLPSpanExporter(endpoint=full, headers=dict(headers) or None, timeout=timeout,
                                          session=self._session)
        self._convert = Converter()
        from opentelemetry.sdk.trace.export import SpanExportResult

        self._ok = SpanExportResult.SUCCESS

    def send(self, spans: Sequence[SpanData]) -> None:
        """Send one batch; return once the endpoint acknowledged it."""
        caught = _Caught()
        log = logging.getLogger("opentelemetry.exporter")
        log.addHandler(caught)
        # The SDK says why a batch failed through its logger; the reason is ours to say, once.
        propagate, log.propagate = log.propagate, False
        try:
            result = self._exporter.export([self._convert(s) for s in spans])
        finally:
            log.removeHandler(caught)
            log.propagate = propagate
        if result != self._ok:
            said = caught.lines[-1].splitlines()[0][:300] if caught.lines and caught.lines[-1] else ""
            last, self._session.last = self._session.last, None
            raise SendFailed(last or said.rstrip(".") or "no acknowledgement")

    def close(self) -> None:
        """Release the exporter's connections."""
        self._exporter.shutdown()  # type: ignore[no-untyped-call]


def _any_value(value: Any) -> dict[str, Any]:
    """An attribute value as OTLP JSON's ``AnyValue`` (protobuf's JSON mapping: 64-bit integers as strings)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_any_value(v) for v in value]} if value else {}}
    return {"stringValue": str(value)}


def _key_values(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any_value(v)} for k, v in attributes.items()]


class FileSender:
    """Writes each batch as one OTLP JSON ``ExportTraceServiceRequest`` per line (as the Collector's
    file exporter writes and its ``otlpjsonfile`` receiver reads).

    Written from the spans directly, in the shape protobuf's JSON mapping gives the SDK's encoding
    (ids as hex, as OTLP JSON has them; a test checks the two agree): the mapping in Python cost
    more than the rest of the export (bench/README.md).
    """

    def __init__(self, out: IO[bytes], path: Path) -> None:
        from rematch_trace.export.spans import SEMCONV_REVISION

        self.url = f"file:{path}"
        self._out = out
        self._resource = {"attributes": _key_values(_resource().attributes)}
        self._scope = {"name": "rematch_trace.export", "attributes": _key_values({"rematch.semconv": SEMCONV_REVISION})}

    def send(self, spans: Sequence[SpanData]) -> None:
        """Append one request line."""
        import orjson

        out = []
        for s in spans:
            span: dict[str, Any] = {"traceId": f"{s.trace_id:032x}", "spanId": f"{s.span_id:016x}"}
            if s.parent_id is not None:
                span["parentSpanId"] = f"{s.parent_id:016x}"
            span.update(name=s.name, kind="SPAN_KIND_INTERNAL", startTimeUnixNano=str(s.start_ns),
                        endTimeUnixNano=str(s.end_ns))
            if s.attributes:
                span["attributes"] = _key_values(s.attributes)
            if s.events:
                span["events"] = [{"timeUnixNano": str(ts), "name": name, **({"attributes": _key_values(a)} if a else {})}
                                  for name, ts, a in s.events]
            span["status"] = {"code": "STATUS_CODE_ERROR", "message": s.error} if s.error is not None else {}
            span["flags"] = 256  # the SDK's: "has is-remote" set, not remote
            out.append(span)
        request = {"resourceSpans": [{"resource": self._resource,
                                      "scopeSpans": [{"scope": self._scope, "spans": out}]}]}
        self._out.write(orjson.dumps(request) + b"\n")

    def close(self) -> None:
        """Nothing to release (the caller owns the file)."""


__all__ = ["TRACES_PATH", "Converter", "FileSender", "HttpSender", "SendFailed", "shown_url", "traces_url"]
