"""The Claude Code plugin ``rematch-claude-code`` ships: rematch's live hooks and its ``/rematch-mark`` command.

``claude_plugin/`` is the template of a Claude Code plugin (``.claude-plugin/plugin.json``,
``hooks/hooks.json``, ``commands/`` and ``bin/rematch-hook``, the launcher). ``rematch hooks folder``
(:func:`plugin_folder` from Python) makes it whole in the data folder, with the core's hook client
beside the launcher::

    claude --plugin-dir "$(rematch hooks folder)"
"""

from __future__ import annotations

from pathlib import Path

#: The template's folder name inside this package.
FOLDER = "claude_plugin"


def template() -> Path:
    """The template folder as the package ships it (everything but the hook client)."""
    return Path(__file__).resolve().parent / FOLDER


def plugin_folder(data: Path | None = None) -> Path:
    """The Claude Code plugin folder, made whole in ``data`` (by default
    the data folder its hooks write to: ``$REMATCH_HOME``, else the platform's)."""
    from rematch_trace.live.harness_folder import made_whole

    return made_whole(template(), "claude_code", data)
