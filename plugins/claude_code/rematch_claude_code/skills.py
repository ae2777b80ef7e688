"""Which rematch entries Claude Code's skill folders offer a session (``visible_entries``).

Claude Code offers the model the skills in the user's skills folder
(``$CLAUDE_CONFIG_DIR/skills``, else ``~/.claude/skills``) and in each
project's ``.claude/skills``, from the session's working directory up to its
repository's top. The seed's ``visible_entries`` are the rematch entries behind
those folders' links: a skill is a rematch entry when a ``rematch.json``
manifest sits beside its ``SKILL.md``, as for a Codex skill and a Claude Code
instruction file (:mod:`.entries`); its id is the manifest's ``id``, else the
folder's name.

Live, the ``SessionStart`` hook lists the folders (:func:`catalog`) into an
``Instructions`` record, and the core asks this plugin's ``visible_entries``
hook which entries that text offers (:func:`offered_entries`), as it does for a
Codex skills catalog. No transcript records the folders, so an import leaves
``visible_entries`` empty for Claude Code (the folders at import time may not be
the session's).
"""

from __future__ import annotations

import os

from .entries import manifest_id

#: First line of a catalog text: tells this plugin's own listing from any other instruction text.
CATALOG_HEADER = "rematch: Claude Code skill folders"
#: Bounds: skills listed per folder, project folders walked up, the catalog's skills in all.
MAX_PER_FOLDER = 256
MAX_LEVELS = 32
MAX_SKILLS = 512


def _config_dir() -> str:
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "")
    return configured if os.path.isabs(configured) else os.path.join(os.path.expanduser("~"), ".claude")


def skill_folders(cwd: str) -> list[str]:
    """The skills folders Claude Code reads for a session in ``cwd``: the user's, then the projects'."""
    folders = [os.path.join(_config_dir(), "skills")]
    if os.path.isabs(cwd):
        here = os.path.normpath(cwd)
        for _ in range(MAX_LEVELS):
            folders.append(os.path.join(here, ".claude", "skills"))
            if os.path.exists(os.path.join(here, ".git")):
                break  # the repository's top: Claude Code looks no higher
            parent = os.path.dirname(here)
            if parent == here:
                break
            here = parent
    return folders


def catalog(cwd: str) -> str | None:
    """The skill folders offered to a session in ``cwd``, as a catalog text; ``None`` when there are none.

    Only the listing is read (no skill's contents): a SessionStart hook stays cheap.
    """
    skills: list[str] = []
    for folder in skill_folders(cwd):
        try:
            names = sorted(os.listdir(folder))[:MAX_PER_FOLDER]
        except OSError:
            continue  # no such folder, or unreadable: it offers nothing
        for name in names:
            path = os.path.join(folder, name)
            if "\n" not in path and os.path.isfile(os.path.join(path, "SKILL.md")):
                skills.append(path)
            if len(skills) >= MAX_SKILLS:
                break
    return "\n".join([CATALOG_HEADER, *skills]) if skills else None


def offered_entries(text: str) -> list[str]:
    """The rematch entries a :func:`catalog` text lists, in order; ``[]`` for any other text."""
    lines = text.split("\n")
    if lines[0] != CATALOG_HEADER:
        return []
    out: list[str] = []
    for path in lines[1 : MAX_SKILLS + 1]:
        ident = manifest_id(path) if os.path.isabs(path) else None
        if ident is not None and ident not in out:
            out.append(ident)
    return out
