"""omp, as it ships (the pinned version, run by bun from the npm registry): the import side.

pi's import tests (``test_rig_pi.py``, imported here) against omp's session: the two prompts,
the edit in the form omp's ``replace`` edit mode takes (``test_rig_omp_live.SCRIPT``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rig_session import OmpSession
from test_rig_omp_live import SCRIPT as OMP_SCRIPT
from test_rig_pi import SCRIPT as PI_SCRIPT
from test_rig_pi import (  # the same tests, against omp's session (this module's fixture)
    PiOutcome,
    run_import,
    test_every_run_ends_cleanly,
    test_the_model_gets_each_calls_output,
    test_the_session_is_the_harness_that_wrote_it,
    test_transcript_imports_with_no_skipped_line,
)

__all__ = ["test_every_run_ends_cleanly", "test_the_model_gets_each_calls_output",
           "test_the_session_is_the_harness_that_wrote_it", "test_transcript_imports_with_no_skipped_line"]
#: pi's import script with omp's edit.
SCRIPT = {**PI_SCRIPT, "tools": OMP_SCRIPT["tools"]}


@pytest.fixture(scope="module")
def pi_outcome(omp_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> PiOutcome:
    """The two prompts run once in omp; the sessions imported."""
    return run_import(OmpSession(tmp_path_factory.mktemp("omp-rig"), omp_exe), SCRIPT)
