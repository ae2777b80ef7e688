"""Fixtures of the export tests: the shared corpus imported once a session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from export_helpers import ROOT, rematch


@pytest.fixture(scope="session")
def corpus_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared corpus imported once (skipped when the corpus is absent)."""
    corpus = ROOT.parent / "shared" / "corpus"
    if not corpus.is_dir():
        if os.environ.get("REMATCH_REQUIRE_CORPUS") == "1":
            pytest.fail(f"REMATCH_REQUIRE_CORPUS=1 but {corpus} is missing")
        pytest.skip("shared corpus not present")
    data = tmp_path_factory.mktemp("corpus-data")
    got = rematch("import", str(corpus), "--data", str(data))
    assert got.returncode in (0, 1), got.stderr
    return data


