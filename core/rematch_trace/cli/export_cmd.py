"""``rematch export otlp``: every imported session to an OTLP endpoint (or an OTLP JSON file), once.

See docs/otel.md. OpenTelemetry is imported only when this command runs.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rematch_trace.cli.common import (
    EXIT_PARTIAL,
    Fatal,
    NothingToRead,
    data_option,
    read_only_error,
    readable,
    require,
    session_stem,
    writable,
)
from rematch_trace.store.datafolder import DataDir

#: Seconds after a session's trace ended (``session_shutdown``) before its own span is sent: a session
#: still being imported as it runs would otherwise get a session span at every export.
SETTLED_AFTER_S = 600.0

if TYPE_CHECKING:
    from rematch_trace.export.keys import Ids
    from rematch_trace.export.spans import SessionInfo

#: A filter on a session, and one on a session and its start (unix ms).
Keep = Callable[["SessionInfo"], bool]
Started = Callable[["SessionInfo", int], bool]


class NotAcknowledged(click.ClickException):
    """The endpoint did not acknowledge everything: one line naming it, exit status 1."""

    exit_code = EXIT_PARTIAL


@click.group("export")
def export_group() -> None:
    """Send imported sessions elsewhere (docs/otel.md)."""


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for v in values:
        key, sep, value = v.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{v!r} is not KEY=VALUE", param_hint="--header")
        out[key.strip()] = value.strip()
    return out


@export_group.command("otlp")
@click.argument("session", required=False)
@data_option
@click.option("--endpoint", metavar="URL",
              help="OTLP/HTTP endpoint (base URL, or its /v1/traces); default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, "
                   "$OTEL_EXPORTER_OTLP_ENDPOINT, http://localhost:4318.")
@click.option("--header", "headers", multiple=True, metavar="KEY=VALUE",
              help="A header on every request (a token: --header 'authorization=Bearer …'); over "
                   "$OTEL_EXPORTER_OTLP_HEADERS. Repeatable.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=None,
              help="Seconds one request may take (default: $OTEL_EXPORTER_OTLP_TIMEOUT, else 10).")
@click.option("--since", help="Only sessions started on or after this day (YYYY-MM-DD, UTC).")
@click.option("--harness", help="Only this harness (claude_code, codex, omp, ...).")
@click.option("--with-text", "with_text", is_flag=True,
              help="Also send prompts, answers' text and tool inputs, redacted (off by default).")
@click.option("--dry-run", "dry_run", is_flag=True, help="Say what would be sent; send and record nothing.")
@click.option("--settled-after", "settled_after", type=click.FloatRange(min=0), default=SETTLED_AFTER_S,
              show_default=True, metavar="SECONDS",
              help="A session's own span is sent once its trace has ended (session_shutdown) this long ago; "
                   "until then its calls and responses go without it (docs/otel.md).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Worker processes sending to the endpoint, each its share of the sessions (default: cores).")
@click.option("--file", "file_", type=click.Path(dir_okay=False), metavar="PATH",
              help="Write OTLP JSON (one request a line) to PATH instead of sending; every chosen session.")
def otlp_cmd(session: str | None, out: str | None, endpoint: str | None, headers: tuple[str, ...],
             timeout: float | None, since: str | None, harness: str | None, with_text: bool, dry_run: bool,
             settled_after: float, jobs: int | None, file_: str | None) -> None:
    """Send SESSION (an id or id prefix, with the sessions under it; else every session) as OpenTelemetry
    traces: one trace per session with its subagents, GenAI semantic conventions. A rerun sends only
    new or grown sessions."""
    from rematch_trace.cli.listing import since_day

    require("otlp", "rematch export otlp")
    extra = _headers(headers)
    day = since_day(since)
    data = readable(out)
    if not data.ledger.is_file():
        raise NothingToRead(f"no ledger in {data.root}: nothing imported to export")
    from rematch_trace.export.keys import Ids, load_key
    from rematch_trace.export.run import Batcher, export, ledger_sessions

    infos = ledger_sessions(data)
    keep = _chosen(data, infos, session, harness)
    if not any(keep(i) for i in infos):
        raise NothingToRead("no sessions match" if (session or harness) else f"no sessions in {data.root}")
    if not (data.root / "export.key").is_file() and not writable(data):
        raise read_only_error(data, "the first export (it keeps its key there)")
    try:
        ids = Ids(load_key(data.root))
    except (OSError, ValueError) as err:
        raise Fatal(str(err)) from None

    def started(_: SessionInfo, start_ms: int) -> bool:
        when = dt.datetime.fromtimestamp(start_ms / 1000, dt.timezone.utc).date().isoformat()
        return day is None or when >= day

    if file_ is not None:
        _to_file(Path(file_), infos, keep, ids, with_text, started, since)
        return
    from rematch_trace.export.otlp import HttpSender, shown_url, traces_url
    from rematch_trace.store.export_acks import AckBook, Acked, acks_path

    url = shown_url(traces_url(endpoint))
    # The time is the one place the export reads the clock: whether a session has settled.
    settled_before = int((time.time() - settled_after) * 1000)
    if dry_run:
        acked: dict[tuple[str, str], Acked] = {}
        if acks_path(data.root).is_file() and writable(data):
            with AckBook(acks_path(data.root)) as book:
                acked = book.of_endpoint(url)
        got = export(infos, keep, ids, Batcher(None, None), with_text=with_text, acked=acked, started=started,
                     settled_before=settled_before)
        _problems(got.problems)
        _none_matched(got.sessions + got.unchanged, since)
        click.echo(f"would send {got.spans} span(s) of {got.sessions} session(s) to {url}; "
                   f"{got.unchanged} unchanged (dry run: nothing sent)")
        return
    if not writable(data):
        raise read_only_error(data, "an export (it records what the endpoint acknowledged)")
    from rematch_trace.export.run import Outcome, families, in_parts

    def one(part: tuple[int, int]) -> Outcome:
        sender = HttpSender(endpoint, extra, timeout)
        try:
            with AckBook(acks_path(data.root)) as book:
                return export(infos, keep, ids, Batcher(sender, book), with_text=with_text,
                              acked=book.of_endpoint(sender.url), started=started, settled_before=settled_before,
                              part=part)
        finally:
            sender.close()

    AckBook(acks_path(data.root)).close()  # made and migrated here, once, before the workers open it
    got = in_parts(jobs or (os.cpu_count() or 1), len(families(infos)), one)
    _problems(got.problems)
    if got.failed is None:
        _none_matched(got.sessions + got.unchanged, since)
    if got.failed is not None:
        raise NotAcknowledged(f"{url} did not acknowledge a batch ({got.failed}); nothing it did not "
                              "acknowledge is recorded as sent: the next run sends it")
    click.echo(f"sent {got.spans} span(s) of {got.sessions} session(s) to {url}; {got.unchanged} unchanged")
    if got.problems:
        raise click.exceptions.Exit(EXIT_PARTIAL)


def _none_matched(matched: int, since: str | None) -> None:
    """A filter that let no session through is said, never reported as an export of nothing."""
    if not matched:
        raise NothingToRead(f"no sessions started on or after {since}" if since else "no sessions could be read")


def _problems(lines: list[str]) -> None:
    from rematch_trace.host.text import one_line

    for p in lines:
        click.echo(f"rematch: {one_line(p)}", err=True)


def _chosen(data: DataDir, infos: list[SessionInfo], session: str | None, harness: str | None) -> Keep:
    """The filter of SESSION (with the sessions under it) and ``--harness``."""
    wanted: set[tuple[str, str]] | None = None
    if session is not None:
        stem = session_stem(data, session)
        tops = {(i.harness, i.session_id) for i in infos if i.trace.name == f"{stem}.jsonl"}
        wanted = set(tops)
        grew = True
        while grew:  # the sessions under it, at any depth
            grew = False
            for i in infos:
                if (i.harness, i.parent) in wanted and (i.harness, i.session_id) not in wanted:
                    wanted.add((i.harness, i.session_id))
                    grew = True

    def keep(i: SessionInfo) -> bool:
        if harness is not None and i.harness != harness:
            return False
        return wanted is None or (i.harness, i.session_id) in wanted

    return keep


def _to_file(path: Path, infos: list[SessionInfo], keep: Keep, ids: Ids, with_text: bool, started: Started,
             since: str | None) -> None:
    """Write every chosen session as OTLP JSON lines to ``path``, atomically (the old file or the new)."""
    from rematch_trace.export.otlp import FileSender
    from rematch_trace.export.run import Batcher, export
    from rematch_trace.store.datafolder import random_hex

    path = path.expanduser().absolute()
    tmp = path.with_name(f".{path.name}.{random_hex(6)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError as err:
        raise Fatal(f"cannot write {path}: {err.strerror or err}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            got = export(infos, keep, ids, Batcher(FileSender(f, path), None), with_text=with_text, acked=None,
                         started=started)
        _none_matched(got.sessions, since)  # the old file stays
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _problems(got.problems)
    click.echo(f"wrote {got.spans} span(s) of {got.sessions} session(s) to {path} (OTLP JSON)")
    if got.problems:
        raise click.exceptions.Exit(EXIT_PARTIAL)
