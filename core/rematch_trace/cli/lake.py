"""``rematch lake``: maintaining the data folder."""

from __future__ import annotations

import click

from rematch_trace.cli.common import data_option, read_only_error, readable, writable


@click.group("lake")
def lake() -> None:
    """Maintain the data folder."""


@lake.command("migrate")
@data_option
def lake_migrate(out: str | None) -> None:
    """Migrate the ledger to this version and re-decide every session's domain."""
    from rematch_trace.place.domain import decide_domain
    from rematch_trace.store.ledger import Ledger

    data = readable(out)
    if not writable(data):
        raise read_only_error(data, "rematch lake migrate")
    changed = 0
    with Ledger(data.ledger) as ledger:
        rows = ledger.sessions()
        for r in rows:
            domain = decide_domain(r["cwd"], r["repo"], r["repo_remote"])
            if domain != r["domain"]:
                ledger.set_domain(r["harness"], r["session_id"], domain)
                changed += 1
        version = ledger.version
    click.echo(f"ledger at schema {version}; {len(rows)} sessions, {changed} domains changed")
