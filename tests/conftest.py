"""Shared fixtures and the suite's plumbing: installed plugins never leak into tests; the shared corpus;
the markers of the fast subset; how tests are grouped across pytest-xdist's worker processes.

Markers, set here from where a test is and what it uses (a new test needs none by hand):

- ``rig``: a test under ``tests/harness`` (the real harnesses, npm, ``unshare -n``);
- ``browser``: a test that uses the ``browser`` fixture (Playwright and the system Chromium).

``pytest -m "not rig and not browser"`` is the fast subset (README, "Two commands").

Groups (``--dist loadgroup``, set in pyproject): every test of a module runs in the same worker, so
a module- or class-scoped fixture (a harness session of the rig, say) is made once per run, not
once per worker. The modules whose tests use the same session-scoped fixture defined under
``tests/`` (the report's ``hostile`` data folder) are one group, so that fixture too is made once;
:data:`PER_WORKER` names the session fixtures cheap enough to be made in each worker. A test's own ``xdist_group`` marker wins. Groups are handed out longest first
(the rig's modules, then the other groups holding a session fixture, then the rest in collection
order), so no long group starts last.
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
#: Session fixtures that do not tie their users to one worker, being cheap to make again in each: the
#: rig's pinned binaries (a lookup in the cache; the install itself runs once, under a file lock) and
#: the browser (a second Chromium costs a second or two; the report's browser modules then spread).
PER_WORKER = frozenset({"claude_code_exe", "codex_exe", "pi_exe", "gemini_cli_exe", "gemini_cli_doc_exe",
                        "omp_exe", "opencode_exe", "browser"})


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
    """The session-scoped fixtures defined under ``tests/`` that ``item`` uses (bar :data:`PER_WORKER`)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    names = []
    for name, defs in info.name2fixturedefs.items():
        if defs[-1].scope != "session" or name in PER_WORKER:
            continue
        code = getattr(defs[-1].func, "__code__", None)
        if code is not None and TESTS in Path(code.co_filename).resolve().parents:
            names.append(name)
    return sorted(names)


class _Groups:
    """Modules joined into groups: two modules sharing a session fixture of the tests' own are one group."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, key: str) -> str:
        """The group's name: its smallest member's, so that every worker computes the same."""
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            key = self.parent[key]
        return key

    def join(self, a: str, b: str) -> None:
        """Put ``a`` and ``b`` in one group."""
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            lo, hi = sorted((ra, rb))
            self.parent[hi] = lo


def _given_group(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the xdist_group markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``rig`` and ``browser`` tests; put each test in its xdist group; longest groups first."""
    groups = _Groups()
    for item in items:
        path = Path(item.path).resolve()
        if path == RIG or RIG in path.parents:
            item.add_marker(pytest.mark.rig)
        if "browser" in item.fixturenames:
            item.add_marker(pytest.mark.browser)
        module = item.nodeid.split("::", 1)[0]
        for name in _shared_session_fixtures(item):
            groups.join(module, f"fixture:{name}")
    shared = {groups.find(k) for k in groups.parent if k.startswith("fixture:")}
    rank: dict[str, tuple[int, int]] = {}
    of: dict[str, str] = {}
    for i, item in enumerate(items):
        name = _given_group(item)
        if name is None:
            name = groups.find(item.nodeid.split("::", 1)[0])
            item.add_marker(pytest.mark.xdist_group(name=name))
        of[item.nodeid] = name
        # The rig's modules first (minutes each), then the groups around a session fixture, then
        # the rest; within a rank, the order of each group's first test in the collection.
        order = 0 if item.get_closest_marker("rig") else 1 if name in shared else 2
        rank[name] = min(rank.get(name, (order, i)), (order, i))
    items.sort(key=lambda it: rank[of[it.nodeid]])
