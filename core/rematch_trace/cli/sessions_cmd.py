"""``rematch sessions``: every session, newest first, filterable like the report."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from rematch_trace.cli.common import data_option, echo_json, readable
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

    A price file that cannot be used stops the command with a one-line error (costs would be wrong).
    """
    from pathlib import Path

    from rematch_trace.report.prices import PriceError, load

    try:
        return load(data.root, Path(prices_file).expanduser() if prices_file else None)
    except PriceError as err:
        raise click.ClickException(f"prices not loaded: {err}") from None


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
    from rematch_trace.report.text import one_line

    for p in got.problems:
        click.echo(f"rematch: {one_line(p)}", err=True)
    return got.entries


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
    if since is None:
        day = None
    else:  # the report command's module (its options, its checks) is loaded only for ``--since``
        from rematch_trace.cli.report_cmd import since_day

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


def table(rows: list[list[str]], right: set[int]) -> list[str]:
    """Rows of cells as aligned lines; columns in ``right`` are right-aligned, the last is left unpadded."""
    # Column by column with C-level loops (``map``, ``str.rjust`` bound once): thousands of rows a listing.
    widths = [max(map(len, col)) for col in zip(*rows, strict=True)]
    pads = [(str.rjust if i in right else str.ljust, w) for i, w in enumerate(widths[:-1])]
    lines = []
    for r in rows:
        cells = [pad(c, w) for (pad, w), c in zip(pads, r, strict=False)]  # all but the last, unpadded
        cells.append(r[-1])
        lines.append("  ".join(cells).rstrip())
    return lines


@click.command("sessions")
@data_option
@filter_options
@prices_option
@click.option("--project", help="Only sessions whose project (repository, else folder) contains this text.")
@click.option("--flat", is_flag=True, help="Every session on its own line, newest first, not grouped.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (each session with parent, children, project).")
def sessions_cmd(out: str | None, harness: str | None, model: str | None, repo: str | None, domain: str | None,
                 flag: str | None, since: str | None, prices_file: str | None, project: str | None, flat: bool,
                 as_json: bool) -> None:
    """List every session (not only flagged ones) by project, each main session with its subagents,
    sidechains and compaction runs under it, newest first, with its counts."""
    from rematch_trace.cli.grouped import grouped_lines, in_project, whole, with_links
    from rematch_trace.report.model_names import ModelNames
    from rematch_trace.report.text import clip, when

    data = readable(out)
    prices = price_table(data, prices_file)
    # A model's one name, as the report and stats name it (a dated id folded): memoised, one lookup a model.
    one = ModelNames(prices)
    every = summaries(data, prices)
    # A filter selects whole sessions: a main session with what it started (cli/grouped.py).
    entries = in_project(whole(every, chosen(every, harness, model, repo, domain, flag, since)), project)
    if as_json:
        from rematch_trace.report.collect import with_json

        # `model` stays the trace's id; `model_folded` is the name the table shows.
        echo_json(with_json(entries, lambda js: with_links(entries, one)))
        return
    if not entries:
        filtered = any((harness, model, repo, domain, flag, since, project))
        click.echo("no sessions match" if filtered else "no sessions")
        return
    if not flat:
        click.echo("\n".join(grouped_lines(entries, one)))
        return
    rows = [["started (UTC)", "harness", "session", "model", "inputs", "tool err", "redirects", "repository / folder",
             ]]
    for e in entries:
        s = e.json().get  # the summary's JSON as stored: no summary structured per session
        sid = str(s("session_id")) + (" (sub)" if s("agent_kind") == "sub" else "")
        rows.append([when(s("started"), "%Y-%m-%d %H:%M"), clip(s("harness"), 40), clip(sid, 200),
                     clip(one[m] if (m := s("model")) else "-", 40), str(s("inputs")), str(s("tool_errors")), str(s("redirects")),
                     clip(s("repo") or s("cwd") or "-", 80)])
    click.echo("\n".join([*table(rows, {4, 5, 6}), f"{len(entries)} session(s)"]))
