"""What a batch import did: counts, and the files worth naming.

Unchanged files are counted, never listed, so a rerun over 100,000 files
holds no per-file record of them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import attrs

from rematch_trace.host.text import printable
from rematch_trace.importing.discovery import Searched

if TYPE_CHECKING:
    from rematch_trace.importing.outcome import FileOutcome, SessionRow

OUTCOMES = ("imported", "resumed", "unchanged", "skipped", "failed")
#: Problems kept per file for the report (all are counted).
PROBLEMS_PER_FILE = 10


@attrs.define(slots=True)
class FileResult:
    """One file that was read (or could not be): how it ended and what went wrong."""

    path: str
    harness: str | None
    outcome: str
    reason: str | None = None
    #: The first problems (a tuple: the empty one is shared by the many files that have none).
    problems: tuple[str, ...] = ()
    problem_count: int = 0
    skipped_lines: int = 0
    malformed: int = 0
    sessions: int = 0


@attrs.define
class Summary:
    """What a batch import did."""

    files: list[FileResult] = attrs.field(factory=list)
    counts: dict[str, int] = attrs.field(factory=lambda: dict.fromkeys(OUTCOMES, 0))
    #: harness -> {"files": n, "sessions": n, "flagged": n} of the files read this run.
    harnesses: dict[str, dict[str, int]] = attrs.field(factory=dict)
    sessions_imported: int = 0
    #: Sessions whose transcript was read but whose live trace was kept (docs/live-capture.md).
    sessions_kept_live: int = 0
    sessions_flagged: int = 0
    flag_reasons: dict[str, int] = attrs.field(factory=dict)
    #: What the ledger holds after the run: every session, and the flagged ones.
    sessions_total: int = 0
    flagged_total: int = 0
    #: One line per worker process that died during the run.
    worker_deaths: list[str] = attrs.field(factory=list)
    #: Per cluster worker (``--scheduler``): tasks, files, bytes and seconds busy.
    workers: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: The folders looked in (named ones, or every plugin's default locations).
    searched: list[Searched] = attrs.field(factory=list)
    #: Sessions more than one file named (see :mod:`rematch_trace.importing.conflicts`).
    conflicts: list[dict[str, Any]] = attrs.field(factory=list)
    #: Why files that were not new or changed were read again -> how many: their outputs were made
    #: under other settings (redaction, events, rule versions), or ``--force``.
    redone: dict[str, int] = attrs.field(factory=dict)
    #: The signal that stopped the run early, if one did.
    interrupted: int | None = None
    seconds: float = 0.0
    #: Plugins left out of a hook because they raised: one line each, said once.
    plugin_failures: list[str] = attrs.field(factory=list)
    #: Default folders of built-in harnesses whose plugin is absent: one line each.
    notes: list[str] = attrs.field(factory=list)
    #: Whether :attr:`files` lists the files read without a problem too (``False``: only the
    #: files worth naming, so a run over 100,000 files holds no record per clean file).
    name_clean: bool = True

    def count(self, outcome: str) -> int:
        """How many files ended with ``outcome``."""
        return self.counts.get(outcome, 0)

    def unchanged(self, harness: str | None) -> None:
        """Count a file skipped as unchanged."""
        self.counts["unchanged"] += 1

    def plugin_failed(self, lines: list[str]) -> None:
        """Note plugins left out of a hook; each worker reports its own, so each is kept once."""
        self.plugin_failures.extend(line for line in lines if line not in self.plugin_failures)

    def skip_unread(self, path: str, reason: str) -> None:
        """Count a named path that was skipped without a file being read (a folder with no transcripts)."""
        self.counts["skipped"] += 1
        self.files.append(FileResult(path, None, "skipped", reason))

    def uncount(self, harness: str | None, flagged: bool, reasons: list[str]) -> None:
        """Take back a session counted earlier in this run whose trace a fuller copy replaced,
        so sessions are counted as the ledger holds them: once."""
        self.sessions_imported -= 1
        h = self.harnesses.get(harness or "")
        if h is not None:
            h["sessions"] -= 1
            h["flagged"] -= int(flagged)
        if flagged:
            self.sessions_flagged -= 1
        for r in reasons:
            self.flag_reasons[r] = self.flag_reasons.get(r, 0) - 1
            if self.flag_reasons[r] <= 0:
                del self.flag_reasons[r]

    @property
    def nothing_found(self) -> bool:
        """Whether the run found no file at all to look at (changed or not)."""
        return not any(self.counts.values())

    def add(self, path: str, outcome: FileOutcome, sessions: list[SessionRow] | None = None) -> FileResult:
        """Count one file's outcome, and keep what is worth naming of it.

        ``sessions`` are the ones recorded (default: all the outcome has); another
        file's fuller copy of a session leaves it out.
        """
        recorded = outcome.sessions if sessions is None else sessions
        self.plugin_failed(outcome.plugin_failures)
        self.counts[outcome.outcome] += 1
        # Interned: each outcome that crossed a process brings its own copies of these few words.
        fr = FileResult(
            path, _intern(outcome.harness), sys.intern(outcome.outcome), outcome.reason, tuple(outcome.problems[:PROBLEMS_PER_FILE]),
            outcome.problem_count, outcome.skipped_lines, outcome.malformed, len(recorded),
        )
        if self.name_clean or not outcome.ok or fr.problem_count or fr.skipped_lines or fr.malformed:
            self.files.append(fr)
        if outcome.ok and outcome.harness is not None:
            h = self.harnesses.setdefault(outcome.harness, {"files": 0, "sessions": 0, "flagged": 0})
            h["files"] += 1
            h["sessions"] += len(recorded)
            self.sessions_kept_live += len(outcome.kept_live)
            for s in recorded:
                self.sessions_imported += 1
                if s.flagged:
                    h["flagged"] += 1
                    self.sessions_flagged += 1
                for r in s.reasons:
                    self.flag_reasons[r] = self.flag_reasons.get(r, 0) + 1
        return fr

    @property
    def failed(self) -> bool:
        """Whether anything was not imported: a file failed or was skipped, a line was skipped, a file's
        copy of a session was left for a fuller one, a plugin was left out, or nothing was found.

        Exit status 1 says so (see :mod:`rematch_trace.cli.common`).
        """
        return bool(self.plugin_failures) or self.nothing_found or any(c["skipped_here"] for c in self.conflicts) \
            or any(f.outcome in ("failed", "skipped") or f.skipped_lines for f in self.files)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able report."""
        return {
            "files": dict(self.counts),
            "harnesses": self.harnesses,
            "sessions_imported": self.sessions_imported,
            "sessions_kept_live": self.sessions_kept_live,
            "sessions_flagged": self.sessions_flagged,
            "flag_reasons": self.flag_reasons,
            "sessions_total": self.sessions_total,
            "flagged_total": self.flagged_total,
            "problems": sum(f.problem_count for f in self.files),
            "problem_lines": [printable(p) for f in self.files for p in f.problems],
            "lines_skipped": sum(f.skipped_lines for f in self.files),
            "failures": [{"path": printable(f.path), "reason": printable(f.reason or "")} for f in self.files if f.outcome == "failed"],
            "skipped": [{"path": printable(f.path), "reason": printable(f.reason or "")} for f in self.files if f.outcome == "skipped"],
            "worker_deaths": [printable(line) for line in self.worker_deaths],
            "plugin_failures": [printable(line) for line in self.plugin_failures],
            "notes": [printable(line) for line in self.notes],
            "workers": self.workers,
            "nothing_found": self.nothing_found,
            "conflicts": [
                {**c, "kept": printable(c["kept"]) if c["kept"] else None,
                 "others": [{"path": printable(o["path"]), "records": o["records"]} for o in c["others"]]}
                for c in self.conflicts
            ],
            "searched": [
                {"path": printable(p.path), "harness": p.harness, "exists": p.exists, "found": p.found}
                for p in self.searched
            ],
            "redone": dict(self.redone),
            "interrupted": self.interrupted,
            "seconds": round(self.seconds, 3),
        }


