"""What the commands share: the data folder, JSON output, finding a trace."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import click
import orjson

from rematch_trace.store.datafolder import DataDir, data_dir, safe_name


def data_folder(out: str | None) -> DataDir:
    """The data folder named by ``--out``, else ``$REMATCH_HOME``, else the platform's.

    A ``file://`` URL is its local path; any other URL is refused with the reason
    (see :func:`~rematch_trace.importing.fs.local_data_folder`).
    """
    from rematch_trace.errors import RematchError
    from rematch_trace.importing.fs import local_data_folder

    named = out or os.environ.get("REMATCH_HOME")
    try:
        return DataDir(data_dir(local_data_folder(named) if named else None))
    except RematchError as err:
        raise click.ClickException(str(err)) from None


def echo_json(value: Any) -> None:
    """Print ``value`` as indented JSON with sorted keys."""
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())


def settled(out: str | None) -> DataDir:
    """The data folder, with whatever a killed import or live writer left half-done put right first."""
    from rematch_trace.importing.batch import settle

    data = data_folder(out)
    try:
        settle(data)
    except (OSError, sqlite3.Error):
        pass  # a read-only folder, say: read what is there
    if (data.root / "live").is_dir():
        from rematch_trace.live.settle import settle_live

        try:
            settle_live(data)
        except (OSError, sqlite3.Error):
            pass
    return data


def find_trace(data: DataDir, session: str) -> Path:
    """The trace of ``session``: its exact id, else the one trace whose id starts with it."""
    exact = data.trace_path(session)
    if exact.exists():
        return exact
    matches = sorted(p for p in data.traces.glob("*.jsonl") if p.stem.startswith(safe_name(session)))
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise click.ClickException(f"{session!r} is ambiguous: {', '.join(p.stem for p in matches[:5])}")
    raise click.ClickException(f"no trace for session {session!r} in {data.traces}")
