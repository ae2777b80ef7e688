"""``rematch stats``: per-day, per-model and per-harness figures in the terminal."""

from __future__ import annotations

import click

from rematch_trace.cli.common import echo_json, settled


@click.command("stats")
@click.option("--out", "out", type=click.Path(), help="Data folder.")
@click.option("--since", help="Only sessions started on or after this day (YYYY-MM-DD, UTC).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def stats_cmd(out: str | None, since: str | None, as_json: bool) -> None:
    """Sessions, inputs, redirects, error clusters, tokens and cost per day, model and harness."""
    from rematch_trace.cli.report_cmd import since_day
    from rematch_trace.cli.sessions_cmd import summaries
    from rematch_trace.report.figures import figures, format_figures

    day = since_day(since)
    chosen = [e.summary for e in summaries(settled(out)) if day is None or (e.summary.day or "") >= day]
    f = figures(chosen)
    if as_json:
        echo_json(f.as_json())
    else:
        click.echo(format_figures(f))
