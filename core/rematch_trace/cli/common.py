"""What the commands share: the data folder, JSON output, finding a session, exit statuses.

Exit statuses (the README states them): 0 when the command did what it was
asked; 1 when something was skipped or failed, or there was nothing to read
(no data folder, nothing imported, no such session); 2 for a usage error or
a fatal one (the lock held by another import, a folder that cannot be
written, an internal error); 128+N when signal N stopped an import.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import click
import orjson

from rematch_trace.store.datafolder import DataDir, data_dir

#: Exit statuses: see the module docstring.
EXIT_OK, EXIT_PARTIAL, EXIT_FATAL = 0, 1, 2


class NothingToRead(click.ClickException):
    """Nothing there to read (no data folder, nothing imported, no such session): one line, exit status 1."""

    exit_code = EXIT_PARTIAL


class Ambiguous(click.ClickException):
    """An argument that names more than one thing (an id prefix): one line, exit status 2, as a usage error."""

    exit_code = EXIT_FATAL


class Fatal(click.ClickException):
    """The command cannot run at all (a held lock, a folder it cannot write): one line, exit status 2.

    ``details`` are further lines (a configuration file's mistakes, one each), printed indented under the
    message; each is escaped on its own (the group's ``invoke``), so a newline inside one still cannot
    forge a line, while the lines themselves stay lines.
    """

    exit_code = EXIT_FATAL

    def __init__(self, message: str, details: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.details = tuple(details)


#: The data folder option of every command: ``--data``, with ``--out`` kept as its alias (``rematch report``
#: alone keeps ``--out`` for the site it writes).
data_option = click.option(
    "--data", "--out", "out", type=click.Path(), metavar="DIR",
    help="Data folder (default: $REMATCH_HOME, else the user data folder; --out is the same).",
)


#: Python packages behind a feature: the module imported, its distribution's name.
PACKAGES: dict[str, tuple[str, str]] = {
    "report": ("jinja2", "Jinja2"),
    "markdown": ("markdown_it", "markdown-it-py"),
    "watch": ("watchfiles", "watchfiles"),
    "dask": ("distributed", "dask[distributed]"),
    "urls": ("fsspec", "fsspec"),
    "otlp": ("opentelemetry.exporter.otlp.proto.http", "opentelemetry-exporter-otlp-proto-http"),
}


def missing_package(module: str) -> bool:
    """Whether ``module`` cannot be imported (looked up, not imported: no import cost)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent missing, or a module set to None in sys.modules
        return True


def require(feature: str, what: str) -> None:
    """Stop with one line and exit status 2 when the package behind ``feature`` is missing.

    Called before anything is written: a missing package never leaves a data folder behind.
    """
    module, dist = PACKAGES[feature]
    if missing_package(module):
        raise Fatal(f"{what} needs the Python package {dist}, which is not installed in {_python()}: "
                    f"install rematch again from its checkout (pip install ./), or pip install '{dist}'")


def require_valid_config() -> None:
    """Stop with the configuration file's problems (each ``file:line: key: reason``), exit status 2."""
    from rematch_trace.place.domain import config_problems

    problems = config_problems()
    if problems:
        raise Fatal("the configuration file has mistakes (nothing was changed):", problems)


def _python() -> str:
    import sys

    return sys.prefix


def named_folder(out: str | None) -> DataDir:
    """The data folder named by ``--data``/``--out``, else ``$REMATCH_HOME``, else the platform's (nothing settled).

    A ``file://`` URL is its local path; any other URL is refused with the reason
    (see :func:`~rematch_trace.host.fs.local_data_folder`).
    """
    from rematch_trace.errors import RematchError
    from rematch_trace.host.fs import local_data_folder

    named = out or os.environ.get("REMATCH_HOME")
    try:
        data = DataDir(data_dir(local_data_folder(named) if named else None))
    except RematchError as err:
        raise click.ClickException(str(err)) from None
    if data.root.exists() and not data.root.is_dir():
        # Said here, before a command makes or reads anything in it (mkdir's bare "File exists" was all).
        raise Fatal(f"{data.root} is a file, not a data folder ({origin(out)}): name a folder, "
                    "or a path that does not exist yet")
    return data


def data_folder(out: str | None) -> DataDir:
    """The data folder of a command (:func:`named_folder`), settled first (:func:`settle_first`).

    Every command that reads the ledger comes through here, so none of them reads it
    before what a killed import or live writer left is put right, and none opens a
    ledger that is a symbolic link (:class:`Fatal`): SQLite would make its ``-wal`` and
    ``-shm`` files beside the link's target, outside the data folder.
    """
    data = named_folder(out)
    if data.ledger.is_symlink():
        raise Fatal(f"{data.ledger} is a symbolic link; rematch does not follow it out of the data folder "
                    "(put the ledger file itself there, or name its folder with --out)")
    settle_first(data)
    return data


def settle_first(data: DataDir) -> None:
    """Put right what a killed import (its journal) or live writer (a session ended with no ledger row,
    bytes past a committed length, a session silent for a day) left, when the folder can be written.

    Never raises for what it cannot settle: the command reads what is there, and the next one settles it.
    """
    if not data.root.is_dir() or not writable(data):
        return
    # Only a killed import leaves a journal entry: without one, the import machinery is not even loaded
    # (about a tenth of a second a reading command need not spend).
    if data.journal.is_dir() and any(data.journal.glob("*.jsonl")):
        from rematch_trace.importing.batch import settle

        try:
            settle(data)
        except (OSError, sqlite3.Error):
            pass
    if (data.root / "live").is_dir():
        from rematch_trace.live.settle import settle_live

        try:
            settle_live(data)
        except (OSError, sqlite3.Error):
            pass


def origin(out: str | None) -> str:
    """Where the data folder's name came from, for messages."""
    if out:
        return "--data"
    return "REMATCH_HOME" if os.environ.get("REMATCH_HOME") else "the default data folder"


def elsewhere_hint(out: str | None) -> str:
    """What to do about an empty data folder: import into it, or name the one that holds the imports."""
    if out:
        return f"; run: rematch import PATHS --data {out}"
    return ("; run: rematch import, or name the data folder you imported into with --data DIR "
            "or REMATCH_HOME=DIR")


def echo_json(value: Any) -> None:
    """Print ``value`` as indented JSON with sorted keys."""
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())


def first_missing(path: Path) -> Path | None:
    """The outermost folder of ``path`` (itself included) that does not exist yet, or ``None``."""
    path = path.absolute()
    if path.exists():
        return None
    top = path
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    return top


def discard_made(made: Path | None, data: DataDir) -> None:
    """Remove the folder this command made (``made``, from :func:`first_missing`) when no output is in it.

    A command that found nothing to import, or failed, leaves no data folder behind; a
    folder holding any trace or event stream is always kept.
    """
    import shutil

    if made is None or not made.is_dir():
        return
    for folder in (data.traces, data.events, data.pending):
        if folder.is_dir() and any(folder.iterdir()):
            return
    shutil.rmtree(made, ignore_errors=True)


def writable(data: DataDir) -> bool:
    """Whether this process may write the data folder (and its ledger, when there is one)."""
    if not os.access(data.root, os.W_OK):
        return False
    try:
        # A read-only mount passes os.access for root: ask the file system itself.
        return not (os.statvfs(data.root).f_flag & os.ST_RDONLY)
    except OSError:
        return True


def read_only_error(data: DataDir, what: str) -> Fatal:
    """The one line a writing command says in a data folder it cannot write."""
    return Fatal(f"the data folder {data.root} is read-only; {what} needs to write it "
                 "(make it writable, or pass --data DIR for another)")


def readable(out: str | None) -> DataDir:
    """The data folder a reading command reads: settled first when it can be written.

    A folder that is missing, or holds neither a ledger nor a trace, is :class:`NothingToRead`: a
    reading command never reports an empty result for something it could not read.
    """
    data = data_folder(out)
    if not data.root.is_dir():
        raise NothingToRead(f"nothing imported into {data.root} ({origin(out)}): no such folder{elsewhere_hint(out)}")
    # A folder with traces but no ledger holds sessions captured live: readable.
    if not data.ledger.is_file() and not (data.traces.is_dir() and any(data.traces.glob("*.jsonl"))):
        raise NothingToRead(f"nothing imported into {data.root} ({origin(out)}) yet{elsewhere_hint(out)}")
    return data


#: The name the commands used before reading got its checks.
settled = readable


def open_ledger(data: DataDir) -> Any:
    """The data folder's ledger, opened read-only (a reading command never writes, never migrates)."""
    from rematch_trace.store.ledger import Ledger

    try:
        return Ledger(data.ledger, readonly=True)
    except sqlite3.Error as err:
        raise Fatal(f"{data.ledger}: cannot read the ledger: {err}") from None


def session_stem(data: DataDir, session: str) -> str:
    """The trace file name (without ``.jsonl``) of the session ``session`` names, by the one id-prefix rule.

    See :mod:`rematch_trace.store.lookup`. No match: :class:`NothingToRead`;
    an ambiguous prefix: a usage error naming the candidates.
    """
    from rematch_trace.store.lookup import lookup

    found = lookup(data, session)
    if found.chosen is not None:
        return found.chosen
    if found.candidates:
        raise Ambiguous(f"'{session}' is ambiguous: {found.listing()}; give more of the id")
    raise NothingToRead(f"no session '{session}' in {data.root}")


def find_trace(data: DataDir, session: str) -> Path:
    """The trace of the session ``session`` names (an id, or an id prefix)."""
    return data.traces / f"{session_stem(data, session)}.jsonl"


def check_harness(data: DataDir, harness: str | None) -> None:
    """Refuse a ``--harness`` no installed plugin provides and no session of ``data`` has (a typo would
    otherwise answer with an empty list): a usage error, exit status 2, naming the known harnesses.

    The data folder's names are read first (one query; a plugin uninstalled since its sessions were
    imported still names them); the installed plugins' entry points only when that fails.
    """
    if harness is None:
        return
    known: set[str] = set()
    if data.ledger.is_file():
        try:
            with open_ledger(data) as ledger:
                known = {str(r[0]) for r in ledger.db.execute("SELECT DISTINCT harness FROM sessions")}
        except (Fatal, sqlite3.Error):
            known = set()
    if harness in known:
        return
    from rematch_trace.host.entry_points import GROUP, entry_points

    known |= {ep.name for ep in entry_points(GROUP)}
    if harness not in known:
        raise click.BadParameter(f"{harness!r} is no installed plugin's harness and no imported session's "
                                 f"(known: {', '.join(sorted(known)) or 'none'})", param_hint="'--harness'")


def nothing_matched(message: str | None = None) -> None:
    """Nothing found (no session, no hit, no risky action): ``message`` on stdout, exit status 1 (the README's
    exit table: nothing found is 1 for every reading command, as ``search`` has it)."""
    import sys

    if message is not None:
        click.echo(message)
    sys.exit(EXIT_PARTIAL)


#: ``--wide`` of the commands that print tables: every cell whole, whatever the terminal's width.
wide_option = click.option("--wide", is_flag=True,
                           help="Every cell whole (else a table on a terminal fits its width, 80 columns at least).")


def columns(wide: bool) -> int | None:
    """The width a table must fit: the terminal's (80 at least) when stdout is one and ``--wide`` is not
    given; ``None`` (cells whole) for a pipe or a file, which a script reads (``--json`` is for scripts)."""
    import shutil
    import sys

    if wide or not sys.stdout.isatty():
        return None
    return max(80, shutil.get_terminal_size((80, 24)).columns)


def fit_lines(lines: list[str], width: int | None) -> list[str]:
    """``lines`` each cut to ``width`` characters (a cut ends with ``…``); as they are with no width."""
    if width is None:
        return lines
    return [line if len(line) <= width else line[: width - 1] + "…" for line in lines]
