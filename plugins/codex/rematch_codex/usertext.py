"""Which user-role texts a person typed, and which the harness injected.

Codex sends its own context as *user* messages too (codex-rs
``contextual_user_message.rs``), told apart by how they open. Only what is left
is a prompt (the same texts Codex mirrors as ``event_msg/user_message``).
"""

from __future__ import annotations

import re
from typing import Literal

Kind = Literal["typed", "instructions", "skill", "context"]

#: Openers of injected instruction files (AGENTS.md, v0.54+; user instructions before).
INSTRUCTION_OPENERS = ("# AGENTS.md instructions for", "<user_instructions>")
#: Openers of other harness context a user message may carry.
CONTEXT_OPENERS = (
    "<environment_context>",
    "<turn_aborted>",
    "<subagent_notification>",
    "<user_shell_command>",
    "<INSTRUCTIONS>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<model_switch>",
    "<realtime_conversation>",
    # Codex Desktop: the plugins it suggests, as a user-role message never mirrored as user_message.
    "<recommended_plugins>",
    # Desktop clients wrap an attached image's item in <image name=...> ... </image> texts.
    "<image name=",
    "</image>",
)
#: A text that is one block of a snake_case tag (``<some_context>...</some_context>``): how Codex
#: and its clients wrap what they inject. No typed prompt is that (HTML tags have no underscore).
WRAPPED_CONTEXT = re.compile(r"<([a-z]+(?:_[a-z]+)+)(?:\s[^>]*)?>.*</\1>", re.S)
#: Headings of client-added context that ends at :data:`IDE_REQUEST` (all context without it).
CONTEXT_HEADINGS = ("# Context from my IDE setup:", "# Files mentioned by the user:")
IDE_REQUEST = "## My request for Codex:"


def classify(text: str) -> tuple[Kind, str]:
    """The kind of one user-role text, and the typed part of it (``""`` if none).

    A client context block (IDE tabs, mentioned files) keeps only what follows
    its ``## My request for Codex:`` heading; without that heading it is all context.
    """
    s = text.lstrip()
    if not s.startswith(("<", "#")):
        return "typed", text
    if s.startswith(INSTRUCTION_OPENERS):
        return "instructions", ""
    if s.startswith("<skill>"):
        return "skill", ""
    if s.startswith(CONTEXT_OPENERS) or WRAPPED_CONTEXT.fullmatch(s.rstrip()):
        return "context", ""
    if s.startswith("# "):
        # IDE and desktop clients put context headings ("# Context from my IDE setup:",
        # "# Files mentioned by the user:") before the prompt's own heading.
        i = s.find(IDE_REQUEST)
        if i >= 0:
            return "typed", s[i + len(IDE_REQUEST) :].strip()
        if s.startswith(CONTEXT_HEADINGS):
            return "context", ""
    return "typed", text


def is_catalog(text: str) -> bool:
    """Whether a developer-message text carries instructions worth recording."""
    return "<skills_instructions>" in text or text.lstrip().startswith(INSTRUCTION_OPENERS)


_AGENTS_FOR = "# AGENTS.md instructions for "


def instructions_path(text: str) -> str | None:
    """The AGENTS.md file an ``# AGENTS.md instructions for <dir>`` message loads, else ``None``.

    Codex names the folder only; the file is that folder's ``AGENTS.md``
    (written with the folder's own separator).
    """
    s = text.lstrip()
    if not s.startswith(_AGENTS_FOR):
        return None
    folder = s[len(_AGENTS_FOR) :].split("\n", 1)[0].strip()
    if not folder:
        return None
    sep = "\\" if "\\" in folder and "/" not in folder else "/"
    return folder.rstrip("/\\") + sep + "AGENTS.md"
