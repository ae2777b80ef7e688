"""``rematch search``'s query forms: ``word*`` (prefix), ``a OR b``, ``-word`` (left out), and what a user
types never being FTS5 syntax. The forms through the real CLI on the shared corpus; the translation
against SQLite's own FTS5, on fixed cases and on generated text."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search import corpus_copy, imported, rematch, search

from rematch_trace.store.search_index import QueryError, to_query

ROWS = ["deploy the app", "deployment failed twice", "cannot find module foo", "the flaky test", "OR gate",
        "src/app.py was changed", "and or not"]


@pytest.fixture(scope="module")
def fts() -> sqlite3.Connection:
    """An FTS5 table with the index's tokenizer, holding :data:`ROWS`."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
    db.executemany("INSERT INTO t VALUES (?)", [(r,) for r in ROWS])
    return db


def found(db: sqlite3.Connection, query: str) -> list[str]:
    """The rows the user's ``query`` finds, in insertion order."""
    return [r[0] for r in db.execute("SELECT text FROM t WHERE text MATCH ? ORDER BY rowid", (to_query(query),))]


@pytest.mark.parametrize(("query", "rows"), [
    ("deploy", ["deploy the app"]),
    ("deplo*", ["deploy the app", "deployment failed twice"]),
    ('"src app"*', ["src/app.py was changed"]),
    ("flaky OR module", ["cannot find module foo", "the flaky test"]),
    ("the deploy OR flaky", ["deploy the app", "the flaky test"]),  # OR binds its two neighbours only
    ("deplo* -failed", ["deploy the app"]),
    ('the -"flaky test"', ["deploy the app"]),
    ("the -flaky -app", []),
    ("OR", ["OR gate", "and or not"]),  # alone, OR is the word
    ("or gate", ["OR gate"]),  # lower case: the word
    ("gate OR", ["OR gate"]),  # at the end: the word
    ('AND OR NOT ( "', ["and or not"]),  # FTS5's operators typed are words; "(" asks for nothing
    ("NEAR(deploy app)", []),  # "near(deploy" and "app)": text, not FTS5's NEAR
    ("deploy*app", []),  # a star inside a word is text
    ("x OR -failed", []),  # OR before a word left out is the word OR
])
def test_each_form_finds_what_it_says(fts: sqlite3.Connection, query: str, rows: list[str]) -> None:
    assert found(fts, query) == rows


def test_only_words_left_out_is_refused_and_punctuation_alone_asks_for_nothing() -> None:
    with pytest.raises(QueryError):
        to_query("-failed -deploy")
    assert to_query("( ) * -") == "" and to_query("") == ""


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*'abcAB "*-()ORNTDEA:^+.\t', "OR", " OR ", "NOT", "AND", "é"]), max_size=20).map("".join))
def test_whatever_is_typed_is_a_query_fts5_takes(text: str) -> None:
    """No typed text makes FTS5 raise a syntax error: every term is quoted, and what is not quoted is
    FTS5 syntax this module wrote."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(text, tokenize='unicode61 remove_diacritics 2')")
    db.execute("INSERT INTO t VALUES ('a b c or not and')")
    try:
        query = to_query(text)
    except QueryError:
        return
    if query:
        db.execute("SELECT count(*) FROM t WHERE text MATCH ?", (query,)).fetchone()


def test_the_forms_through_the_command(corpus_dir: Path, tmp_path: Path) -> None:
    """On the corpus's three small sessions: a prefix finds what the whole words do, OR finds the
    union, a word left out takes its records away, and a query of words left out is a usage error."""
    data = tmp_path / "data"
    imported(corpus_copy(corpus_dir, tmp_path / "src"), data)

    def hits(*args: str) -> list[dict[str, object]]:
        return search(data, *args)

    def n(*args: str) -> int:
        return len(hits(*args))

    # Hits are index rows (several may share a seq: a call's input and its output), so rows are counted.
    the, app, both = n("the"), n("myapp"), n("the", "myapp")
    assert 0 < both < min(the, app)  # words that meet in some records and not in others
    assert n("the", "OR", "myapp") == the + app - both
    without = hits("--", "the", "-myapp")
    assert len(without) == the - both
    assert not any("myapp" in str(h["snippet"]).lower() for h in without)
    assert n("the -myapp") == len(without)  # one argument: no option to mistake it for
    assert n("--", "myapp", "-the") == app - both
    assert n("use*") >= n("user") + 1 and n("use*") >= n("users")  # user, users, ...
    res = rematch("search", "--data", str(data), "--", "-the")
    assert res.returncode == 2 and "not only what to leave out" in res.stderr


def test_kind_keeps_the_hits_of_the_kinds_named(corpus_dir: Path, tmp_path: Path) -> None:
    """``--kind`` (again for several) keeps the hits of those kinds: together the kinds give every hit."""
    from rematch_trace.store.search_kinds import KINDS

    data = tmp_path / "data"
    imported(corpus_copy(corpus_dir, tmp_path / "src"), data)
    every = search(data, "the")
    by_kind = {k: search(data, "--kind", k, "the") if k in {h["kind"] for h in every} else [] for k in KINDS}
    assert all(h["kind"] == k for k, hits in by_kind.items() for h in hits)
    assert sum(len(hits) for hits in by_kind.values()) == len(every)
    assert len({h["kind"] for h in every}) >= 2  # the control: more than one kind to tell apart
    two = sorted({h["kind"] for h in every})[:2]
    assert len(search(data, "--kind", two[0], "--kind", two[1], "the")) == len(by_kind[two[0]]) + len(by_kind[two[1]])
    res = rematch("search", "--data", str(data), "--kind", "answer", "the")
    assert res.returncode == 2 and "'answer' is not one of" in res.stderr
