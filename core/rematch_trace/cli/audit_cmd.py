"""``rematch audit``: risky actions, most severe first."""

from __future__ import annotations

import click

from rematch_trace.cli.common import echo_json, settled


@click.command("audit")
@click.argument("session", required=False)
@click.option("--out", "out", type=click.Path(), help="Data folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def audit_cmd(session: str | None, out: str | None, as_json: bool) -> None:
    """List the risky actions of SESSION (or of every session), most severe first."""
    from rematch_trace.security.audit import audit, format_audit

    rows = audit(settled(out).root, session)
    if as_json:
        echo_json(rows)
        return
    click.echo(format_audit(rows))
