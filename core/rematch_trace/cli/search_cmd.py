"""``rematch search QUERY``: find sessions by what was said and done in them (docs/search.md)."""

from __future__ import annotations

import re
import sqlite3
import sys
from typing import TYPE_CHECKING, Any

import click
import orjson

from rematch_trace.cli.common import (
    Fatal,
    NothingToRead,
    check_harness,
    data_option,
    echo_json,
    nothing_matched,
    open_ledger,
    readable,
    writable,
)
from rematch_trace.cli.listing import FLAG_CHOICES
from rematch_trace.store.search_kinds import KINDS

if TYPE_CHECKING:
    from pathlib import Path

    from rematch_trace.store.datafolder import DataDir

#: Where FTS5's snippet() marks a match (control characters no indexed text keeps: escaped on output).
_OPEN, _CLOSE = "\x02", "\x03"
_SPACE = re.compile(r"\s+")


def _flag_ok(row: dict[str, Any] | None, flag: str | None) -> bool:
    if flag is None:
        return True
    if row is None:
        return False
    if flag == "flagged":
        return bool(row["flagged"])
    if flag == "none":
        return not row["flagged"]
    return flag in row["reasons"]


def _snippet(text: str, open_: str, close: str) -> str:
    """FTS5's snippet as one safe line, its matches between ``open_`` and ``close``."""
    from rematch_trace.host.text import one_line

    out = []
    for i, part in enumerate(re.split(f"([{_OPEN}{_CLOSE}])", _SPACE.sub(" ", text))):
        if part == _OPEN:
            out.append(open_)
        elif part == _CLOSE:
            out.append(close)
        elif i % 2 == 0:
            out.append(one_line(part))
    return "".join(out).strip()


def _stale(path: Path, data: DataDir) -> bool:
    """Whether the index at ``path`` must be synced (missing, of another version, or behind the traces): asked
    on a read-only connection, as an up-to-date index (the usual case) is then never opened for writing."""
    from rematch_trace.store.search_index import SearchIndex

    if not path.is_file():
        return True
    try:
        with SearchIndex(path, readonly=True) as index:
            return index.stale(data)
    except sqlite3.Error:
        return True  # said by the sync, which opens it for writing


def _filter_rows(data: DataDir, harness: str | None, flag: str | None) -> dict[str, dict[str, Any]]:
    """Trace key -> the ledger's columns the filters read (``harness``: its sessions only; the reasons decoded
    when ``flag`` is a reason)."""
    from rematch_trace.store.datafolder import key_of

    if not data.ledger.exists():
        return {}
    sql = "SELECT trace_path, harness, repo, cwd, flagged, reasons FROM sessions"
    with open_ledger(data) as ledger:
        found = ledger.db.execute(sql + " WHERE harness = ?", (harness,)) if harness is not None \
            else ledger.db.execute(sql)
        rows = {}
        for trace_path, harness_, repo, cwd, flagged, reasons in found:
            key = key_of({"trace_path": trace_path})
            if key is not None:
                rows[key] = {"harness": harness_, "repo": repo, "cwd": cwd, "flagged": bool(flagged),
                             "reasons": orjson.loads(reasons) if flag not in (None, "flagged", "none") and reasons
                             else []}
    return rows


def _harnesses_of(data: DataDir, hits: set[tuple[str, str | None]]) -> dict[str, str]:
    """Trace key -> harness of the sessions behind ``hits`` (trace key, session id): looked up by the ledger's
    key (harness, session id), a few rows, not every session's."""
    from rematch_trace.store.datafolder import key_of

    wanted = {sid for _, sid in hits if sid is not None}
    if not hits or not data.ledger.exists():
        return {}
    keys = {key for key, _ in hits}
    out: dict[str, str] = {}
    with open_ledger(data) as ledger:
        for (name,) in ledger.db.execute("SELECT DISTINCT harness FROM sessions").fetchall():
            for sid in wanted:
                for (trace_path,) in ledger.db.execute(
                        "SELECT trace_path FROM sessions WHERE harness = ? AND session_id = ?", (name, sid)):
                    key = key_of({"trace_path": trace_path})
                    if key in keys:
                        out[key] = name
        if keys - out.keys():
            # A trace whose session id the index does not know (or another session's): every row read once.
            for trace_path, name in ledger.db.execute("SELECT trace_path, harness FROM sessions"):
                key = key_of({"trace_path": trace_path})
                if key in keys and key not in out:
                    out[key] = name
    return out


