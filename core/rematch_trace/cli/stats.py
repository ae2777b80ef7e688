"""``rematch stats``: per-day, per-model and per-harness figures in the terminal."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from rematch_trace.cli.common import (
    Fatal,
    check_harness,
    columns,
    data_option,
    echo_json,
    nothing_matched,
    readable,
    wide_option,
)
from rematch_trace.cli.listing import filter_options, prices_option

if TYPE_CHECKING:
    import datetime as dt

    from rematch_trace.report.collect import Entry

#: harness, model, repository, domain and flag: the filters of ``stats``.
Filters = tuple[str | None, str | None, str | None, str | None, str | None]

#: ``--by``'s choices (report/totals.py PERIODS, not imported here: ``rematch --help`` loads this module).
BY = ("day", "week", "month", "session", "block")


@click.command("stats")
@data_option
@filter_options
@prices_option
@click.option("--by", "by", type=click.Choice(BY),
              help="Tokens by kind (input, output, cache write, cache read) and cost per day, week (from "
                   "Monday), month, session (a main session with what it started) or 5-hour block, as ccusage "
                   "shows them; --since/--until then choose the usage (a block: its start) by its day.")
@click.option("--until", help="Only up to this day (YYYY-MM-DD, kept): sessions started by then (UTC), or with "
                              "--by the usage of that day and before (in --tz).")
@click.option("--tz", "tz_name", metavar="ZONE",
              help="With --by: the time zone of days, weeks, months, --since/--until and block times (an IANA "
                   "name such as Europe/Paris, or UTC); default the machine's ($TZ, else /etc/localtime).")
@wide_option
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def stats_cmd(out: str | None, harness: str | None, model: str | None, repo: str | None, domain: str | None,
              flag: str | None, since: str | None, prices_file: str | None, by: str | None, until: str | None,
              tz_name: str | None, wide: bool, as_json: bool) -> None:
    """Sessions, inputs, redirects, error clusters, tokens and cost per day, model and harness; --by for
    token totals per day, week, month, session or 5-hour block (in --tz, default the machine's zone).

    Cost: what the trace states (omp), else each turn's tokens at the price table's prices, exact; a
    model without a price is named and its cost is n/a.
    """
    from rematch_trace.cli.listing import chosen, price_table, summaries
    from rematch_trace.report.collect import with_json
    from rematch_trace.report.figures import figures, format_figures
    from rematch_trace.report.zones import ZoneError, zone

    if tz_name is not None and by is None:
        raise Fatal("--tz needs --by (stats' own per-day figures are kept by UTC day)")
    try:
        tz = zone(tz_name)
    except ZoneError as err:
        raise Fatal(f"--tz: {err}") from None
    data = readable(out)
    check_harness(data, harness)
    prices = price_table(data, prices_file)
    from rematch_trace.cli.grouped import whole
    from rematch_trace.cli.listing import since_day

    last = since_day(until)
    every = summaries(data, prices)
    if by is not None:
        _by_period(every, by, (harness, model, repo, domain, flag), since_day(since), last, tz, columns(wide),
                   as_json)
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


def _by_period(every: list[Entry], by: str, filters: Filters, since: str | None, until: str | None,
               tz: tuple[str, dt.tzinfo], width: int | None, as_json: bool) -> None:
    """``stats --by``: the usage of the chosen sessions (whole) per period, session or block, and its total;
    ``filters`` are harness, model, repository, domain and flag, ``tz`` the zone's name and zone."""
    from rematch_trace.cli.grouped import whole
    from rematch_trace.cli.listing import chosen
    from rematch_trace.report.collect import with_json
    from rematch_trace.report.totals import format_totals, totals

    entries = whole(every, chosen(every, *filters, None))
    rows, total = with_json(entries, lambda js: totals(js, by, since, until, tz[1]))
    if as_json:
        echo_json({"by": by, "tz": tz[0], "since": since, "until": until,
                   "rows": [r.as_json(tz[1]) for r in rows], "total": total.as_json()})
        if not rows:
            nothing_matched()
        return
    if not rows:
        nothing_matched("no usage matches")
    click.echo(format_totals(rows, total, by, width))
    click.echo(f"times in {tz[0]}")
