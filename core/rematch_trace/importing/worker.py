"""The worker side: import one file and describe it as a :class:`FileOutcome`.

The same function runs in this process (``--jobs 1``), in a local worker
process, or on a cluster's worker: it touches only the source file and the
data folder's output files, never the ledger.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from rematch_trace.errors import RematchError
from rematch_trace.host.facade import HEAD_BYTES, Host, PluginFailure
from rematch_trace.host.fs import stat_of
from rematch_trace.host.source import Source
from rematch_trace.importing.claimed import kept_source as kept_source  # (its users' name for these)
from rematch_trace.importing.claimed import use_host as use_host
from rematch_trace.importing.claimed import worker_host as worker_host
from rematch_trace.importing.settings import ImportSettings
from rematch_trace.store.datafolder import DataDir

if TYPE_CHECKING:
    # Loaded by the first file imported: the importing process loads this module for
    # worker_host, and a rerun that finds nothing to do imports no file.
    from rematch_trace.importing.outcome import FileOutcome, WorkItem
    from rematch_trace.importing.source_import import SessionOutcome
    from rematch_trace.store.claims import Claims
    from rematch_trace.store.rows import SessionRow
    from rematch_trace.store.search_rows import HandedTrace
    from rematch_trace.store.states import Detected


def _store_conversation(data: DataDir, path: str, said: tuple[int, int, object, bool] | None, offset: int,
                        rows: list[list[object]], whole: bool = False) -> None:
    """Keep the conversation rows of the source just imported (store/conversation_rows.py), read in the same
    pass as the search index's; a reading that failed, or whose records were not kept, removes the old ones
    (they would be stale: the readers say so and read the transcript)."""
    from rematch_trace.importing.search_sources import NO_CONVERSATION
    from rematch_trace.store import conversation_rows as stored
    from rematch_trace.store.ledger import as_stored

    source = as_stored(path)
    if said is None or said[3] or rows[:1] == [NO_CONVERSATION]:
        stored.forget(data, source)
        return
    try:
        # A document rewritten whole (Source.rewritten) gives every record on every reading: its rows replace.
        stored.write(data, source, 0 if whole else said[0], offset, rows)
    except OSError:
        stored.forget(data, source)


def warm(settings: ImportSettings) -> None:
    """Load what importing a file needs, in the process about to fork the local workers.

    The modules of the per-file import, the redaction and risk patterns, the saved
    states' and outcomes' converters and the domain table: about 0.15-0.25 s of CPU
    that each worker forked without them pays again for itself (a +1% rerun forks its
    workers once there is work, after planning), and that a forked worker shares with
    its parent when loaded before the fork.
    """
    import hashlib  # noqa: F401  (the fingerprints)

    from rematch_trace.importing import changes, source_import  # noqa: F401
    from rematch_trace.importing.outcome import converter as wire
    from rematch_trace.importing.pipeline import wiring
    from rematch_trace.place.domain import inference_table
    from rematch_trace.store.states import converter as states

    wiring(settings, worker_host())
    states()
    wire()
    inference_table()


@functools.lru_cache(maxsize=4)
def _data_dir(root: str) -> DataDir:
    return DataDir(Path(root))


def import_file(item: WorkItem, settings: ImportSettings, data_root: str) -> FileOutcome:
    """Import one file; a grown one is continued when the part already imported is unchanged.

    Every failure costs this file only: it is described, never raised. Plugins
    this process left out of a hook since the last file (they raised) travel
    with the outcome, to be said once.
    """
    outcome = _import_file(item, settings, data_root)
    isolated = worker_host().drain_isolated()
    return attrs.evolve(outcome, plugin_failures=isolated) if isolated else outcome


def unclaimed(host: Host, path: Path) -> str:
    """Why no plugin claimed ``path``: the plugin to install when it looks like a built-in harness's,
    else what its first bytes say it is (see :mod:`rematch_trace.importing.unclaimed`)."""
    from rematch_trace.host.known import missing_plugin
    from rematch_trace.host.loading import load_errors
    from rematch_trace.importing.unclaimed import reason_of

    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError as err:
        return f"cannot read: {err.strerror or err}"
    loaded = {name for name, _ in host.pm.list_name_plugin()}
    return missing_plugin(path, head, loaded, [name for name, _ in load_errors]) or reason_of(head)


def _detected(source: Source, hint: str | None) -> Detected:
    from rematch_trace.store.states import Detected

    parent = str(source.parent) if source.parent is not None else None
    return Detected(hint, source.plugin, source.agent_kind, source.compression, parent)


def _session_row(data: DataDir, harness: str, s: SessionOutcome,
                 traces: dict[str, HandedTrace]) -> SessionRow:
    """The ledger row of one session the import committed, with its consumers' handovers: the stored
    summary in the row, the index's rows of its trace put in ``traces`` (report/consumers.py)."""
    from rematch_trace.place.domain import decide_domain
    from rematch_trace.store.rows import SessionRow

    row = SessionRow(
        session_id=s.session_id,
        agent_kind=s.agent_kind,
        trace_path=data.relative(s.trace_path),
        events_path=data.relative(s.events_path) if s.events_path else None,
        flagged=s.flagged,
        reasons=s.reasons,
        seqs=s.seqs,
        counts=s.counts,
        cwd=s.cwd,
        repo=s.repo,
        repo_remote=s.repo_remote,
        domain=decide_domain(s.cwd, s.repo, s.repo_remote),
        parent=s.parent,
    )
    if s.consumers is None:
        return row
    from rematch_trace.report.consumers import Committed, row_fields

    key = s.trace_path.name[:-6]
    handed = s.consumers.handovers(Committed(key, s.trace_path, s.stamp, row_fields(harness, row)))
    s.consumers = None  # (what they held is handed)
    if "search_rows" in handed:
        traces[key] = handed["search_rows"]
    summary = handed.get("summary")
    return attrs.evolve(row, summary=summary) if summary is not None else row


