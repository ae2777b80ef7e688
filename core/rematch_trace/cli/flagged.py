"""``rematch flagged``: the sessions worth reflecting on."""

from __future__ import annotations

from typing import Any

import click

from rematch_trace.cli.common import (
    check_harness,
    data_option,
    echo_json,
    nothing_matched,
    readable,
    wide_option,
)


@click.command("flagged")
@data_option
@click.option("--since", help="Only sessions started on or after this day (YYYY-MM-DD, UTC).")
@click.option("--harness", help="Only this harness (claude_code, codex, omp, ...).")
@click.option("--min-severity", "min_severity", type=click.IntRange(0, 10), default=None,
              help="Only sessions with a risky action of this severity or more (0-10; see rematch audit).")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@wide_option
def flagged_cmd(out: str | None, since: str | None, harness: str | None, min_severity: int | None,
                as_json: bool, wide: bool) -> None:
    """List flagged sessions, newest first, with their date, folder, counts and reasons."""
    from rematch_trace.cli.listing import FIT, chosen, summaries, table
    from rematch_trace.report.prices import PriceError, load
    from rematch_trace.report.row_fields import reason_seqs
    from rematch_trace.report.text import clip, when

    # A killed import or live writer put right first.
    data = readable(out)
    check_harness(data, harness)
    try:
        prices = load(data.root)
    except PriceError:
        prices = load()  # this list shows no cost: a broken prices.yml is for stats and report to say
    entries = chosen([e for e in summaries(data, prices) if e.raw["flagged"]], harness, None, None, None, None, since)
    if min_severity is not None:
        from rematch_trace.report.audit import audit

        severe = {str(r.get("session")) for r in audit(data.root) if int(r.get("severity") or 0) >= min_severity}
        entries = [e for e in entries if e.facet("session_id") in severe]
    if as_json:
        from rematch_trace.report.collect import load_rows

        load_rows(entries)  # the rows' seqs and paths: one ledger open for all of them
        echo_json(
            [
                {
                    "harness": r["harness"], "session_id": r["session_id"], "agent_kind": r["agent_kind"],
                    "parent": e.facet("parent"),  # the main session that started it (docs/cli.md)
                    "reasons": r["reasons"],
                    "seqs": reason_seqs(r),
                    "trace": r["trace_path"], "domain": r["domain"], "cwd": r["cwd"],
                    "started": when(e.facet("started")), "inputs": e.facet("inputs"),
                    "tool_errors": e.facet("tool_errors"), "redirects": e.facet("redirects"),
                    "error_clusters": e.facet("error_clusters"), "marks": e.facet("marks"),
                }
                for e in entries
                for r in [e.row]
            ]
        )
        if not entries:
            nothing_matched()
        return
    if not entries:
        filtered = any(v is not None for v in (since, harness, min_severity))
        nothing_matched("no flagged sessions match" if filtered else "no flagged sessions")
    rows = [["started (UTC)", "harness", "session", "inputs", "tool err", "redirects", "clusters", "reasons", "folder"]]
    for e in entries:
        s = e.json().get  # the summary's JSON as stored: no summary structured per session
        got = s("reasons")
        reasons: list[Any] = got if isinstance(got, list) else []
        rows.append([when(s("started"), "%Y-%m-%d %H:%M"), clip(s("harness"), 40),
                     clip(str(s("session_id")) + (" (sub)" if s("agent_kind") == "sub" else ""), 200),
                     str(s("inputs")), str(s("tool_errors")), str(s("redirects")), str(s("error_clusters")),
                     clip(",".join(map(str, reasons)), 200), clip(s("cwd") or "-", 80)])
    from rematch_trace.cli.common import columns, fit_lines

    FIT[0] = width = columns(wide)
    click.echo("\n".join(fit_lines([*table(rows, {3, 4, 5, 6}), f"{len(entries)} flagged session(s)"], width)))
