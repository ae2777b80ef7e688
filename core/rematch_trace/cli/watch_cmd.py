"""``rematch watch``: keep every watched transcript's traces current as it is written."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from pathlib import Path

import click

from rematch_trace.cli.common import data_folder, data_option, require
from rematch_trace.errors import RematchError


@click.command("watch")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@data_option
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
              help="Worker processes for the first catch-up (default: cores); changes import in this process.")
@click.option("--no-events", is_flag=True, help="Do not write the security event stream.")
@click.option("--no-redact", is_flag=True, help="Keep credentials in the trace (events are always redacted).")
@click.option("--poll", is_flag=True, help="Poll instead of file system events (network or FUSE file systems).")
@click.option("--verbose", "-v", is_flag=True, help="Off a terminal, print a line per import.")
def watch_cmd(
    paths: tuple[Path, ...], out: str | None, jobs: int | None, no_events: bool, no_redact: bool, poll: bool,
    verbose: bool,
) -> None:
    """Import PATHS (or every plugin's default locations) now, then every change as it is written.

    Holds the data folder's import lock until Ctrl-C or SIGTERM, which stop it
    cleanly (exit status 0); `rematch import` on the same folder is refused meanwhile.
    """
    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.watch.status import Status
    from rematch_trace.watch.watcher import Watcher, WatchSettings

    require("watch", "rematch watch")  # before any folder is made
    data = data_folder(out)
    imports = ImportSettings(events=not no_events, redact=not no_redact, jobs=jobs or (os.cpu_count() or 1))
    settings = WatchSettings(imports=imports, force_polling=True if poll else None)
    status = Status(sys.stderr, verbose=verbose)
    try:
        signum = Watcher(data, list(paths), settings, status).run()
    except RematchError as err:
        status.close()
        raise click.ClickException(str(err)) from None
    except OSError as err:
        status.close()
        raise click.ClickException(f"{err.filename or data.root}: {err.strerror or err}") from None
    except sqlite3.Error as err:
        status.close()
        raise click.ClickException(f"{data.ledger}: {err}") from None
    how = signal.Signals(signum).name if signum is not None else "end of watch"
    click.echo(f"rematch: stopped ({how}); every finished import is recorded", err=True)
