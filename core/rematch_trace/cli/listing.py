"""What the commands that list sessions share: ``--since``, the filters, the prices, the summaries, the table.

``sessions``, ``stats``, ``flagged``, ``search``, ``audit`` and ``report`` take these from here, so no
command's module imports another's (and ``rematch --help`` loads only click with them: the summaries'
machinery is imported when a command runs).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from rematch_trace.report.collect import Entry
    from rematch_trace.report.prices import PriceTable
    from rematch_trace.store.datafolder import DataDir

F = TypeVar("F", bound=Callable[..., Any])

#: The values of ``--flag``: each flag reason (rematch_trace.trace.flags.REASONS), every flagged session, none.
FLAG_CHOICES = ("redirect", "error_cluster", "mark", "flagged", "none")

#: The ``--prices`` option of the commands that show costs.
prices_option = click.option(
    "--prices", "prices_file", type=click.Path(dir_okay=False),
    help="A price table (YAML, see docs/report.md) over rematch's own and the data folder's prices.yml.")


def price_table(data: DataDir, prices_file: str | None) -> PriceTable:
    """The prices in force: rematch's table, the data folder's ``prices.yml``, then ``--prices``.

    A price file that cannot be used stops the command with a one-line error, exit status 2 (a file with
    mistakes, as the README's exit table says: costs would be wrong).
    """
    from pathlib import Path

    from rematch_trace.cli.common import Fatal
    from rematch_trace.report.prices import PriceError, load

    try:
        return load(data.root, Path(prices_file).expanduser() if prices_file else None)
    except PriceError as err:
        raise Fatal(f"prices not loaded: {err}") from None


def summaries(data: DataDir, prices: PriceTable) -> list[Entry]:
    """Every session of ``data``, newest first, reusing the default report's cache when it matches.

    The cache is only read here; problems are printed as one line each on stderr.
    """
    import gc

    from rematch_trace.report.collect import CACHE_NAME, NothingImported, collect, read_cache

    # The thousands of summaries' dicts hold no cycles, yet set off collections that walk every one of them
    # for as long as the command runs (grouping and printing too, not only collect: 4% of a listing's
    # instructions): the collector is paused until the command's context closes.
    ctx = click.get_current_context(silent=True)
    if ctx is not None and gc.isenabled():
        gc.disable()
        ctx.call_on_close(gc.enable)
    try:
        cache = read_cache(data.root / "report" / CACHE_NAME)[0]
        # No report cache to match: the stamps (a digest of each row) are not needed.
        got = collect(data, cache, prices, stamps=bool(cache))
    except NothingImported as err:
        raise click.ClickException(str(err)) from None
    from rematch_trace.host.text import one_line

    for p in got.problems:
        click.echo(f"rematch: {one_line(p)}", err=True)
    return got.entries


def since_day(value: str | None) -> str | None:
    """``--since`` checked as a ``YYYY-MM-DD`` day (a click error otherwise)."""
    if value is None:
        return None
    try:
        return dt.date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)", param_hint="--since") from None


def filter_options(f: F) -> F:
    """The report's filters as options: harness, model, repository, domain, flag reason, since."""
    for opt in reversed((
        click.option("--harness", help="Only this harness (claude_code, codex, omp, ...)."),
        click.option("--model", help="Only sessions whose model contains this text."),
        click.option("--repo", help="Only sessions whose repository or folder contains this text."),
        click.option("--domain", help="Only this domain."),
        click.option("--flag", "flag", type=click.Choice(FLAG_CHOICES),
                     help="Only flagged sessions with this reason; 'flagged' for every flagged one, 'none' for "
                          "the others (the report's Flag filter: 'all' is no --flag)."),
        click.option("--since", help="Only sessions started on or after this day (YYYY-MM-DD, UTC)."),
    )):
        f = opt(f)
    return f


def chosen(entries: list[Entry], harness: str | None, model: str | None, repo: str | None, domain: str | None,
           flag: str | None, since: str | None) -> list[Entry]:
    """The entries the filters let through (a text filter matches case-insensitively)."""
    day = since_day(since)

    def has(text: str | None, part: str | None) -> bool:
        return part is None or (text is not None and part.lower() in text.lower())

    def text(e: Entry, name: str) -> str | None:
        value = e.facet(name)
        return value if isinstance(value, str) else None

    if not any(v is not None for v in (harness, model, repo, domain, flag, day)):
        return list(entries)
    out = []
    for e in entries:
        # The summaries' fields as the cache or the ledger holds them (no summary structured per session).
        if harness is not None and text(e, "harness") != harness:
            continue
        models = e.facet("models")
        names = " ".join(m for m in models if isinstance(m, str)) if isinstance(models, list) else ""
        if not has(names or text(e, "model"), model) or not (has(text(e, "repo"), repo) or has(text(e, "cwd"), repo)):
            continue
        if domain is not None and text(e, "domain") != domain:
            continue
        flagged = bool(e.facet("flagged"))
        if (flag == "flagged" and not flagged) or (flag == "none" and flagged):
            continue
        reasons = e.facet("reasons")
        if flag not in (None, "flagged", "none") and (not isinstance(reasons, list) or flag not in reasons):
            continue
        if day is not None and (text(e, "day") or "") < day:
            continue
        out.append(e)
    return out


#: The width :func:`table` fits its columns into (``None``: as wide as their cells), set by a command from
#: the terminal (:func:`~rematch_trace.cli.common.columns`) before it prints.
FIT: list[int | None] = [None]
#: A text column is never narrowed below this many characters (an id cut there is still a prefix that
#: ``rematch show`` takes).
MIN_COLUMN = 8
#: The short heads of the counts' columns, used when a table must fit a narrow terminal.
SHORT_HEADS = {"inputs": "in", "tool err": "err", "redirects": "redir", "clusters": "clus",
               "started (UTC)": "started", "repository / folder": "folder"}


def _narrowed(widths: list[int], right: set[int], fit: int) -> list[int]:
    """``widths`` with the widest text columns (not those in ``right``, not the first) narrowed, widest
    first, until the line fits ``fit`` characters or none can give more."""
    widths = list(widths)
    excess = sum(widths) + 2 * (len(widths) - 1) - fit
    while excess > 0:
        free = [i for i in range(1, len(widths)) if i not in right and widths[i] > MIN_COLUMN]
        if not free:
            break
        i = max(free, key=lambda k: (widths[k], k))  # the widest gives a character, then the next widest
        widths[i] -= 1
        excess -= 1
    return widths


def table(rows: list[list[str]], right: set[int]) -> list[str]:
    """Rows of cells as aligned lines; columns in ``right`` are right-aligned, the last is left unpadded.

    With :data:`FIT` set (a terminal), the widest text columns are narrowed to fit it, each cut cell
    ending with ``…``; ``--wide`` (or output to a pipe or a file) keeps every cell whole."""
    # Column by column with C-level loops (``map``, ``str.rjust`` bound once): thousands of rows a listing.
    widths = [max(map(len, col)) for col in zip(*rows, strict=True)]
    fit = FIT[0]
    if fit is not None and sum(widths) + 2 * (len(widths) - 1) > fit:
        rows = [[SHORT_HEADS.get(h, h) for h in rows[0]], *rows[1:]]
        widths = _narrowed([max(map(len, col)) for col in zip(*rows, strict=True)], right, fit)
        rows = [[c if len(c) <= w else c[: w - 1] + "…" for c, w in zip(r, widths, strict=True)] for r in rows]
    pads = [(str.rjust if i in right else str.ljust, w) for i, w in enumerate(widths[:-1])]
    lines = []
    for r in rows:
        cells = [pad(c, w) for (pad, w), c in zip(pads, r, strict=False)]  # all but the last, unpadded
        cells.append(r[-1])
        lines.append("  ".join(cells).rstrip())
    return lines
