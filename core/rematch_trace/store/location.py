"""Where the data folder is: ``--out``, else ``$REMATCH_HOME``, else the platform's user data folder.

Apart from :mod:`rematch_trace.store.datafolder` so that a hook process (the
live client) can find the folder without importing the store.
"""

from __future__ import annotations

import os
from pathlib import Path


def data_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``--out``, else ``REMATCH_HOME``, else the platform's user data folder."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("REMATCH_HOME")
    if env:
        return Path(env).expanduser()
    return default_data_dir()


def default_data_dir() -> Path:
    """The platform's user data folder for rematch (used when neither ``--out`` nor ``REMATCH_HOME`` is)."""
    import platformdirs  # only when no folder is named: it costs a few milliseconds

    return Path(platformdirs.user_data_dir("rematch", appauthor=False))


__all__ = ["data_dir", "default_data_dir"]