def _intern(text: str | None) -> str | None:
    return None if text is None else sys.intern(text)


def print_problems(summary: Summary, limit: int = PROBLEMS_PER_FILE, stream: Any = None) -> None:
    """One line per problem (file and line), at most ``limit`` per file; one per failed or skipped file."""
    from rematch_trace.host.text import one_line

    out = stream or sys.stderr

    def say(line: str) -> None:
        print(one_line(line), file=out)  # file names and reasons come from transcripts and the file system

    for line in summary.plugin_failures + summary.notes:
        say(f"rematch: {line}")
    for f in summary.files:
        for p in f.problems[:limit]:
            say(f"rematch: {p}")
        if f.problem_count > limit:
            say(f"rematch: {f.path}: {f.problem_count - limit} more problems")
        if f.outcome == "failed":
            say(f"rematch: {f.path}: failed: {f.reason}")
        elif f.outcome == "skipped":
            say(f"rematch: {f.path}: skipped: {f.reason}")
    for line in summary.worker_deaths:
        say(f"rematch: {line}")
    if summary.conflicts:
        from rematch_trace.importing.conflicts import conflict_text

        for c in summary.conflicts:
            say(f"rematch: {conflict_text(c)}")
    if summary.nothing_found:
        say(f"rematch: no transcripts found; looked in: {searched_text(summary.searched)}")


def searched_text(places: list[Searched]) -> str:
    """The folders an import looked in, each with its plugin and whether it exists."""
    if not places:
        return "nothing (no plugin names a default location; name files or folders: rematch import PATHS)"
    parts = []
    for p in places:
        notes = [p.harness] if p.harness else []
        if not p.exists:
            notes.append("no such folder")
        parts.append(printable(p.path) + (f" ({', '.join(notes)})" if notes else ""))
    return ", ".join(parts)
