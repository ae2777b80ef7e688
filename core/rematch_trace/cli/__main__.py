"""``python -m rematch_trace.cli``: the same as the ``rematch`` command."""

from rematch_trace.cli import main

main()
