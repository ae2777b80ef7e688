"""``rematch forget SESSION``: remove one session's outputs and ledger row, so the next import brings it back."""

from __future__ import annotations

import sqlite3

import click

from rematch_trace.cli.common import Fatal, data_option, read_only_error, readable, session_stem, writable


@click.command("forget")
@click.argument("session")
@data_option
def forget_cmd(session: str, out: str | None) -> None:
    """Remove SESSION's trace, events, pending file and ledger row (an id or id prefix), and those of the
    sessions it started (subagents, sidechains, compaction runs: the ledger's parent links, every level).

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
            every = ledger.sessions()
            rows = [r for r in every if safe_name(r["session_id"]) == stem]
            # The sessions under it, every level down (a loop in hostile parent links is walked once).
            family = list(rows)
            seen = {(r["harness"], r["session_id"]) for r in rows}
            for parent in family:
                for r in every:
                    pair = (r["harness"], r["session_id"])
                    if pair not in seen and r.get("parent") == parent["session_id"] and r["harness"] == parent["harness"]:
                        seen.add(pair)
                        family.append(r)
            sources = [ledger.forget(r["harness"], r["session_id"]) for r in family]
            stems = [stem, *(safe_name(r["session_id"]) for r in family[len(rows):])]
            ids = [rows[0]["session_id"] if rows else stem, *(r["session_id"] for r in family[len(rows):])]
            for sid in ids:
                remove_outputs(data, sid)
            from rematch_trace.store import conversation_rows

            for src in {s for s in sources if s}:
                # The conversation the import stored of its source goes too (the next import stores it again).
                conversation_rows.forget(data, src)
            from rematch_trace.store.search_index import SearchIndex, index_path

            if index_path(data).is_file():
                with SearchIndex(index_path(data)) as index:
                    for key in stems:
                        index.forget(key)
            was_live = False
            for key in stems:
                live = live_dir(data.root) / f"{key}.json"
                if live.is_file():
                    was_live = was_live or key == stem
                    live.unlink()
    except RematchError as err:
        raise Fatal(str(err)) from None
    except (OSError, sqlite3.Error) as err:
        raise Fatal(f"{data.root}: {err}") from None
    source = next((s for s in sources if s), None)
    under = len(stems) - 1
    click.echo(f"forgot {stem}" + (" (captured live)" if was_live else "")
               + (f" and {under} session{'s' if under != 1 else ''} under it" if under else "")
               + (f"; the next import reads {source} again" if source else ""))
