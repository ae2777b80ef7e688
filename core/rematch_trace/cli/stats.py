"""``rematch stats``: per-day, per-model and per-harness figures in the terminal."""

from __future__ import annotations

import click

from rematch_trace.cli.common import check_harness, data_option, echo_json, nothing_matched, readable
from rematch_trace.cli.listing import filter_options, prices_option


@click.command("stats")
@data_option
@filter_options
@prices_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def stats_cmd(out: str | None, harness: str | None, model: str | None, repo: str | None, domain: str | None,
              flag: str | None, since: str | None, prices_file: str | None, as_json: bool) -> None:
    """Sessions, inputs, redirects, error clusters, tokens and cost per day, model and harness.

    Cost: what the trace states (omp), else each turn's tokens at the price table's prices, exact; a
    model without a price is named and its cost is n/a.
    """
    from rematch_trace.cli.listing import chosen, price_table, summaries
    from rematch_trace.report.collect import with_json
    from rematch_trace.report.figures import figures, format_figures

    data = readable(out)
    check_harness(data, harness)
    prices = price_table(data, prices_file)
    from rematch_trace.cli.grouped import whole

    every = summaries(data, prices)
    # Whole sessions, each counted once: a main session with what it started (cli/grouped.py).
    entries = whole(every, chosen(every, harness, model, repo, domain, flag, since))
    f = with_json(entries, lambda js: figures(js, prices))
    if not entries and not as_json:
        filtered = any(v is not None for v in (harness, model, repo, domain, flag, since))
        nothing_matched("no sessions match" if filtered else "no sessions")
    if as_json:
        echo_json(dict(f.as_json(), prices={"as_of": prices.as_of, "files": list(prices.files)}))
    else:
        click.echo(format_figures(f, f"prices as of {prices.as_of}"
                                     + (f", over them {', '.join(prices.files[1:])}" if len(prices.files) > 1 else "")))
    if not entries:
        nothing_matched()
