"""``rematch import``: transcripts in, traces, events and ledger rows out."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import click

from rematch_trace.cli.common import (
    EXIT_OK,
    EXIT_PARTIAL,
    Fatal,
    NothingToRead,
    data_folder,
    data_option,
    discard_made,
    echo_json,
    first_missing,
    read_only_error,
    require,
    require_valid_config,
    writable,
)
from rematch_trace.errors import NothingFound, RematchError


@click.command("import")
@click.argument("paths", nargs=-1)
@data_option
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: cores).")
@click.option("--no-events", is_flag=True, help="Do not write the security event stream.")
@click.option("--no-redact", is_flag=True, help="Keep credentials in the trace (events are always redacted).")
@click.option(
    "--scheduler", default=None, metavar="ADDRESS",
    help="Import on a Dask cluster: a scheduler's address (tcp://host:8786), or local:N for N workers here "
    "(--jobs is then unused). See docs/distributed.md.",
)
@click.option("--force", is_flag=True,
              help="Read every file asked again, changed or not (a rerun redoes on its own the files whose "
                   "outputs were made under other settings).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def import_cmd(
    paths: tuple[str, ...], out: str | None, jobs: int | None, scheduler: str | None, no_events: bool,
    no_redact: bool, force: bool, as_json: bool, quiet: bool,
) -> None:
    """Import transcripts from PATHS (files, folders or fsspec URLs), or from every plugin's default location.

    A rerun skips unchanged files without opening them, and redoes (saying so) the ones whose
    outputs were made with other settings: --no-redact, --no-events, older rules.
    """
    from rematch_trace.host.fs import is_url, local_path
    from rematch_trace.importing.batch import ImportSettings, Interrupted, print_problems, run_import

    if any(is_url(p) for p in paths):
        require("urls", "reading transcripts at URLs")
    try:
        sources = [p if is_url(p) else Path(p) for p in (local_path(p) for p in paths)]
    except RematchError as err:
        raise click.BadParameter(str(err), param_hint="PATHS") from None
    if scheduler is not None:
        from rematch_trace.importing.cluster import check_reachable, parse_scheduler

        try:
            parsed = parse_scheduler(scheduler)  # a typo fails before any folder is made
        except RematchError as err:
            raise click.BadParameter(str(err).removeprefix(f"--scheduler {scheduler}: "),
                                     param_hint="--scheduler") from None
        require("dask", "--scheduler")
        try:
            check_reachable(parsed)
        except RematchError as err:
            raise Fatal(str(err)) from None
    require_valid_config()  # a misspelt rule would decide domains silently wrong
    data = data_folder(out)
    # Made by this run, if it is: removed again when the run writes no output (nothing found, a failure).
    made = first_missing(data.root)
    settings = ImportSettings(events=not no_events, redact=not no_redact, jobs=jobs or (os.cpu_count() or 1),
                              force=force)
    progress = None
    state: dict[str, Any] = {}
    if not quiet and not as_json and sys.stderr.isatty():

        def progress(done: int, total: int) -> None:
            if "bar" not in state:
                state["bar"] = click.progressbar(length=total, label="importing", file=sys.stderr)
                state["bar"].__enter__()
            state["bar"].update(done - state["bar"].pos)
            if done == total:
                close_bar()

    def close_bar() -> None:
        """End the progress line: the cursor shown again (the bar hid it) and a new line after the bar, so
        whatever is printed next (an interrupt, an error) starts a line of its own."""
        bar = state.pop("bar", None)
        if bar is not None:
            bar.__exit__(None, None, None)

    if data.root.is_dir() and not writable(data):
        raise read_only_error(data, "rematch import")
    try:
        # The command prints counts and the files worth naming: no record per clean file.
        try:
            summary = run_import(sources, data, settings, progress=progress, scheduler=scheduler, name_clean=False)
        finally:
            close_bar()
    except Interrupted as stop:
        click.echo(
            f"rematch: interrupted ({signal.Signals(stop.signum).name}); what finished is recorded, "
            "the next run imports the rest",
            err=True,
        )
        if as_json and stop.summary is not None:
            # A script asked for JSON: it gets what finished, marked interrupted, even now.
            stopped = stop.summary.to_json()
            stopped["data"] = str(data.root)
            echo_json(stopped)
        sys.exit(128 + stop.signum)
    except NothingFound as err:
        discard_made(made, data)
        raise NothingToRead(str(err)) from None
    except RematchError as err:
        discard_made(made, data)
        raise Fatal(str(err)) from None
    except OSError as err:
        discard_made(made, data)
        raise Fatal(f"{err.filename or data.root}: {err.strerror or err}") from None
    except sqlite3.Error as err:
        discard_made(made, data)
        raise Fatal(f"{data.ledger}: {err}") from None
    if summary.sessions_total == 0:
        discard_made(made, data)  # nothing imported: no data folder that reading commands would find empty
    print_problems(summary)
    report = summary.to_json()
    report["data"] = str(data.root)
    if as_json:
        echo_json(report)
    else:
        for why, n in sorted(summary.redone.items()):
            click.echo(f"{n} file{'s' if n != 1 else ''} redone: {why}")
        files = report["files"]
        click.echo(
            f"{report['sessions_imported']} sessions imported from {files['imported'] + files['resumed']} files "
            f"({files['resumed']} continued), {files['unchanged']} unchanged, {files['skipped']} skipped, "
            f"{files['failed']} failed, in {report['seconds']:.2f}s"
        )
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(report["flag_reasons"].items()))
        click.echo(
            f"{report['sessions_flagged']} flagged this run" + (f" ({reasons})" if reasons else "")
            + f"; {report['flagged_total']} of {report['sessions_total']} sessions flagged in all"
        )
        if report["sessions_kept_live"]:
            click.echo(f"{report['sessions_kept_live']} sessions kept as captured live (their transcripts add nothing)")
        if report["lines_skipped"]:
            n = report["lines_skipped"]
            click.echo(f"{n} line{'s' if n != 1 else ''} skipped (see above)")
        from rematch_trace.host.text import one_line

        if data.root.is_dir():  # an import that made nothing left no folder (discard_made): none to name
            click.echo(f"data: {one_line(data.root)}")
        else:
            click.echo(f"no data folder was made ({one_line(data.root)}): nothing was imported")
    sys.exit(EXIT_PARTIAL if summary.failed else EXIT_OK)
