"""The ``rematch`` command."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import click
import orjson

from .errors import RematchError
from .output import DataDir, data_dir, safe_name


def _data(out: str | None) -> DataDir:
    return DataDir(data_dir(out))


def _echo_json(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode())


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rematch-trace", prog_name="rematch")
def cli() -> None:
    """Import coding-agent transcripts into one trace schema and flag sessions worth reflecting on."""


@cli.command("import")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--out", "out", type=click.Path(), help="Data folder (default: $REMATCH_HOME, else the user data dir).")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: cores).")
@click.option("--no-events", is_flag=True, help="Do not write the security event stream.")
@click.option("--no-redact", is_flag=True, help="Keep credentials in the trace (events are always redacted).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def import_cmd(
    paths: tuple[Path, ...], out: str | None, jobs: int | None, no_events: bool, no_redact: bool, as_json: bool,
    quiet: bool,
) -> None:
    """Import transcripts from PATHS (files or folders), or from every plugin's default location."""
    from .batch import Options, print_problems, run_import

    data = _data(out)
    options = Options(events=not no_events, redact=not no_redact, jobs=jobs or (os.cpu_count() or 1))
    bar: Any = None
    progress = None
    if not quiet and not as_json and sys.stderr.isatty():
        state: dict[str, Any] = {}

        def progress(done: int, total: int) -> None:
            if "bar" not in state:
                state["bar"] = click.progressbar(length=total, label="importing", file=sys.stderr)
                state["bar"].__enter__()
            state["bar"].update(done - state["bar"].pos)
            if done == total:
                state["bar"].__exit__(None, None, None)

    try:
        summary = run_import(list(paths), data, options, progress=progress)
    except RematchError as err:
        raise click.ClickException(str(err)) from None
    except OSError as err:
        raise click.ClickException(f"{err.filename or data.root}: {err.strerror or err}") from None
    except sqlite3.Error as err:
        raise click.ClickException(f"{data.ledger}: {err}") from None
    del bar
    print_problems(summary)
    report = summary.to_json()
    report["data"] = str(data.root)
    if as_json:
        _echo_json(report)
    else:
        files = report["files"]
        click.echo(
            f"{report['sessions_imported']} sessions imported from {files['imported'] + files['resumed']} files "
            f"({files['resumed']} continued), {files['unchanged']} unchanged, {files['skipped']} skipped, "
            f"{files['failed']} failed, in {report['seconds']:.2f}s"
        )
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(report["flag_reasons"].items()))
        click.echo(f"{report['sessions_flagged']} flagged" + (f" ({reasons})" if reasons else ""))
        if report["lines_skipped"]:
            click.echo(f"{report['lines_skipped']} lines skipped (see above)")
        click.echo(f"data: {data.root}")
    sys.exit(1 if summary.failed else 0)


@cli.command("plugins")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.option("--all", "show_all", is_flag=True, help="Include the built-in plugins.")
def plugins_cmd(as_json: bool, show_all: bool) -> None:
    """List installed plugins with their versions and hooks."""
    from .plugins import get_plugins, load_errors

    plugins = get_plugins(include_builtin=show_all)
    if as_json:
        _echo_json(plugins)
    else:
        if not plugins:
            click.echo("no plugins installed")
        for p in plugins:
            click.echo(f"{p['name']} {p.get('version', '')}".rstrip())
            click.echo(f"  hooks: {', '.join(p['hooks'])}")
    for name, err in load_errors:
        click.echo(f"rematch: plugin {name!r} failed to load: {err}", err=True)


