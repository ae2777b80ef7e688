"""``rematch`` with the stored summaries and the search index switched off (the import alone).

    python bench/no_follow.py import CORPUS --out DATA --jobs 2

What issue 40 measured as "the same with the index and stored summaries switched off": the
command as it is, with ``follow_outputs`` (what follows the outputs) a no-op and the workers
handing no search rows over.
"""

from __future__ import annotations

import importlib
import sys

import rematch_trace.importing.batch as batch


def _nothing(*_a: object, **_k: object) -> None:
    return None


if __name__ == "__main__":
    for name in ("rematch_trace.report.follow", "rematch_trace.store.follow"):  # where it is now, where it was
        try:
            setattr(importlib.import_module(name), "follow_outputs", _nothing)  # noqa: B010
        except ModuleNotFoundError:
            continue
    batch.HAND_OVER = False
    from rematch_trace.cli import main

    sys.argv = ["rematch", *sys.argv[1:]]
    main()
