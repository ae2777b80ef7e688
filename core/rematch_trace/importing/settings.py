"""How an import runs: one settings object, from the command line down to a worker."""

from __future__ import annotations

from collections.abc import Callable

import attrs


@attrs.frozen
class ImportSettings:
    """What to write and how: passed whole to every layer of a batch import.

    ``jobs`` is the number of worker processes of the local pool (1 imports in
    this process); ``fsync`` makes every output durable before its ledger row
    commits.
    """

    events: bool = True
    redact: bool = True
    jobs: int = 1
    fsync: bool = False
    #: Redo every file asked, changed or not (``rematch import --force``).
    force: bool = False
    #: Each worker also runs the records it read through the plugin's ``conversation_items`` and hands the
    #: search index's rows back with the file's outcome (:attr:`FileOutcome.said`). Set by
    #: :func:`~rematch_trace.importing.batch.run_import`, whose own index sync takes them; not an output
    #: setting (the outputs are the same either way).
    search_rows: bool = False

    @property
    def outputs_key(self) -> str:
        """What these settings make of the outputs, as the ledger records it on each row.

        Two runs with the same key write the same outputs from the same bytes; a row whose
        key differs was made under other settings (or rules) and is redone.
        """
        from rematch_trace.security.versions import REDACTION_RULES, RISK_RULES, TRACE_RULES

        return (f"redact={int(self.redact)} events={int(self.events)} "
                f"rules={REDACTION_RULES}.{RISK_RULES}.{TRACE_RULES}")

def describe_change(before: str | None, now: str) -> str:
    """In words, how the settings an output was made with (``before``, a recorded key) differ from ``now``."""
    if not before:
        return "made before rematch recorded settings"
    old = dict(part.split("=", 1) for part in before.split() if "=" in part)
    if old.get("claim") == "again":  # the ledger's migration of sources claimed before pi had its own name
        return "claimed again (pi's sessions are harness pi, no longer omp)"
    new = dict(part.split("=", 1) for part in now.split() if "=" in part)
    words = {"redact": "redaction", "events": "events"}
    said = [f"{words[k]} {'on' if new.get(k) == '1' else 'off'} (was {'on' if old.get(k) == '1' else 'off'})"
            for k in ("redact", "events") if old.get(k) != new.get(k)]
    if old.get("rules") != new.get("rules"):
        said.append(f"rules {new.get('rules')} (were {old.get('rules')})")
    return ", ".join(said) or "other settings"


#: Settings that write the trace alone, unredacted (what a bare
#: :func:`~rematch_trace.importing.source_import.import_source` call does).
BARE = ImportSettings(events=False, redact=False)


#: Called with (files done, files to do) as an import proceeds.
Progress = Callable[[int, int], None]
