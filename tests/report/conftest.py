"""Fixtures of the report tests: the hostile builders, a data folder imported from hostile transcripts, a browser."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The hostile suite's builders (transcripts of each harness, the CLI runner) are shared, not copied.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hostile"))

from page_check import Watched
from report_gen import build_hostile

#: Where screenshots are kept (outside the package; CI may collect the folder).
ARTIFACTS = Path(os.environ.get("REMATCH_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts"))
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")


@pytest.fixture(scope="session")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Hostile transcripts of the three harnesses, imported, and a report built from them."""
    return build_hostile(tmp_path_factory.mktemp("hostile-report"))


def chromium() -> str | None:
    """The system Chromium, if installed."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    return next((p for p in CHROMIUM_PATHS if os.access(p, os.X_OK)), None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Playwright driving the system Chromium (never a downloaded build).

    Outside CI the tests skip with a message when Chromium or Playwright is missing; in CI
    (``CI`` set) that is a failure, since ``.ci/run`` installs Chromium.
    """
    path = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None  # type: ignore[assignment]
    missing = "no system Chromium (apt-get install chromium)" if path is None else (
        "Playwright is not installed (pip install -e '.[test]')" if sync_playwright is None else None)
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests need a browser in CI: {missing}")
        pytest.skip(f"browser tests skipped: {missing}")
    assert sync_playwright is not None and path is not None
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def artifacts() -> Path:
    """The folder screenshots go to."""
    d = ARTIFACTS / "report"
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    """A page whose dialogs, page errors and console errors are recorded, closed after the test."""
    w = Watched(browser)
    try:
        yield w
    finally:
        w.page.close()
