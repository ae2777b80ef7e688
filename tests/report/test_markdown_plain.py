"""The page's shortcut for plain prose (report/markdown.py ``_plain``) makes what markdown-it-py makes."""

from __future__ import annotations

import random

from rematch_trace.report.markdown import _plain, _renderer, markdown
from rematch_trace.report.text import visible

#: Characters of prose and of the Markdown that the shortcut must leave to the parser.
ALPHABET = list("ab  \n\n\t\"'.,:;1)(é\u00a0\u3000\u2028\u0085\x0b\x0cxyz$%@?/{}^|=-+#>~0*_`[]<>&\\!")


def test_the_shortcut_agrees_with_the_parser() -> None:
    rnd = random.Random(40)
    taken = 0
    for _ in range(20_000):
        text = visible("".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(1, 24))))
        got = _plain(text)
        if got is not None:
            taken += 1
            assert got == _renderer().render(text), repr(text)
    assert taken > 1_000  # the control: the shortcut is taken


def test_prose_takes_the_shortcut_and_markdown_does_not() -> None:
    prose = 'Let me look at the "build" folder first.\nThen run the tests.\n\nAll 87 pass.'
    assert _plain(prose) == _renderer().render(prose) == str(markdown(prose))
    for text in ("# Plan", "**bold**", "a `b`", "- item", "1. item", "a <b>", "a & b", "x\n===", "    code",
                 "a\\b", "[a](b)", "line  \nbreak", "> quote", "~~~\nfence\n~~~"):
        assert _plain(text) is None, text
