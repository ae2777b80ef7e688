"""``rematch report``: the static HTML site of a data folder."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import click

from rematch_trace.cli.common import Fatal, readable
from rematch_trace.cli.listing import price_table, prices_option, since_day


@click.command("report")
@click.option("--out", "out", type=click.Path(), help="Report folder (default: report/ in the data folder).")
@click.option("--data", "data_dir", type=click.Path(), help="Data folder (default: $REMATCH_HOME or the platform's).")
@click.option("--since", help="Only sessions started on or after this day (YYYY-MM-DD, UTC).")
@click.option("--open", "open_", is_flag=True, help="Open the index in a browser when done ($BROWSER, else the system's).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Worker processes rendering the pages (default: one per CPU); the site is the same whatever it is.")
@prices_option
def report_cmd(out: str | None, data_dir: str | None, since: str | None, open_: bool, prices_file: str | None,
               jobs: int | None) -> None:
    """Build or refresh a static HTML report of every session (only changed pages are rewritten)."""
    import importlib.util

    for module, dist in (("jinja2", "Jinja2"), ("markdown_it", "markdown-it-py")):
        if importlib.util.find_spec(module) is None:  # found, not imported: a rerun may render nothing
            raise Fatal(f"rematch report needs the Python package {dist}: install rematch again from its "
                        f"checkout (pip install ./), or pip install {dist.lower()}")
    from rematch_trace.conversation.pages import ConversationPages
    from rematch_trace.importing import search_sources  # noqa: F401  (the index sync's reader of sources)
    from rematch_trace.report.build import build
    from rematch_trace.report.collect import NothingImported

    day = since_day(since)
    if out and data_dir is None and (Path(out).expanduser() / "ledger.sqlite").is_file():
        # Every other command's --out names the data folder: say which option means what here.
        raise click.UsageError(
            f"{out} is a data folder; rematch report reads it with --data {out} (the site goes to "
            f"{Path(out) / 'report'}), and writes the site where --out says")
    data = readable(data_dir)
    folder = Path(out).expanduser() if out else data.root / "report"
    prices = price_table(data, prices_file)
    started = time.perf_counter()
    try:
        res = build(data, folder, day, prices, conversation=ConversationPages(data).page,
                    jobs=jobs or os.cpu_count() or 1)
    except NothingImported as err:
        raise click.ClickException(str(err)) from None
    except (OSError, sqlite3.Error) as err:
        raise click.ClickException(f"report not built: {err}") from None
    from rematch_trace.host.text import one_line

    for p in res.problems:
        click.echo(f"rematch: {one_line(p)}", err=True)
    if res.reread:
        # Not a problem (the pages are whole), but slower and not what issue 40 wants: said once.
        click.echo(f"rematch: {res.reread} session page(s) read their transcript again: the import stored no "
                   "conversation of it (a data folder from before rematch kept them, or a watch or cluster import); "
                   "a new import stores it", err=True)
    click.echo(
        f"{res.sessions} session(s): {res.written} page(s) written, {res.kept} unchanged, {res.removed} removed; "
        f"{res.read} trace(s) read, in {time.perf_counter() - started:.2f}s"
    )
    index = res.out / "index.html"
    click.echo(f"report: {one_line(index)}")
    if open_:
        # The site is what was asked for: no browser to show it is a note (with the URL), not a failure.
        open_in_browser(index)
    if res.problems:
        raise SystemExit(1)


def open_in_browser(index: Path) -> bool:
    """Open ``index`` as a ``file://`` URL in a browser (``$BROWSER``, else the system's); when none can be
    opened, say so in one line, with the URL to open by hand, and return ``False`` (the command still
    exits 0: the report was built)."""
    import webbrowser  # here: only --open needs it

    uri = index.resolve().as_uri()
    reason = "no browser could be started"
    try:
        if webbrowser.open(uri):
            return True
    except (webbrowser.Error, OSError) as err:
        reason = " ".join(str(err).split()) or reason
    from rematch_trace.host.text import one_line

    click.echo(one_line(f"rematch: report built but not opened ({reason}); open {uri}"), err=True)
    return False
