"""Whether a typed ``/name`` is a custom command or skill (the model runs on it) rather than a built-in.

The import knows afterwards (a model response follows the command); a live ``UserPromptSubmit``
must decide at once. A custom command is a file Claude Code reads: ``<name>.md`` under
``.claude/commands`` of the session's folder or under the config folder's ``commands`` (a
namespace ``a:b`` is ``a/b.md``), or a skill folder ``skills/<name>/SKILL.md`` beside them. A
plugin's command is always spelled ``plugin:name`` and is a prompt too. The config folder is the
one the transcript lives in (``<config>/projects/<project>/<session>.jsonl``): the hook's
environment is not the service's. Only ``stat`` is used, never a read.
"""

from __future__ import annotations

import re
from pathlib import Path

#: A command name Claude Code accepts: segments of word characters, dots and dashes, ``:``-joined.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}){0,3}")


def _config_of(transcript: str) -> Path | None:
    """``<config>`` of ``<config>/projects/<project>/<session>.jsonl``."""
    if not transcript:
        return None
    p = Path(transcript)
    parents = p.parents
    if len(parents) >= 3 and parents[1].name == "projects":
        return parents[2]
    return None


def is_custom(name: str, cwd: str, transcript: str) -> bool:
    """Whether ``/name`` (without the slash) names a custom command, a skill or a plugin's command."""
    if not _NAME.fullmatch(name) or ".." in name:
        return False
    parts = name.split(":")
    roots = [Path(cwd) / ".claude"] if cwd else []
    config = _config_of(transcript)
    if config is not None:
        roots.append(config)
    for root in roots:
        try:
            if (root / "commands" / Path(*parts[:-1]) / f"{parts[-1]}.md").is_file():
                return True
            if len(parts) == 1 and (root / "skills" / name / "SKILL.md").is_file():
                return True
        except OSError:
            continue
    # A plugin's commands and skills are namespaced by the plugin; built-ins never are.
    return len(parts) > 1
