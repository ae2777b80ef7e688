"""``rematch stats``: per-day, per-model and per-harness figures in the terminal."""

from __future__ import annotations

import click

from rematch_trace.cli.common import data_folder, echo_json
from rematch_trace.cli.sessions_cmd import filter_options


@click.command("stats")
@click.option("--out", "out", type=click.Path(), help="Data folder.")
@filter_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def stats_cmd(out: str | None, harness: str | None, model: str | None, repo: str | None, domain: str | None,
              flag: str | None, since: str | None, as_json: bool) -> None:
    """Sessions, inputs, redirects, error clusters, tokens and cost per day, model and harness."""
    from rematch_trace.cli.sessions_cmd import chosen, summaries
    from rematch_trace.report.figures import figures, format_figures

    entries = chosen(summaries(data_folder(out)), harness, model, repo, domain, flag, since)
    f = figures(e.summary for e in entries)
    if as_json:
        echo_json(f.as_json())
    else:
        click.echo(format_figures(f))
