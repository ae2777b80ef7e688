"""``rematch show``: one trace, readably."""

from __future__ import annotations

import click

from rematch_trace.cli.common import data_option, find_trace, readable


@click.command("show")
@click.argument("session")
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the raw trace lines.")
def show_cmd(session: str, out: str | None, as_json: bool) -> None:
    """Print one session's trace readably (SESSION may be an id prefix)."""
    from rematch_trace.cli.show import render

    data = readable(out)
    path = find_trace(data, session)
    if as_json:
        with open(path, "rb") as f:
            for raw in f:
                click.echo(raw.rstrip(b"\n").decode())
        return
    for line in render(path, data.events / path.name):
        click.echo(line)
