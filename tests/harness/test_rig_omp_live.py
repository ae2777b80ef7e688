"""omp, as it ships (the pinned version, run by bun from the npm registry), with rematch's extension.

The same five prompts and the same checks as pi's (``test_rig_pi_live.py``, whose tests are
imported here and run against this module's session): ``rematch hooks install --harness omp``
puts the extension in the rig's agent folder, ``rematch serve`` runs for the data folder, omp runs
``omp -p --model rig/claude-rig-1`` against the scripted Anthropic Messages server
(``models.yml``). Live equals the import of omp's session file on every projection, the deny is
reported blocked by omp, an approved hold runs, no error was logged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rig_session import OmpSession
from test_rig_pi_live import *  # noqa: F403  (pi's checks, run against omp's session: this module's pi_live)
from test_rig_pi_live import SCRIPT as PI_SCRIPT
from test_rig_pi_live import LiveOutcome, run_live

#: pi's script, with the edit in the form omp's ``replace`` edit mode takes (``PI_EDIT_VARIANT``, set
#: by ``OmpSession``; omp's default, ``hashline``, takes a patch text that names line hashes).
SCRIPT = {**PI_SCRIPT, "tools": [*PI_SCRIPT["tools"][:4],
                                 {"tool": "edit", "input": {"path": "notes.txt", "old_string": "beta",
                                                            "new_string": "gamma"}},
                                 PI_SCRIPT["tools"][5]]}


@pytest.fixture(scope="module")
def pi_live(omp_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> LiveOutcome:
    """The five prompts run once in omp with the extension and the service; the session file imported."""
    return run_live(OmpSession(tmp_path_factory.mktemp("omp-live"), omp_exe, live=True), SCRIPT)
