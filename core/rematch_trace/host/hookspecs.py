"""The hooks a rematch plugin may implement.

Every hook's arguments are opt-in: an implementation may accept any subset of
the parameters, by name. Hooks marked *first result* stop at the first
implementation that returns something other than ``None``. The hooks that take
a ``source`` are called only for the plugin whose ``detect_source`` claimed it
(and for every hook wrapper), so a harness plugin never sees another harness's
files there. The core calls every hook through pluggy: wrappers,
``tryfirst``/``trylast`` and tracing work as in any pluggy host.
``docs/plugins.md`` documents each hook with its exact signature; a test keeps
the two in step.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from rematch_trace.host.conversation import Item
    from rematch_trace.host.source import Location, Problem, RawRecord, Source
    from rematch_trace.host.vocab import Neutral
    from rematch_trace.place.identity import Place

hookspec = pluggy.HookspecMarker("rematch")
hookimpl = pluggy.HookimplMarker("rematch")


@hookspec
def default_locations() -> Iterable[Location]:
    """Return the folders where this plugin's harness keeps transcripts by default.

    Called for ``rematch import`` without a path. Honour the harness's own
    environment overrides (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``...). Folders
    that do not exist may be returned; the core skips them.

    :return: locations; all plugins' answers are combined.
    """


@hookspec
def transcript_suffixes() -> Iterable[str]:
    """Name the file endings your harness's transcripts have beyond ``.jsonl``.

    The core looks for ``.jsonl``, ``.jsonl.zst`` and ``.jsonl.gz`` files; a harness
    that writes others (``.json`` session documents, say) names their endings
    here, and files ending so are handed to ``detect_source`` too. A file of such an
    ending that no plugin claims is passed over in silence (most are not transcripts).

    :return: endings, each starting with ``.``; all plugins' answers are combined.
    """


@hookspec(firstresult=True)
def detect_source(path: Path, head: bytes, hint: str | None) -> Source | None:
    """Claim a file for a harness, cheaply, without parsing it whole.

    :param path: the candidate file (``.jsonl``, ``.jsonl.zst``, ``.jsonl.gz``, or an
        ending a plugin named in ``transcript_suffixes``).
    :param head: up to the first 4 KiB of the file as stored (still compressed
        for compressed files).
    :param hint: the harness whose default location the file was found in, or
        ``None`` for a path the user named. A file found in a harness's default
        location is asked only of the plugin that owns that harness (the one whose
        ``default_locations`` name it), so ``hint`` is ``None`` or your own harness:
        a plugin may trust its own folders more than a path the user named.
    :return: a :class:`~rematch_trace.host.source.Source` for your harness, or
        ``None``. First result wins; the core records which plugin claimed the
        file, and asks only that plugin the per-source hooks.
    """


@hookspec(firstresult=True)
def source_members(path: Path) -> Iterable[Path] | None:
    """Name the other files a source's content lives in, when it is more than its own bytes.

    For a source that is not one append-only file: a database (with its write-ahead log), a
    session kept as a tree of small files. The core then tells whether the source changed from
    the sizes and modification times of the path and of every member (folders count: a file
    added to one changes its time), never from the path's bytes, and continues a changed source
    from its saved state with ``start`` the ``end`` of the last record read (a cursor the plugin
    gives meaning to, not a byte offset). Called for files discovered by a ``Location``'s
    ``names`` only (never for ``.jsonl`` files), before detection and in the worker.

    :param path: the candidate source file.
    :return: the member paths (those that do not exist are ignored; ``[]`` still makes the
        path a source with members), or ``None`` for an ordinary file. First result wins.
    """


@hookspec(firstresult=True)
def member_source(path: Path) -> Path | None:
    """Name the source a changed member file belongs to (``rematch watch``).

    Called for a changed file that is neither a ``.jsonl`` file nor matches a ``Location``'s
    ``names``: a database's write-ahead log, one message file of a session tree.

    :param path: the changed file.
    :return: the source file (as ``detect_source`` claims it), or ``None``. First result wins.
    """


@hookspec(firstresult=True)
def read_transcript(source: Source, start: int) -> Iterator[RawRecord | Problem] | None:
    """Stream the records of a source you claimed, in file order.

    Use :func:`rematch_trace.importing.reader.read_source` (plain, gzip or zstd,
    resumed at ``start``; bounded memory, line numbers, malformed-line
    reporting). Never read the whole file into memory.

    :param source: a source you claimed (called for the claiming plugin only).
    :param start: the byte offset to resume from (``0`` for a full read); for a source with
        members (``source_members``), the ``end`` of the last record the previous read gave.
    :return: an iterator of records and problems.
    """


@hookspec(firstresult=True)
def to_trace_records(
    source: Source, records: Iterator[RawRecord], state: dict[str, Any]
) -> Iterator[Neutral] | None:
    """Translate your harness's records into the core's neutral vocabulary.

    Yield :mod:`rematch_trace.host.vocab` records in source order. Keep everything
    you need across records in ``state`` (JSON-serialisable, bounded): the core
    saves it when the input runs out and hands it back when the file has grown,
    so the import continues where it stopped. Raise
    :class:`rematch_trace.errors.RestartImport` when the new bytes cannot
    continue the old state (the core then re-imports the file whole).

    :param source: a source you claimed (called for the claiming plugin only).
    :param records: the raw records (problems already reported by the core).
    :param state: your translation state; empty on a full import.
    :return: an iterator of neutral records.
    """


@hookspec(firstresult=True)
def identify_place(cwd: str) -> Place | None:
    """Identify the repository a working directory belongs to, from files on disk.

    The core's built-in implementation walks up to ``.git`` (folder, or a
    worktree's ``gitdir:`` file) and reads ``config``, ``HEAD`` and refs without
    a git process. Implement it only to identify places another way.

    :param cwd: the session's working directory as the transcript states it.
    :return: a :class:`~rematch_trace.place.identity.Place`, or ``None`` to defer.
        First result wins.
    """


@hookspec
def visible_entries(source: Source, text: str) -> Iterable[str] | None:
    """Name the entries (skills, rules) that an injected instruction text offers.

    Called for each :class:`~rematch_trace.host.vocab.Instructions` record, for
    the plugin that claimed the source; its answer (and any hook wrapper's) makes
    ``session_start.visible_entries``.

    :param source: the source the text came from.
    :param text: the instruction text.
    :return: entry ids, or ``None``.
    """


@hookspec(firstresult=True)
def classify_action(source: Source, tool: str, tool_input: Any) -> str | None:
    """Give a tool call its security action type.

    One of ``shell_exec``, ``file_read``, ``file_write``, ``file_edit``,
    ``network``, ``mcp``, ``subagent``, ``other``. Called for the plugin that
    claimed the source; sources whose plugin does not implement it (or answers
    ``None``) get ``other``.

    :param source: the source the call came from.
    :param tool: the tool's name as the harness records it.
    :param tool_input: the call's original input.
    :return: the action type. First result wins.
    """


@hookspec(firstresult=True)
def live_records(harness: str, event: dict[str, Any], t: int) -> list[Neutral] | None:
    """Translate one live hook payload of your harness into neutral records.

    Called by the live capture path (``rematch-hook <harness>``) once per hook
    invocation, with the payload the harness wrote to the hook's stdin. Yield
    what the payload states, in the order it happened: a
    :class:`~rematch_trace.host.vocab.Session` for the stream it belongs to
    (every time: the core ignores it once the stream is open), then
    :class:`~rematch_trace.host.vocab.UserMessage`,
    :class:`~rematch_trace.host.vocab.ToolStarted`,
    :class:`~rematch_trace.host.vocab.ToolResult`,
    :class:`~rematch_trace.host.vocab.CallBlocked`,
    :class:`~rematch_trace.host.vocab.AssistantMessage` +
    :class:`~rematch_trace.host.vocab.RunEnd`,
    :class:`~rematch_trace.host.vocab.Instructions`... The core sequences,
    synthesizes, redacts and writes; never keep the payload itself.

    :param harness: the harness the hook command was installed for (the
        argument of ``rematch-hook``). Routed like the import: only the plugin
        whose ``default_locations`` name the harness is asked (a plugin naming
        no location is probed with an empty payload and answers ``None`` for
        a harness not its own).
    :param event: the parsed payload (untrusted: check every field's type).
    :param t: the time the hook process started, unix milliseconds: the
        records' ``t`` (hook payloads carry no time of their own).
    :return: the records, or ``None`` when ``harness`` is not yours. First
        result wins.
    """


@hookspec(firstresult=True)
def hook_denial(harness: str, verdict: dict[str, Any]) -> bytes | None:
    """What your harness's hook prints to deny a tool call.

    Called by the hook command ``rematch-hook <harness>`` when the service's
    verdict on a call is ``deny`` (the call is already recorded as
    ``tool_blocked``), so the harness blocks the call the trace says was
    blocked. Without an answer the hook prints nothing and the harness runs
    the call. Never put the call's input in the output.

    :param harness: the harness the hook command was installed for (asked of
        the plugin that owns it, as ``live_records``).
    :param verdict: the service's answer (IPC v2 ``verdict``: ``decision``,
        ``reason``, ``explanation``, ``incident_id``...), untrusted like any
        peer's bytes: check every field's type. Its ``hook_event_name`` says
        which event the deny answers (``PreToolUse``, or ``PermissionRequest``:
        the harness asking its person to approve a call).
    :return: the exact bytes for the hook's stdout, or ``None`` when
        ``harness`` is not yours. First result wins.
    """


@hookspec(firstresult=True)
def harness_plugin_template(harness: str) -> Path | None:
    """Give the template of your harness's own plugin folder, for a harness that takes hooks that way.

    Optional. Claude Code and Codex install hooks from a plugin folder (a manifest,
    ``hooks/hooks.json``, ``bin/``). A template is such a folder whose hook commands run
    ``bin/rematch-hook <harness>``, a launcher that runs ``bin/rematch_hook.py`` beside it, without
    that file: ``rematch hooks folder --harness NAME`` writes the template with the core's one
    hook client there into ``<data>/harness-plugins/<harness>/`` and prints the path, for the
    harness's own plugin commands. Ship the template as package data.

    :param harness: the harness asked about (asked of the plugin that owns it, as ``live_records``).
    :return: the template folder, or ``None`` when your harness takes no plugin folder or
        ``harness`` is not yours. First result wins.
    """


@hookspec(firstresult=True)
def conversation_items(source: Source, records: Iterator[RawRecord]) -> Iterator[Item] | None:
    """Read what was said and shown in a source you claimed: the conversation view's and search's text.

    Optional. Yield :mod:`rematch_trace.host.conversation` items in the order the
    transcript holds them: a :class:`~rematch_trace.host.vocab.Session` opening
    each stream (its ``session_id`` as your ``to_trace_records`` gives it), then
    :class:`~rematch_trace.host.conversation.Said` (a prompt, or each piece of the
    assistant's visible text, in the order it came between its tool calls),
    :class:`~rematch_trace.host.conversation.Called`,
    :class:`~rematch_trace.host.conversation.Returned` (the whole output or error
    text), :class:`~rematch_trace.host.conversation.Compacted` and
    :class:`~rematch_trace.host.conversation.Spawned` (the subagent session a
    call started). Hand text over as the transcript holds it: the core redacts it
    (the events' redactor), folds it and renders it; it is never written to the
    trace. ``records`` may start part way into the file (a grown file, for the
    search index): items of a stream whose ``Session`` came before belong to the
    session that stream opened earlier, so keep no state the items need.

    A plugin that does not implement it leaves its sessions with "no
    conversation from this plugin" in ``rematch show --conversation`` and the
    report, and its tool outputs out of the search index; nothing else changes.

    :param source: a source you claimed (called for the claiming plugin only).
    :param records: the raw records your ``read_transcript`` gave, from byte 0
        (the view) or from where the index stopped (search). During an import they
        are the very records your ``to_trace_records`` was just given (the import's
        worker hands them on, not reading the file again): neither hook may change them.
    :return: an iterator of items, or ``None`` (no conversation).
    """
