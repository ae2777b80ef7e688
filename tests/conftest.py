"""Shared fixtures: installed plugins never leak into tests; the shared corpus."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


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
