"""``rematch stats``: per-day, per-model and per-harness figures in the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from rematch_trace.cli.common import check_harness, data_option, echo_json, nothing_matched, readable
from rematch_trace.cli.listing import filter_options, prices_option

if TYPE_CHECKING:
    from rematch_trace.report.collect import Entry

#: ``--by``'s choices (report/totals.py PERIODS, not imported here: ``rematch --help`` loads this module).
BY = ("day", "week", "month", "session")


@click.command("stats")
@data_option
@filter_options
@prices_option
@click.option("--by", "by", type=click.Choice(BY),
              help="Tokens by kind (input, output, cache write, cache read) and cost per UTC day, week (from "
                   "Monday), month or session (a main session with what it started), as ccusage shows them; "
                   "--since/--until then choose the usage by its day.")
@click.option("--until", help="Only up to this day (YYYY-MM-DD, UTC, kept): sessions started by then, or with "
                              "--by the usage of that day and before.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def stats_cmd(out: str | None, harness: str | None, model: str | None, repo: str | None, domain: str | None,
              flag: str | None, since: str | None, prices_file: str | None, by: str | None, until: str | None,
              as_json: bool) -> None:
    """Sessions, inputs, redirects, error clusters, tokens and cost per day, model and harness; --by for
    token totals per day, week, month or session.

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
    from rematch_trace.cli.listing import since_day

    last = since_day(until)
    every = summaries(data, prices)
    if by is not None:
        _by_period(every, by, harness, model, repo, domain, flag, since_day(since), last, as_json)
        return
    picked = chosen(every, harness, model, repo, domain, flag, since)
    if last is not None:
        picked = [e for e in picked if str(e.facet("day") or "") <= last]
    # Whole sessions, each counted once: a main session with what it started (cli/grouped.py).
    entries = whole(every, picked)
    f = with_json(entries, lambda js: figures(js, prices))
    if not entries and not as_json:
        filtered = any(v is not None for v in (harness, model, repo, domain, flag, since, until))
        nothing_matched("no sessions match" if filtered else "no sessions")
    if as_json:
        echo_json(dict(f.as_json(), prices={"as_of": prices.as_of, "files": list(prices.files)}))
    else:
        click.echo(format_figures(f, f"prices as of {prices.as_of}"
                                     + (f", over them {', '.join(prices.files[1:])}" if len(prices.files) > 1 else "")))
    if not entries:
        nothing_matched()


def _by_period(every: list[Entry], by: str, harness: str | None, model: str | None, repo: str | None,
               domain: str | None, flag: str | None, since: str | None, until: str | None, as_json: bool) -> None:
    """``stats --by``: the usage of the chosen sessions (whole) per period or session, and its total."""
    from rematch_trace.cli.grouped import whole
    from rematch_trace.cli.listing import chosen
    from rematch_trace.report.collect import with_json
    from rematch_trace.report.totals import format_totals, totals

    entries = whole(every, chosen(every, harness, model, repo, domain, flag, None))
    rows, total = with_json(entries, lambda js: totals(js, by, since, until))
    if as_json:
        echo_json({"by": by, "since": since, "until": until, "rows": [r.as_json() for r in rows],
                   "total": total.as_json()})
        if not rows:
            nothing_matched()
        return
    if not rows:
        nothing_matched("no usage matches")
    click.echo(format_totals(rows, total, by))
