"""How an import runs: one settings object, from the command line down to a worker."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:  # the import machinery loads only when a file is imported
    from rematch_trace.host.facade import Host
    from rematch_trace.importing.source_import import SinkFactory


@attrs.frozen
class ImportSettings:
    """What to write and how: passed whole to every layer of a batch import.

    ``jobs`` is the number of worker processes of the local pool (1 imports in
    this process); ``fsync`` makes every output durable before its ledger row
    commits.
    """

    events: bool = True
    redact: bool = True
    jobs: int = 1
    fsync: bool = False

    def source_kwargs(self, host: Host) -> dict[str, Any]:
        """The keyword arguments of :func:`~rematch_trace.importing.source_import.import_source`."""
        return _kwargs(host, self.events, self.redact, self.fsync)


_CACHE: dict[tuple[int, bool, bool, bool], dict[str, Any]] = {}


def _kwargs(host: Host, events: bool, redact: bool, fsync: bool) -> dict[str, Any]:
    # The redactor and the sink factory are built once per process and host: building
    # them compiles the redaction and risk patterns.
    key = (id(host), events, redact, fsync)
    cached = _CACHE.get(key)
    if cached is None:
        from rematch_trace.importing.pipeline import redactors, sink_factory_for

        r_text, r_input = redactors(redact)
        factory: SinkFactory | None = sink_factory_for(host) if events else None
        cached = _CACHE[key] = {"sink_factory": factory, "redact": r_text, "redact_input": r_input, "fsync": fsync}
    return cached


#: Called with (files done, files to do) as an import proceeds.
Progress = Callable[[int, int], None]
