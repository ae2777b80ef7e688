"""``rematch lake``: maintaining the data folder."""

from __future__ import annotations

import click

from rematch_trace.cli.common import data_option, read_only_error, readable, require_valid_config, writable


@click.group("lake")
def lake() -> None:
    """Maintain the data folder."""


@lake.command("migrate")
@data_option
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing.")
@click.option("--clear-unmatched", is_flag=True,
              help="Also clear the domains that no rule decides any more (kept, and listed, without it).")
def lake_migrate(out: str | None, dry_run: bool, clear_unmatched: bool) -> None:
    """Migrate the ledger to this version and re-decide every session's domain, naming each change.

    A configuration with mistakes is refused (file, line and key); a domain that no rule
    decides any more is kept unless --clear-unmatched says to clear it.
    """
    from rematch_trace.place.domain import decide_domain
    from rematch_trace.store.ledger import Ledger

    require_valid_config()
    data = readable(out)
    if not dry_run and not writable(data):
        raise read_only_error(data, "rematch lake migrate")
    changed = kept = 0
    opened = Ledger(data.ledger, readonly=True) if dry_run else Ledger(data.ledger)
    with opened as ledger:
        rows = ledger.sessions()
        for r in rows:
            domain = decide_domain(r["cwd"], r["repo"], r["repo_remote"])
            if domain == r["domain"]:
                continue
            name = f"{r['harness']} {r['session_id']}"
            if domain is None and not clear_unmatched:
                kept += 1
                click.echo(f"kept {name}: {r['domain']} (no rule decides it now; --clear-unmatched clears it)")
                continue
            click.echo(f"{'would change' if dry_run else 'changed'} {name}: {r['domain'] or '-'} -> {domain or '-'}")
            if not dry_run:
                ledger.set_domain(r["harness"], r["session_id"], domain)
            changed += 1
        version = ledger.version
    verb = "would change" if dry_run else "changed"
    click.echo(f"ledger at schema {version}; {len(rows)} sessions, {changed} domains {verb}, {kept} kept")
