"""OpenTelemetry export of imported sessions (``rematch export otlp``, ``rematch serve --export-otlp``).

Above ``store``, ``trace`` and ``security`` (it reads traces, event streams and the ledger), below
``live`` and ``cli``. The OpenTelemetry SDK is imported only by :mod:`rematch_trace.export.otlp`,
which only the commands that export load: docs/otel.md.
"""
