"""One name per model: the rule that folds a model id with a snapshot date into the model it names.

Anthropic names a model both with and without its snapshot date (``claude-sonnet-4-5`` and
``claude-sonnet-4-5-20250929`` are one model, billed alike), and a harness writes whichever it was given,
so the report and ``rematch stats`` would show one model as two rows. The rule: a trailing ``-YYYYMMDD``
or ``-YYYY-MM-DD`` is dropped (``anthropic/claude-sonnet-4-5-20250929`` → ``anthropic/claude-sonnet-4-5``),
unless the price table prices the dated id apart from the undated one (then the table says they differ,
and both names are kept). The price table's own lookup drops the same suffix
(:meth:`~rematch_trace.report.prices.PriceTable.lookup`), so the folded name always has the price the
dated one had. ``-latest`` is not folded: it names whichever snapshot is newest, not one model.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only a table passed in is used: `rematch sessions` imports no more than this module
    from rematch_trace.report.prices import PriceTable

#: A snapshot date at the end of a model id.
DATED = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")


def one_model(name: str, prices: PriceTable | None = None) -> str:
    """The name ``name``'s model goes by in tables and menus (see the module's docstring)."""
    undated = DATED.sub("", name)
    if undated == name or not undated:
        return name
    if prices is not None:
        # Only a table that names the dated id itself (not through the suffix rule) can tell them apart.
        tail = name.strip().lower().rsplit("/", 1)[-1]
        if prices.names_dated(tail) and prices.lookup(undated) != prices.models[tail]:
            return name
    return undated


class ModelNames(dict[str, str]):
    """:func:`one_model` with a memo: a figures pass names the same few models thousands of times, and
    ``rematch sessions`` once a session. A dict of the names met so far: ``names[name]`` is one C-level
    lookup for a name seen before; a new one is folded once (``__missing__``)."""

    def __init__(self, prices: PriceTable | None = None) -> None:
        super().__init__()
        self._prices = prices

    def __missing__(self, name: str) -> str:
        got = self[name] = one_model(name, self._prices)
        return got

    def __call__(self, name: str) -> str:
        """The folded name of ``name``."""
        return self[name]
