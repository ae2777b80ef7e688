"""``rematch audit``: risky actions, most severe first.

A security command never reports all-clear for what it could not read: an
unknown session, a missing or empty data folder, or sessions imported without
their event stream are each one line on stderr and exit status 1.
"""

from __future__ import annotations

import click

from rematch_trace.cli.common import NothingToRead, data_option, echo_json, readable, session_stem


@click.command("audit")
@click.argument("session", required=False)
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def audit_cmd(session: str | None, out: str | None, as_json: bool) -> None:
    """List the risky actions of SESSION (an id or id prefix; else of every session), most severe first."""
    from rematch_trace.security.audit import audit, format_audit

    data = readable(out)
    if session is not None:
        stem = session_stem(data, session)
        if not (data.events / f"{stem}.jsonl").is_file():
            raise NothingToRead(f"no security events for session {stem} in {data.events} "
                                "(imported with --no-events? import it again without)")
        read, where = 1, f"session {stem}"
    else:
        stem = None
        read = sum(1 for _ in data.events.glob("*.jsonl")) if data.events.is_dir() else 0
        if not read:
            raise NothingToRead(f"no security events in {data.events} "
                                "(nothing imported, or imported with --no-events)")
        where = f"{read} session{'s' if read != 1 else ''}"
    rows = audit(data.root, stem)
    if as_json:
        echo_json(rows)
        return
    if not rows:
        click.echo(f"no risky actions found in the security events of {where}")
        return
    click.echo(format_audit(rows))