def _import_file(item: WorkItem, settings: ImportSettings, data_root: str) -> FileOutcome:
    from rematch_trace.importing.changes import HEAD_FP, fingerprints, resumable
    from rematch_trace.importing.outcome import FileOutcome, failed
    from rematch_trace.importing.source_import import import_source
    from rematch_trace.store.claims import Claims

    host = worker_host()
    data = _data_dir(data_root)
    p = Path(item.path)
    grown = item.grown
    claims: Claims | None = None
    try:
        # A source with members (a database, a tree of files): its stamp is its members' too,
        # and its offset is the plugin's cursor, not bytes to fingerprint.
        from rematch_trace.host.fs import SUFFIXES

        members = None if item.path.endswith(SUFFIXES) else host.members(p)
        if members is None:
            size, mtime_ns, regular = stat_of(item.path)
        else:
            from rematch_trace.importing.changes import stat_with_members

            size, mtime_ns, regular = stat_with_members(item.path, members)
        if not regular:
            # A FIFO or device named on the command line would block or never end.
            return failed("not a regular file")
        checked = resumable(item.path, grown, size, members is not None)
        saved = checked.saved if checked is not None else None
        claims = Claims(data, item.owned_ids)
        source = (kept_source(host, saved, p, item.hint, grown.offset)
                  if saved is not None and grown and members is None else None)
        if source is None:
            source = host.detect(p, item.hint)
        if source is None:
            return FileOutcome("skipped", reason=unclaimed(host, p))
        result = import_source(
            host,
            source,
            data,
            settings,
            saved=saved if saved is not None and saved.harness == source.harness else None,
            claims=claims,
            detected=_detected(source, item.hint),
            own_saved=True,  # loaded just now, for this import alone
            keep_records=settings.search_rows,
        )
        # The search index's rows of the conversation items, made as the file was read: the index does
        # not read the file again (store/search_handover.py); the conversation store's rows beside them.
        said = result.said
        _store_conversation(data, item.path, said, result.offset, result.conversation, source.rewritten)
        result.conversation = []
    except FileNotFoundError as err:
        if err.filename in (None, item.path):
            return failed("no such file or folder")
        return failed(f"{type(err).__name__}: {err}")
    except PluginFailure as err:
        return failed(str(err))
    except (OSError, RematchError) as err:
        return failed(f"{type(err).__name__}: {err}")
    except Exception as err:  # a bug must cost one file, never the batch
        if os.environ.get("REMATCH_DEBUG"):
            import traceback

            traceback.print_exc()
        return failed(f"internal error: {type(err).__name__}: {err}")
    finally:
        if claims is not None:
            claims.close()
    handed: dict[str, HandedTrace] = {}
    sessions = [_session_row(data, source.harness, s, handed) for s in result.sessions if not s.kept_live]
    kept_live = [s.session_id for s in result.sessions if s.kept_live]
    # Here, while the file is fresh in the cache: the ledger writer records serially.
    # A continued file's head was just checked, and lies wholly in the part kept.
    skip = source.mutable_prefix
    same_head = saved is not None and grown and saved.head_skip == skip and grown.offset - skip >= HEAD_FP
    known = grown.head_fp if grown and same_head else None
    # The new end's tail from the bytes read for the check, when they hold it (a file grown by
    # less than changes.AHEAD): no second read of the file.
    tail = checked.tail_fp(result.offset, skip) if checked is not None and known is not None else None
    head = known
    if members is not None:
        head = tail = None  # nothing of its bytes is kept as they were: the stamp alone says a change
    elif source.rewritten:
        # Rewritten whole: the fingerprints are of the file as found (its offset is the plugin's own).
        head, tail = fingerprints(p, size, 0)
    elif tail is None:
        head, tail = fingerprints(p, result.offset, skip, known)
    return FileOutcome(
        "resumed" if result.resumed and saved is not None else "imported",
        harness=source.harness,
        sessions=sessions,
        kept_live=kept_live,
        problems=[str(pr) for pr in result.problems],
        problem_count=result.problem_count,
        skipped_lines=sum(1 for pr in result.problems if pr.skipped_data),
        malformed=result.malformed,
        offset=result.offset,
        head_fp=head,
        tail_fp=tail,
        saved=result.saved_blob or None,
        size=size,
        mtime_ns=mtime_ns,
        conflicts=result.conflicts,
        stamps={s.session_id: s.stamp for s in result.sessions if s.stamp is not None},
        said=said,
        traces=handed or None,
    )