@cli.command("flagged")
@click.option("--out", "out", type=click.Path(), help="Data folder.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def flagged_cmd(out: str | None, as_json: bool) -> None:
    """List flagged sessions with their reasons."""
    from .ledger import Ledger

    data = _data(out)
    if not data.ledger.exists():
        raise click.ClickException(f"nothing imported into {data.root} yet; run: rematch import")
    with Ledger(data.ledger) as ledger:
        rows = ledger.sessions(flagged=True)
    if as_json:
        _echo_json(
            [
                {
                    "harness": r["harness"], "session_id": r["session_id"], "agent_kind": r["agent_kind"],
                    "reasons": r["reasons"],
                    "seqs": {"redirect": r["redirect_seqs"], "error_cluster": r["error_cluster_seqs"],
                             "mark": r["mark_seqs"]},
                    "trace": r["trace_path"], "domain": r["domain"],
                }
                for r in rows
            ]
        )
        return
    if not rows:
        click.echo("no flagged sessions")
    for r in rows:
        click.echo(f"{r['harness']:<12} {r['session_id']:<44} {', '.join(r['reasons'])}")


def _settled(out: str | None) -> DataDir:
    """The data folder, with whatever a killed import left half-done put right first."""
    from .batch import settle

    data = _data(out)
    try:
        settle(data)
    except (OSError, sqlite3.Error):
        pass  # a read-only folder, say: read what is there
    return data


def _find_trace(data: DataDir, session: str) -> Path:
    exact = data.trace_path(session)
    if exact.exists():
        return exact
    matches = sorted(p for p in data.traces.glob("*.jsonl") if p.stem.startswith(safe_name(session)))
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise click.ClickException(f"{session!r} is ambiguous: {', '.join(p.stem for p in matches[:5])}")
    raise click.ClickException(f"no trace for session {session!r} in {data.traces}")


@cli.command("show")
@click.argument("session")
@click.option("--out", "out", type=click.Path(), help="Data folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw trace lines.")
def show_cmd(session: str, out: str | None, as_json: bool) -> None:
    """Print one session's trace readably (SESSION may be an id prefix)."""
    from .show import render

    path = _find_trace(_settled(out), session)
    if as_json:
        with open(path, "rb") as f:
            for raw in f:
                click.echo(raw.rstrip(b"\n").decode())
        return
    for line in render(path):
        click.echo(line)


@cli.command("audit")
@click.argument("session", required=False)
@click.option("--out", "out", type=click.Path(), help="Data folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def audit_cmd(session: str | None, out: str | None, as_json: bool) -> None:
    """List the risky actions of SESSION (or of every session), most severe first."""
    from .audit import audit, format_audit

    rows = audit(_settled(out).root, session)
    if as_json:
        _echo_json(rows)
        return
    click.echo(format_audit(rows))


@cli.group("lake")
def lake() -> None:
    """Maintain the data folder."""


@lake.command("migrate")
@click.option("--out", "out", type=click.Path(), help="Data folder.")
def lake_migrate(out: str | None) -> None:
    """Migrate the ledger to this version and re-decide every session's domain."""
    from .domain import decide_domain
    from .ledger import Ledger

    data = _data(out)
    if not data.ledger.exists():
        raise click.ClickException(f"no ledger in {data.root}")
    changed = 0
    with Ledger(data.ledger) as ledger:
        rows = ledger.sessions()
        for r in rows:
            domain = decide_domain(r["cwd"], r["repo"], r["repo_remote"])
            if domain != r["domain"]:
                ledger.set_domain(r["harness"], r["session_id"], domain)
                changed += 1
        version = ledger.version
    click.echo(f"ledger at schema {version}; {len(rows)} sessions, {changed} domains changed")


def main() -> None:
    """Entry point of the ``rematch`` console script.

    Whatever escapes the commands' own handling is still one line, not a
    traceback (``REMATCH_DEBUG=1`` shows it).
    """
    try:
        cli(prog_name="rematch")
    except Exception as err:
        if os.environ.get("REMATCH_DEBUG"):
            raise
        click.echo(f"rematch: internal error: {type(err).__name__}: {err} (REMATCH_DEBUG=1 shows where)", err=True)
        sys.exit(2)


if __name__ == "__main__":  # pragma: no cover
    main()