@click.command("search")
@click.argument("query", nargs=-1)
@data_option
@click.option("--harness", help="Only this harness (claude_code, codex, omp, ...).")
@click.option("--since", help="Only sessions started on or after this day (YYYY-MM-DD, UTC).")
@click.option("--repo", help="Only sessions whose repository or folder contains this text.")
@click.option("--flag", "flag", type=click.Choice(FLAG_CHOICES),
              help="Only flagged sessions with this reason; 'flagged' for every flagged one, 'none' for the others.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(KINDS),
              help="Only records of this kind (again for several): prompt, assistant, tool (a call's input), "
                   "output (its output or error), blocked, mark.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True, help="Hits shown at most.")
@click.option("--phrase", is_flag=True,
              help="QUERY is one phrase, its words in this order (the shell drops the quotes of \"git push\").")
@click.option("--rebuild", is_flag=True, help="Build the index again from every trace first.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def search_cmd(query: tuple[str, ...], out: str | None, harness: str | None, since: str | None, repo: str | None,
               flag: str | None, kinds: tuple[str, ...], limit: int, phrase: bool, rebuild: bool, as_json: bool) -> None:
    """Find QUERY in prompts, assistant text, tool calls' inputs and outputs, blocked calls and marks, best first.

    Every word must occur (in any order); "a quoted phrase" must occur as it is; word* matches
    the words it begins; a OR b matches either; -word leaves out the records that hold it (after
    --, or inside one quoted argument, so that it is not read as an option). The shell takes the
    quotes off "git push": write '"git push"', or --phrase. The index
    (search.sqlite in the data folder) holds redacted text only and is brought up to date
    first; --rebuild builds it again from every trace.
    """
    from rematch_trace.cli.listing import since_day
    from rematch_trace.host.text import one_line
    from rematch_trace.report.text import when
    from rematch_trace.store.search_index import QueryError, SearchIndex, hits_iter, index_path, to_query

    day = since_day(since)
    # After --, every argument is a word: an option typed there is searched for, never applied. Said, so
    # that `rematch search -- flaky --limit 3` does not quietly look for "limit" and "3".
    options = {o for p in click.get_current_context().command.params for o in p.opts}
    for q in query:
        if q.split("=", 1)[0] in options:
            click.echo(f"rematch: note: {one_line(q)} came after -- and is searched as a word; "
                       "options go before --", err=True)
    words = " ".join(query)
    if phrase:
        # One phrase of the words as typed (a quote inside cannot end it early).
        words = '"' + " ".join(w.replace('"', " ") for w in query) + '"'
    try:
        fts = to_query(words)
    except QueryError as err:
        raise click.UsageError(str(err)) from None
    if not fts and not rebuild:
        raise click.UsageError("say what to search for: rematch search WORDS")
    data = readable(out)
    check_harness(data, harness)
    path = index_path(data)
    try:
        if writable(data) and (rebuild or _stale(path, data)):
            from rematch_trace.importing import search_sources  # noqa: F401  (the sync's reader of sources)

            with SearchIndex(path) as index:
                if rebuild:
                    index.clear()
                figures = index.sync(data)
            if rebuild and not as_json:
                click.echo(f"index rebuilt: {figures.records} records of {figures.full} traces", err=bool(fts))
        elif rebuild:
            raise Fatal(f"{data.root} is read-only: the index cannot be rebuilt there")
        elif not path.is_file():
            raise NothingToRead(f"no search index in {one_line(data.root)} (a read-only folder; "
                                "it is made by rematch import or rematch search where the folder can be written)")
        if not fts:
            return
        filtered = any(v is not None for v in (harness, day, repo, flag))
        # The ledger's rows the filters read (each session's, its columns only); without a filter, only the
        # hits' harnesses are looked up, after the query (decoding every row cost more than the query).
        rows = _filter_rows(data, harness, flag) if filtered and (harness, repo, flag) != (None, None, None) else {}
        with SearchIndex(path, readonly=True) as index:
            keys: set[str] | None = None
            if filtered:
                started = index.started()
                keys = set()
                for key, st in started.items():
                    row = rows.get(key)
                    if harness is not None and (row is None or row["harness"] != harness):
                        continue
                    if repo is not None and (row is None or not any(
                            repo.lower() in (row.get(c) or "").lower() for c in ("repo", "cwd"))):
                        continue
                    if not _flag_ok(row, flag):
                        continue
                    if day is not None and (st is None or when(st, "%Y-%m-%d") < day):
                        continue
                    keys.add(key)
            try:
                hits = list(hits_iter(index, fts, keys, limit, kinds or None))
            except ValueError as err:
                raise click.UsageError(f"not a query SQLite can search for: {err}") from None
        harnesses = ({k: r["harness"] for k, r in rows.items()} if rows
                     else _harnesses_of(data, {(h.key, h.session_id) for h in hits}))
    except sqlite3.Error as err:
        raise Fatal(f"{path}: {err}") from None
    if as_json:
        echo_json([
            {"harness": harnesses.get(h.key), "session_id": h.session_id,
             "trace": f"traces/{h.key}.jsonl", "seq": h.seq, "kind": h.kind, "t": when(h.t),
             "snippet": _snippet(h.snippet, "«", "»"), "rank": h.rank}
            for h in hits
        ])
        if not hits:
            nothing_matched()
        return
    if not hits:
        nothing_matched(f"no match for {one_line(words)}")
    bold = sys.stdout.isatty()
    open_, close = ("\x1b[1m", "\x1b[0m") if bold else ("«", "»")
    for h in hits:
        harness_ = harnesses.get(h.key) or "-"
        click.echo(f"{when(h.t, '%Y-%m-%d %H:%M')}  {one_line(harness_)}  {one_line(h.session_id or h.key)}"
                   f"  #{h.seq if h.seq is not None else '?'} {h.kind}")
        click.echo(f"    {_snippet(h.snippet, open_, close)}")
    click.echo(f"{len(hits)} hit(s)" + (" (--limit reached)" if len(hits) == limit else ""))
