"""pi as it ships now: ``@earendil-works/pi-coding-agent`` (pinned 1.6.0, run by the Node 22 the rig
installs beside it from the npm registry: it needs 22.19 or later), with rematch's extension.

The same five prompts and the same checks as pi 0.73.1's (``test_rig_pi_live.py``, whose tests are
imported here and run against this module's session, as ``test_rig_omp_live.py`` does for omp):
live equals the import of pi's session file on every projection, the deny is reported blocked by
pi, an approved hold runs, the session start names 1.6.0, no error was logged.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rig_install import moved_pin
from rig_session import PiSession
from test_rig_pi_live import *  # noqa: F403  (pi's checks, run against pi 1.6.0's session: this module's pi_live)
from test_rig_pi_live import LiveOutcome, run_live


@pytest.fixture(scope="module")
def pi_live(pi_moved_exe: Path, tmp_path_factory: pytest.TempPathFactory) -> LiveOutcome:
    """The five prompts run once in pi 1.6.0 with the extension and the service; the session file imported."""
    session = PiSession(tmp_path_factory.mktemp("pi-moved-live"), pi_moved_exe, live=True,
                        version=moved_pin("pi").version)
    return run_live(session)
