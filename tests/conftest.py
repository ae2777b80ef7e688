"""Shared fixtures and the suite's plumbing: installed plugins never leak into tests; the shared corpus;
the markers of the fast subset; how tests are grouped across pytest-xdist's worker processes.

Markers, set here from where a test is and what it uses (a new test needs none by hand):

- ``rig``: a test under ``tests/harness`` (the real harnesses, npm, ``unshare -n``);
- ``browser``: a test that uses the ``browser`` fixture (Playwright and the system Chromium);
- ``slow``: a test of a module in :data:`SLOW` (kills, faults, a cluster, huge lines), or Phoenix's.

``pytest -m "not rig and not browser and not slow"`` is the fast subset (README, "Two commands").

Each worker runs the ``rematch`` commands of the tests in a fork server (``tests/rematch_fork.py``):
a warm process forks each command, rather than a new interpreter importing everything again; a test
module whose text shows it watches the command's process (:data:`PROCESS_WATCHED`) keeps plain
subprocesses, and ``REMATCH_TEST_FORK=0`` turns the server off for a run.

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
import re
import sys
from functools import cache
from pathlib import Path

import pytest
import rematch_fork

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
CORPUS = ROOT.parent / "shared" / "corpus"
#: The harness rig: every test under it is marked ``rig``.
RIG = TESTS / "harness"
#: The modules marked ``slow`` (besides Phoenix's, marked in its module): each drives real processes
#: through real faults, where the time is the point (README, "Two commands").
SLOW = {
    "tests/hostile/test_hostile_kill.py": "imports SIGKILLed at random moments, rerun until whole",
    "tests/hostile/test_process_faults.py": "workers killed, stopped and starved mid-import",
    "tests/claude_code/test_held_run_continues.py": "a continued import killed at random moments",
    "tests/hostile/test_dask_cluster.py": "a real Dask cluster, its workers killed",
    "tests/hostile/test_hostile_memory.py": "300 MiB lines written and imported, peak memory measured",
}
#: Session fixtures too cheap to move their modules to the front of the order: the rig's pinned
#: binaries (a lookup in the cache; the install itself runs once, under a file lock) and the browser
#: (a Chromium started in a second or two).
CHEAP_SESSION = frozenset({"claude_code_exe", "codex_exe", "pi_exe", "gemini_cli_exe", "gemini_cli_doc_exe",
                        "omp_exe", "opencode_exe", "ccusage_exe", "browser"})


def pytest_configure(config: pytest.Config) -> None:
    # Tests register the plugins they need; installed ones are not auto-loaded.
    sys._called_from_test = True  # type: ignore[attr-defined]
    rematch_fork.install(_forkable_now)


#: What in a test module's text says that the process of a ``rematch`` command is itself looked at
#: (its pid, group, memory, a kill that must land before the next line, the modules it imports):
#: such a module's commands run as plain subprocesses, every other module's in the fork server.
PROCESS_WATCHED = re.compile(r"ru_maxrss|RUSAGE|wait4|/proc/\{|\.pid\b|psutil|killpg|getpgid|SIGKILL|SIGSTOP|"
                             r"\.kill\(|os\.kill|importtime|prlimit|getppid|pgrep|\bkills\b|sys\.modules")


@cache
def _watches_processes(module: str) -> bool:
    path = ROOT / module
    return not path.is_file() or bool(PROCESS_WATCHED.search(path.read_text(errors="replace")))


def _forkable_now() -> bool:
    """Whether the running test's module (``PYTEST_CURRENT_TEST``, set from its fixtures' set-up on)
    may have its ``rematch`` commands run in the worker's fork server (tests/rematch_fork.py)."""
    current = os.environ.get("PYTEST_CURRENT_TEST", "")
    return bool(current) and not _watches_processes(current.split("::", 1)[0])


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
        if _module(item) in SLOW:
            item.add_marker(pytest.mark.slow)
        shared = _shared_session_fixtures(item)
        # Modules sharing a session fixture come one after the other (its first name keys them).
        key = (0, "", i) if rig else (1, shared[0], i) if shared else (2, "", i)
        rank[_module(item)] = min(rank.get(_module(item), key), key)
    items.sort(key=lambda it: rank[_module(it)])
