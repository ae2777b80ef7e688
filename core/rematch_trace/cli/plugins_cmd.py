"""``rematch plugins``: what is installed."""

from __future__ import annotations

import click

from rematch_trace.cli.common import echo_json


@click.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--all", "show_all", is_flag=True, help="Include the built-in plugins.")
def plugins_cmd(as_json: bool, show_all: bool) -> None:
    """List installed plugins with their versions, hooks and default transcript folders.

    A plugin that failed to load is said on stderr (by the loader, as for every command).
    """
    from rematch_trace.host.loading import get_plugins
    from rematch_trace.host.text import one_line

    plugins = get_plugins(include_builtin=show_all)
    if as_json:
        echo_json(plugins)
    else:
        if not plugins:
            click.echo("no plugins installed")
        for p in plugins:
            example = " (an example plugin, not a harness: examples/plugin)" if p.get("example") else ""
            click.echo(f"{p['name']} {p.get('version', '')}".rstrip() + example)
            click.echo(f"  hooks: {', '.join(p['hooks'])}")
            for folder in p["locations"]:
                click.echo(f"  looks in: {one_line(folder)}")
