"""The Codex plugin folder ``rematch-codex`` ships: rematch's live hooks for Codex, bundled.

``codex_plugin/`` is a Codex plugin (``.codex-plugin/plugin.json``, ``hooks/hooks.json``, and
``bin/``: the fast hook client and its launcher) and a local marketplace of that one plugin
(``.agents/plugins/marketplace.json``, source ``./``), so Codex installs it with::

    codex plugin marketplace add "$(python3 -c 'import rematch_codex.folder as f; print(f.plugin_folder())')"
    codex plugin add rematch@rematch

Codex copies the folder into its plugin cache (``$CODEX_HOME/plugins/cache/...``) and gives each
hook command ``PLUGIN_ROOT``; symbolic links are not copied, so ``bin/rematch_hook.py`` is a copy
of the Claude Code plugin's client, kept identical by a test.
"""

from __future__ import annotations

from pathlib import Path

#: The folder's name inside this package.
FOLDER = "codex_plugin"


def plugin_folder() -> Path:
    """The Codex plugin folder (and marketplace root) this package ships."""
    return Path(__file__).resolve().parent / FOLDER
