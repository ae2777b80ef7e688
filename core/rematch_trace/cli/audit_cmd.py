"""``rematch audit``: risky actions, most severe first.

A security command never reports all-clear for what it could not read: an
unknown session, a missing or empty data folder, or sessions imported without
their event stream are each one line on stderr and exit status 1.
"""

from __future__ import annotations

import click

from rematch_trace.cli.common import NothingToRead, data_option, echo_json, readable, session_stem


@click.command("audit")
@click.argument("session", required=False)
@data_option
@click.option("--since", help="Only actions on or after this day (YYYY-MM-DD, UTC).")
@click.option("--harness", help="Only this harness's sessions (claude_code, codex, omp, ...).")
@click.option("--min-severity", "min_severity", type=click.IntRange(0, 10), default=None,
              help="Only actions of this severity or more (0-10).")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
@click.option("--wide", is_flag=True, help="Every line whole (else on a terminal each is cut at its width).")
def audit_cmd(session: str | None, out: str | None, since: str | None, harness: str | None,
              min_severity: int | None, as_json: bool, wide: bool) -> None:
    """List the risky actions of SESSION (an id or id prefix; else of every session), most severe first."""
    from rematch_trace.cli.common import check_harness, columns, fit_lines, nothing_matched
    from rematch_trace.report.audit import audit, format_audit

    data = readable(out)
    check_harness(data, harness)
    if session is not None:
        stem = session_stem(data, session)
        if not (data.events / f"{stem}.jsonl").is_file():
            raise NothingToRead(f"no security events for session {stem} in {data.events} "
                                "(imported with --no-events? import it again without)")
        read, where = 1, f"session {stem}"
    else:
        stem = None
        read = sum(1 for _ in data.events.glob("*.jsonl")) if data.events.is_dir() else 0
        if not read:
            raise NothingToRead(f"no security events in {data.events} "
                                "(nothing imported, or imported with --no-events)")
        where = f"{read} session{'s' if read != 1 else ''}"
    from rematch_trace.cli.listing import since_day

    day = since_day(since)
    rows = [r for r in audit(data.root, stem)
            if (harness is None or r.get("agent") == harness)
            and (min_severity is None or int(r.get("severity") or 0) >= min_severity)
            and (day is None or str(r.get("occurred_at") or "")[:10] >= day)]
    if as_json:
        echo_json(rows)
        if not rows:
            nothing_matched()
        return
    if not rows:
        filters = " matching the filters" if any(v is not None for v in (since, harness, min_severity)) else ""
        nothing_matched(f"no risky actions{filters} found in the security events of {where}")
    # On a terminal each line is cut at its width (the features and the summary are last); --wide, a pipe
    # or a file get them whole.
    click.echo("\n".join(fit_lines(format_audit(rows).split("\n"), columns(wide))))
