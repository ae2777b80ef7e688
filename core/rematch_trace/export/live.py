"""Live export: ``rematch serve --export-otlp URL`` sends each live session's new spans as they are written.

Off the verdict path: a hook event only offers its session id to a bounded queue (``put_nowait``:
never a wait); one background thread takes the ids, waits a moment for the writer to commit the
event, and exports what the session's trace holds then, through the same acknowledgement book as
``rematch export otlp`` (a span is sent once; a failed batch records nothing and the next event
of the session sends it). A full queue drops the offer, counts it and logs it (the next event of
that session, or the next ``rematch export otlp``, sends what it would have).
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: Session ids waiting for the export thread; past this an offer is dropped (counted, logged).
QUEUE_SIZE = 256
#: Seconds the thread waits after an offer, gathering more, before it reads the traces.
SETTLE_S = 0.5


class LiveExporter:
    """The live export of one data folder, in a background thread."""

    def __init__(self, data: Path, endpoint: str | None, headers: Mapping[str, str] | None = None, *,
                 log: Callable[[str], None] = lambda line: None, queue_size: int = QUEUE_SIZE,
                 settle_s: float = SETTLE_S) -> None:
        self.data = data
        self.endpoint = endpoint
        self.headers = dict(headers or {})
        self.log = log
        self.settle_s = settle_s
        self.dropped = 0
        self.sent_spans = 0
        self._queue: queue.Queue[str | None] = queue.Queue(maxsize=queue_size)
        self._thread = threading.Thread(target=self._run, name="rematch-otlp-export", daemon=True)
        self._thread.start()

    def offer(self, session_id: str) -> None:
        """Ask for ``session_id``'s new spans to be sent; returns at once, whatever the queue holds."""
        try:
            self._queue.put_nowait(session_id)
        except queue.Full:
            self.dropped += 1
            # Every drop counted; the log says the first and then every power of two (a burst is one line each doubling).
            if self.dropped & (self.dropped - 1) == 0:
                self.log(f"otlp_export dropped={self.dropped} (queue full; the session's next event sends its spans)")

    def stop(self, seconds_left: float) -> None:
        """Send what is queued, within ``seconds_left``, then end the thread (``Service.at_stop``)."""
        try:
            self._queue.put(None, timeout=max(0.0, seconds_left))
        except queue.Full:
            return
        self._thread.join(max(0.0, seconds_left))

    def _run(self) -> None:
        from rematch_trace.export.otlp import HttpSender

        sender = HttpSender(self.endpoint, self.headers, None)
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                time.sleep(self.settle_s)  # the writer commits the event after its reply
                wanted = {first}
                stop = False
                while True:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        stop = True
                        break
                    wanted.add(more)
                self._export(sender, wanted)
                if stop:
                    return
        finally:
            sender.close()

    def _export(self, sender: Any, wanted: set[str]) -> None:
        """Send the new spans of the sessions ``wanted`` (and of their families' other members)."""
        from rematch_trace.export.keys import Ids, load_key
        from rematch_trace.export.run import Batcher, export, ledger_sessions
        from rematch_trace.export.spans import SessionInfo
        from rematch_trace.store.datafolder import DataDir
        from rematch_trace.store.export_acks import AckBook, acks_path

        data = DataDir(self.data)
        try:
            infos = ledger_sessions(data) if data.ledger.is_file() else []
            known = {i.session_id for i in infos}
            for sid in sorted(wanted - known):  # a session still running: no ledger row yet
                harness = _harness_of(data.trace_path(sid))
                if harness is not None:
                    infos.append(SessionInfo(harness=harness, session_id=sid, trace=data.trace_path(sid),
                                             events=data.events_path(sid)))
            ids = Ids(load_key(data.root))
            with AckBook(acks_path(data.root)) as book:
                # A live session has settled once its writer ended it (SessionEnd): no quiet time to wait.
                got = export(infos, lambda i: i.session_id in wanted, ids, Batcher(sender, book),
                             acked=book.of_endpoint(sender.url), settled_before=int(time.time() * 1000))
        except Exception as err:  # the service goes on whatever an export meets
            self.log(f"otlp_export failed endpoint={sender.url} error={type(err).__name__}")
            return
        self.sent_spans += got.spans
        if got.failed is not None:
            self.log(f"otlp_export not_acknowledged endpoint={sender.url} reason={got.failed[:200]}")


def _harness_of(trace: Path) -> str | None:
    """The harness a trace's ``session_start`` names (its first line), or ``None``."""
    import orjson

    try:
        with trace.open("rb") as f:
            head = orjson.loads(f.readline())
    except (OSError, orjson.JSONDecodeError):
        return None
    agent = head.get("agent") if isinstance(head, dict) else None
    name = agent.get("name") if isinstance(agent, dict) else None
    return name if isinstance(name, str) else None


def attach(service: Any, data: Path, endpoint: str | None) -> LiveExporter:
    """Export the live sessions ``service`` captures: each ``hook_event`` offers its session after its reply."""
    exporter = LiveExporter(data, endpoint, log=service.log)
    capture = service.handler("hook_event")
    if capture is None:
        raise ValueError("no live capture to export from (register it first)")

    def on_hook_event(request: dict[str, Any], invocation: Any) -> Any:
        reply = capture(request, invocation)
        payload = request.get("host_payload")
        sid = payload.get("session_id") if type(payload) is dict else None
        if isinstance(sid, str) and sid:
            exporter.offer(sid)
        return reply

    service.register_handler("hook_event", on_hook_event)
    service.at_stop(exporter.stop)
    return exporter


__all__ = ["QUEUE_SIZE", "LiveExporter", "attach"]
