"""The Codex plugin ``rematch-codex`` ships: rematch's live hooks for Codex, bundled.

``codex_plugin/`` is the template of a Codex plugin (``.codex-plugin/plugin.json``,
``hooks/hooks.json``, and ``bin/rematch-hook``, the launcher) and of a local marketplace of that
one plugin (``.agents/plugins/marketplace.json``, source ``./``). ``rematch hooks folder
--harness codex`` (:func:`rematch_trace.live.harness_folder.made_whole`) makes it whole in the data
folder, with the core's hook client beside the launcher, and Codex installs it with::

    codex plugin marketplace add "$(rematch hooks folder --harness codex)"
    codex plugin add rematch@rematch

Codex copies the folder into its plugin cache (``$CODEX_HOME/plugins/cache/...``) and gives each
hook command ``PLUGIN_ROOT``; it drops symbolic links, hence a folder of real files.
"""

from __future__ import annotations

from pathlib import Path

#: The template's folder name inside this package.
FOLDER = "codex_plugin"


def template() -> Path:
    """The template folder as the package ships it (everything but the hook client)."""
    return Path(__file__).resolve().parent / FOLDER
