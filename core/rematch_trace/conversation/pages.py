"""The conversations of the report's session pages (``rematch report`` hands :meth:`ConversationPages.page`
to :func:`rematch_trace.report.build.build`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rematch_trace.store.datafolder import DataDir


#: A text of the page longer than this many characters or lines is folded (its whole kept in the page's
#: folder, loaded when unfolded: report/render.py Parts); the page itself shows its first PREVIEW characters.
PAGE_FOLD_CHARS = 400
PAGE_FOLD_LINES = 8
PREVIEW = 160


class ConversationPages:
    """The session pages' conversations (what the import stored of each source, :mod:`rematch_trace.store.
    conversation_rows`; a source of which nothing was stored read again through its plugin); the ledger is
    read once, on the first page (in each worker that renders pages)."""

    def __init__(self, data: DataDir) -> None:
        self.data = data
        self.rows: dict[str, dict[str, Any]] | None = None
        #: A source of several sessions (an opencode database), read once for all their pages.
        self.shared: dict[str, Any] = {}

    def page(self, key: str) -> dict[str, Any]:
        """What the session template needs of the conversation of ``key``: it, and how long texts fold."""
        # Imported on the first page: a rerun that writes no page reads no transcript.
        from rematch_trace.conversation.text import input_text
        from rematch_trace.conversation.view import ledger_rows, read_conversation

        if self.rows is None:
            self.rows = ledger_rows(self.data)
        return {"conv": read_conversation(self.data, key, rows=self.rows, shared=self.shared), "FOLD_CHARS": PAGE_FOLD_CHARS,
                "FOLD_LINES": PAGE_FOLD_LINES, "PREVIEW": PREVIEW, "INPUT": input_text}
