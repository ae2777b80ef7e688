"""``rematch sessions``: every session, newest first, filterable like the report."""

from __future__ import annotations

import click

from rematch_trace.cli.common import (
    check_harness,
    columns,
    data_option,
    echo_json,
    fit_lines,
    nothing_matched,
    readable,
    wide_option,
)
from rematch_trace.cli.listing import (
    FIT,
    chosen,
    filter_options,
    price_table,
    prices_option,
    summaries,
    table,
)


@click.command("sessions")
@data_option
@filter_options
@prices_option
@click.option("--project", help="Only sessions whose project (repository, else folder) contains this text.")
@click.option("--flat", is_flag=True, help="Every session on its own line, newest first, not grouped.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON (each session with parent, children, project).")
@wide_option
def sessions_cmd(out: str | None, harness: str | None, model: str | None, repo: str | None, domain: str | None,
                 flag: str | None, since: str | None, prices_file: str | None, project: str | None, flat: bool,
                 as_json: bool, wide: bool) -> None:
    """List every session (not only flagged ones) by project, each main session with its subagents,
    sidechains and compaction runs under it, newest first, with its counts."""
    from rematch_trace.cli.grouped import grouped_lines, in_project, whole, with_links
    from rematch_trace.report.model_names import ModelNames
    from rematch_trace.report.text import clip, when

    data = readable(out)
    check_harness(data, harness)
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
        if not entries:
            nothing_matched()
        return
    if not entries:
        filtered = any((harness, model, repo, domain, flag, since, project))
        nothing_matched("no sessions match" if filtered else "no sessions")
    width = columns(wide)
    if not flat:
        FIT[0] = width - 2 if width is not None else None  # the grouped lines are indented by two
        click.echo("\n".join(fit_lines(grouped_lines(entries, one), width)))
        return
    FIT[0] = width
    rows = [["started (UTC)", "harness", "session", "model", "inputs", "tool err", "redirects", "repository / folder",
             ]]
    for e in entries:
        s = e.json().get  # the summary's JSON as stored: no summary structured per session
        sid = str(s("session_id")) + (" (sub)" if s("agent_kind") == "sub" else "")
        rows.append([when(s("started"), "%Y-%m-%d %H:%M"), clip(s("harness"), 40), clip(sid, 200),
                     clip(one[m] if (m := s("model")) else "-", 40), str(s("inputs")), str(s("tool_errors")), str(s("redirects")),
                     clip(s("repo") or s("cwd") or "-", 80)])
    click.echo("\n".join(fit_lines([*table(rows, {4, 5, 6}), f"{len(entries)} session(s)"], width)))
