"""Pre-classification: each rule matching and not matching, and the precedence."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace import prelabel
from rematch_trace.trace.prelabel import is_dropped_command, normalize_mark, skills_in


@pytest.mark.parametrize(
    "text,label",
    [
        ("/rematch mark correction the tests were wrong", "mark:correction"),
        ("/rematch  MARK Preference tabs please", "mark:preference"),
        ("/rematch mark scope", "mark:scope"),
        ("/rematch-mark scope too wide", "mark:scope"),
        ("/rematch:rematch-mark correction", "mark:correction"),
    ],
)
def test_mark(text: str, label: str) -> None:
    assert prelabel(text, None, False) == label


@pytest.mark.parametrize("text", ["/rematch mark other", "please /rematch mark correction", "/rematch markcorrection",
                                  "  /rematch mark scope", "\t/rematch-mark correction"])
def test_not_mark(text: str) -> None:
    assert not prelabel(text, None, False).startswith("mark:")


def test_mark_beats_interrupt() -> None:
    assert prelabel("/rematch mark scope", None, True) == "mark:scope"


def test_interrupt_beats_revert_and_negation() -> None:
    assert prelabel("no, revert that", None, True) == "interrupt"
    assert prelabel("hello there", None, True) == "interrupt"


@pytest.mark.parametrize(
    "text",
    ["please revert the change", "undo that", "roll back the migration", "rollback", "put it back",
     "run git restore .", "git checkout -- src/a.py", "git checkout --"],
)
def test_revert(text: str) -> None:
    assert prelabel(text, None, False) == "revert"


@pytest.mark.parametrize("text", ["reverted is fine", "git checkout main", "the rollbacks table", "undone"])
def test_not_revert(text: str) -> None:
    assert prelabel(text, None, False) != "revert"


@pytest.mark.parametrize(
    "text",
    ["no", "No, use the other file", "nope", "don't do that", "do not touch it", "stop", "not that one", "wrong",
     "that's not it", "that's wrong", "that is wrong", "this is wrong", "incorrect", "you didn't run it",
     "you did not", "not what i asked", "I said tabs", "actually use rust", "instead, write a test",
     "   no leading spaces count"],
)
def test_negation(text: str) -> None:
    assert prelabel(text, None, False) == "negation"


@pytest.mark.parametrize("text", ["know what", "nothing to add", "stopwatch app", "I think so", "is it wrong?", "notes"])
def test_not_negation(text: str) -> None:
    assert prelabel(text, None, False) != "negation"


def test_revert_beats_negation() -> None:
    assert prelabel("no, undo it", None, False) == "revert"


def test_negation_beats_reprompt() -> None:
    prev = "no please add a test for the parser module now"
    assert prelabel(prev, prev, False) == "negation"


def test_reprompt_threshold_and_minimum() -> None:
    prev = "add a unit test for the json parser module"
    assert prelabel("add a unit test for the json parser module please", prev, False) == "reprompt"
    # fewer than 6 tokens in the new input: never a reprompt
    assert prelabel("add a unit test", "add a unit test", False) == "none"
    # four after three is not a redo
    assert prelabel("four", "three", False) == "none"
    # below 0.6
    assert prelabel("write docs for the http client and the cli tool", prev, False) == "none"
    assert prelabel("add a unit test for json", None, False) == "none"


def test_reprompt_exact_edge() -> None:
    # 6 shared tokens, 10 in the union: 0.6 is enough
    prev = "a b c d e f g h"
    assert prelabel("a b c d e f i j", prev, False) == "reprompt"
    # 5 shared of 11: below
    assert prelabel("a b c d e x y z", "a b c d e f g h", False) == "none"


def test_normalize_mark_and_dropping() -> None:
    assert normalize_mark("/rematch-mark scope x") == "/rematch mark scope x"
    assert is_dropped_command("/model opus")
    assert is_dropped_command("!ls -la")
    assert is_dropped_command("%pwd")
    assert not is_dropped_command("/rematch-mark scope")
    assert not is_dropped_command("/skill:deploy now")
    assert not is_dropped_command("fix the /etc/hosts entry")
    # As typed, like the mark pattern: leading whitespace makes a slash line text (the seed trims for negation only).
    assert not is_dropped_command("  /model opus") and normalize_mark("  /rematch-mark scope") == "  /rematch-mark scope"
    assert prelabel("  no, not that", None, False) == "negation"


def test_skills() -> None:
    assert skills_in("/skill:deploy then /skill:notify and /skill:deploy") == ["deploy", "notify"]
    assert skills_in("path/skill:x is not one") == []


# The cheap tests stand in for the patterns exactly: texts of the revert words in every case,
# with the characters Unicode case folding matches with ASCII letters, run together with noise.
_REVERT_PIECES = ["revert", "REVERT", "Undo", "uNDO", "roll back", "rollback", "put it back", "PUT IT BACK",
                  "git restore", "git checkout --", "GIT CHECKOUT -- ", "re", "vert", "ro", "ll", "back", "git", " ",
                  "\n", "-", "é", "ß", "\u017f", "\u212a", "\u0130", "\u0131", "Ω", "x", "roll bac\u212a",
                  "g\u0131t restore", "git re\u017ftore", "G\u0130T RESTORE"]
_revert_texts = st.lists(st.sampled_from(_REVERT_PIECES) | st.text(max_size=3), max_size=12).map("".join)


@settings(max_examples=1000, deadline=None)
@given(_revert_texts)
def test_the_revert_precheck_never_hides_a_match(text: str) -> None:
    from rematch_trace.trace.prelabel import REVERT_RE, _may_revert

    assert _may_revert(text) or REVERT_RE.search(text) is None


@settings(max_examples=1000, deadline=None)
@given(_revert_texts | st.text() | st.text(st.characters(exclude_categories=())))
def test_tokens_are_the_token_pattern_s_matches(text: str) -> None:
    from rematch_trace.trace.prelabel import TOKEN_RE, tokens

    assert tokens(text) == set(TOKEN_RE.findall(text.lower()))
