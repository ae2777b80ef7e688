"""``rematch forget SESSION``: remove one session's outputs and ledger row, so the next import brings it back."""

from __future__ import annotations

import sqlite3

import click

from rematch_trace.cli.common import Fatal, data_option, read_only_error, readable, session_stem, writable


@click.command("forget")
@click.argument("session")
@data_option
def forget_cmd(session: str, out: str | None) -> None:
    """Remove SESSION's trace, events, pending file and ledger row (an id or id prefix).

    Its transcript is read again by the next ``rematch import`` (with that run's settings),
    which brings the session back; the transcript itself is never touched.
    """
    from rematch_trace.errors import RematchError
    from rematch_trace.importing.lock import ImportLock
    from rematch_trace.importing.source_import import remove_outputs
    from rematch_trace.live.folder import live_dir
    from rematch_trace.store.datafolder import safe_name
    from rematch_trace.store.ledger import Ledger

    data = readable(out)
    if not writable(data):
        raise read_only_error(data, "rematch forget")
    stem = session_stem(data, session)
    try:
        with ImportLock(data.lock), Ledger(data.ledger) as ledger:
            rows = [r for r in ledger.sessions() if safe_name(r["session_id"]) == stem]
            sources = [ledger.forget(r["harness"], r["session_id"]) for r in rows]
            remove_outputs(data, rows[0]["session_id"] if rows else stem)
            from rematch_trace.store.search_index import SearchIndex, index_path

            if index_path(data).is_file():
                with SearchIndex(index_path(data)) as index:
                    index.forget(stem)
            live = live_dir(data.root) / f"{stem}.json"
            was_live = live.is_file()
            if was_live:
                live.unlink()
    except RematchError as err:
        raise Fatal(str(err)) from None
    except (OSError, sqlite3.Error) as err:
        raise Fatal(f"{data.root}: {err}") from None
    source = next((s for s in sources if s), None)
    click.echo(f"forgot {stem}" + (" (captured live)" if was_live else "")
               + (f"; the next import reads {source} again" if source else ""))
