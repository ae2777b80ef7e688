"""Shared fixtures and the suite's plumbing: installed plugins never leak into tests; the shared corpus;
the markers of the fast subset; how tests are grouped across pytest-xdist's worker processes.

Markers, set here from where a test is and what it uses (a new test needs none by hand):

- ``rig``: a test under ``tests/harness`` (the real harnesses, npm, ``unshare -n``);
- ``browser``: a test that uses the ``browser`` fixture (Playwright and the system Chromium).

``pytest -m "not rig and not browser"`` is the fast subset (README, "Two commands").

Workers (``-n auto --dist loadfile``, set in pyproject): every test of a module runs in the same
worker, so a module- or class-scoped fixture (a harness session of the rig, say) is made once per
run, never once per worker. A session-scoped fixture is made once in each worker that uses it: keep
one that costs more than a few seconds module-scoped in the one module that needs it, or cheap.
Modules are handed out longest first (:func:`pytest_collection_modifyitems`).

``--dist loadgroup`` (``xdist_group`` markers) would keep the modules sharing a session fixture on
one worker, but pytest-xdist 3.8 renames the grouped tests through an attribute pytest 9.2 no
longer reads, so the groups are silently ignored: ``loadfile`` is what works.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
CORPUS = ROOT.parent / "shared" / "corpus"
#: The harness rig: every test under it is marked ``rig``.
RIG = TESTS / "harness"
#: Session fixtures too cheap to move their modules to the front of the order: the rig's pinned
#: binaries (a lookup in the cache; the install itself runs once, under a file lock) and the browser
#: (a Chromium started in a second or two).
CHEAP_SESSION = frozenset({"claude_code_exe", "codex_exe", "pi_exe", "gemini_cli_exe", "gemini_cli_doc_exe",
                        "omp_exe", "opencode_exe", "ccusage_exe", "browser"})


def pytest_configure(config: pytest.Config) -> None:
    # Tests register the plugins they need; installed ones are not auto-loaded.
    sys._called_from_test = True  # type: ignore[attr-defined]


@pytest.fixture
def corpus_dir() -> Path:
    """The shared corpus; skipped when absent unless REMATCH_REQUIRE_CORPUS=1."""
    if not CORPUS.is_dir():
        if os.environ.get("REMATCH_REQUIRE_CORPUS") == "1":
            pytest.fail(f"REMATCH_REQUIRE_CORPUS=1 but {CORPUS} is missing")
        pytest.skip("shared corpus not present")
    return CORPUS


def _shared_session_fixtures(item: pytest.Item) -> list[str]:
    """The session-scoped fixtures defined under ``tests/`` that ``item`` uses (bar :data:`CHEAP_SESSION`)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    names = []
    for name, defs in info.name2fixturedefs.items():
        if defs[-1].scope != "session" or name in CHEAP_SESSION:
            continue
        code = getattr(defs[-1].func, "__code__", None)
        if code is not None and TESTS in Path(code.co_filename).resolve().parents:
            names.append(name)
    return sorted(names)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``rig`` and ``browser`` tests; order the modules for the workers: longest first.

    xdist (``--dist loadfile --no-loadscope-reorder``) hands whole modules to its workers in the
    order they come here: first the rig's modules (a minute or more each, mostly harness processes),
    then the modules around a session fixture of the tests' own (the report's ``hostile`` folder),
    then the rest in collection order, so that no long module starts last.
    """
    rank: dict[str, tuple[int, str, int]] = {}
    for i, item in enumerate(items):
        path = Path(item.path).resolve()
        rig = path == RIG or RIG in path.parents
        if rig:
            item.add_marker(pytest.mark.rig)
        if "browser" in item.fixturenames:
            item.add_marker(pytest.mark.browser)
        shared = _shared_session_fixtures(item)
        # Modules sharing a session fixture come one after the other (its first name keys them).
        key = (0, "", i) if rig else (1, shared[0], i) if shared else (2, "", i)
        rank[_module(item)] = min(rank.get(_module(item), key), key)
    items.sort(key=lambda it: rank[_module(it)])
