"""The Claude Code plugin ``rematch-claude-code`` ships: rematch's live hooks and its ``/rematch-mark`` command.

``claude_plugin/`` is the template of a Claude Code plugin (``.claude-plugin/plugin.json``,
``hooks/hooks.json``, ``commands/`` and ``bin/rematch-hook``, the launcher). ``rematch hooks folder``
(:func:`rematch_trace.live.harness_folder.made_whole`) makes it whole in the data folder, with the
core's hook client beside the launcher::

    claude --plugin-dir "$(rematch hooks folder)"
"""

from __future__ import annotations

from pathlib import Path

#: The template's folder name inside this package.
FOLDER = "claude_plugin"


def template() -> Path:
    """The template folder as the package ships it (everything but the hook client)."""
    return Path(__file__).resolve().parent / FOLDER
