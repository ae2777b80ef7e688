"""The ledger writer's side of sessions that several files name (see :mod:`rematch_trace.store.claims`).

The workers decide which copy's trace stays; the ledger writer records a
session only if the trace there is still the one its outcome committed (a
later, fuller copy may have replaced it since), so the ledger always names
the file whose copy is on disk. Every file that offered a session is noted
with how much its copy held, and each conflict is said once, at the end of
the run, with the file whose copy was kept.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from rematch_trace.host.text import printable
from rematch_trace.store.datafolder import DataDir, stamp_of
from rematch_trace.store.ledger import Ledger, as_stored

if TYPE_CHECKING:
    from rematch_trace.importing.outcome import FileOutcome, SessionRow

#: How many other files a conflict line names before "and N more".
SHOWN = 3


def records_of(counts: Any) -> int:
    """How many trace records a session's ``counts`` (as the ledger keeps them) add up to."""
    if isinstance(counts, str):
        counts = orjson.loads(counts) if counts else {}
    return sum(v for v in counts.values() if isinstance(v, int)) if isinstance(counts, dict) else 0


@attrs.define
class Conflicts:
    """The sessions of this run that more than one file named: (harness, id) -> {path: records}."""

    data: DataDir
    #: Paths whose outcome this run recorded (their sessions were counted).
    recorded: set[str] = attrs.field(factory=set)
    offered: dict[tuple[str, str], dict[str, int]] = attrs.field(factory=dict)
    #: Sessions a file of this run offered but whose trace is another file's copy.
    not_kept: set[tuple[str, str]] = attrs.field(factory=set)

    def on_disk(self, session: SessionRow, stamp: tuple[int, int, int] | None) -> bool:
        """Whether the trace of ``session`` is still the one its outcome committed."""
        if stamp is None:
            return True  # an executor that does not stamp: trust it
        try:
            return stamp_of(os.stat(os.path.join(self.data.root_text, session.trace_path))) == tuple(stamp)
        except OSError:
            return False

    def note(self, harness: str, session_id: str, path: str, records: int) -> None:
        """``path`` offered ``session_id`` with a copy of ``records`` records."""
        self.offered.setdefault((harness, session_id), {})[path] = records

    def kept_sessions(
        self, ledger: Ledger, path: str, outcome: FileOutcome, owned: set[tuple[str, str]] | None = None
    ) -> tuple[list[SessionRow], list[Any]]:
        """The sessions of ``outcome`` to record, and the ledger rows (of other files, recorded
        this run) they replace, whose counts must come off the summary.

        ``owned``: the (harness, session id) the ledger gave the file when it was handed out.
        Such a session's row still names the file unless another file of this run took it, and
        the first file to take a session from another notes it here: so a session owned and
        never noted needs no look-up (most sessions of a rerun).
        """
        harness = outcome.harness or ""
        for c in outcome.conflicts:
            if c.kept == "theirs":
                self.note(harness, c.session_id, as_stored(path), c.mine)
                self.not_kept.add((harness, c.session_id))
        keep: list[SessionRow] = []
        replaced: list[Any] = []
        key = as_stored(path)
        for s in outcome.sessions:
            records = records_of(s.counts)
            if not self.on_disk(s, outcome.stamps.get(s.session_id)):
                self.note(harness, s.session_id, key, records)  # a fuller copy replaced it this run
                self.not_kept.add((harness, s.session_id))
                continue
            keep.append(s)
            if owned is not None and (harness, s.session_id) in owned and (harness, s.session_id) not in self.offered:
                continue  # its row names this file: nothing to note, nothing replaced
            prev = ledger.session_source(harness, s.session_id)
            if prev is not None and prev["source_path"] != key:
                self.note(harness, s.session_id, prev["source_path"], records_of(prev["counts"]))
                self.note(harness, s.session_id, key, records)
                if prev["source_path"] in self.recorded:
                    replaced.append(prev)
        self.recorded.add(key)
        return keep, replaced

    def lines(self, ledger: Ledger) -> list[dict[str, Any]]:
        """One entry per session more than one file named: the file kept, and the others."""
        out: list[dict[str, Any]] = []
        for (harness, sid), paths in sorted(self.offered.items()):
            owner = ledger.session_source(harness, sid)
            kept = owner["source_path"] if owner is not None else None
            if kept is not None:
                paths.setdefault(kept, records_of(owner["counts"]))  # type: ignore[index]
            others = sorted((p, n) for p, n in paths.items() if p != kept)
            if not others:
                continue  # one file only (its own earlier copy): no conflict
            out.append({
                "harness": harness, "session_id": sid, "kept": kept,
                "kept_records": paths.get(kept, 0) if kept else 0,
                "others": [{"path": p, "records": n} for p, n in others],
                # A file of this run whose copy is not the one kept: something was left out.
                "skipped_here": (harness, sid) in self.not_kept or any(p in self.recorded for p, _n in others),
            })
        return out


def conflict_text(c: dict[str, Any], shown: int = SHOWN) -> str:
    """One line for one conflict: the file whose copy was kept, over which others."""
    others = c["others"]
    named = ", ".join(f"{printable(o['path'])} ({o['records']} records)" for o in others[:shown])
    if len(others) > shown:
        named += f" and {len(others) - shown} more"
    if c["kept"]:
        kept = f"kept the copy of {printable(c['kept'])} ({c['kept_records']} records)"
        n = len(others) + 1
    else:
        kept, n = "kept the trace already there", len(others)
    return f"session {printable(c['session_id'])} is in {n} files; {kept} over {named}"


__all__ = ["Conflicts", "conflict_text", "records_of"]
