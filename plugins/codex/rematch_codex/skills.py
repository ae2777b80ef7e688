"""Skills: the catalog Codex offers a session, and the skills it injects.

The catalog (v0.65+) is rendered as::

    ## Skills
    A skill is a set of local instructions ...
    ### Available skills
    - <name>: <description> (file: /abs/path/SKILL.md)
    ### How to use skills
    ...

first inside the AGENTS.md user-instructions message, from v0.115 as a
``<skills_instructions>`` block of the first developer message. Names may hold
a plugin prefix (``box:box-content-api``), so an entry's name ends at the first
``": "``, never at the first colon.

An explicitly invoked skill (v0.69+) is injected as a user message
``<skill>\\n<name>N</name>\\n<path>P</path>\\n[<resource_access>..</resource_access>\\n]CONTENT\\n</skill>``.
Nothing in the rollout gives its version or hash. A rematch entry is a skill
with a ``rematch.json`` manifest beside its file: its ``id``, ``version`` and
``content_sha256`` are the entry's. Otherwise the version comes from the
content's front matter and the sha is that of the content as injected.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import attrs
import orjson

_LOCATOR = re.compile(r"\((?:file|[A-Za-z][\w ]*? (?:package|resource)|[A-Za-z][\w ]*?): [^()]*\)\s*$")
_INJECTION = re.compile(
    r"\s*<skill>\n<name>([^<\n]*)</name>\n<path>([^<\n]*)</path>\n(?:<resource_access>.*?</resource_access>\n)?",
    re.S,
)
_MAX_SIDECAR = 64 * 1024
_FILE = re.compile(r"\(file: ([^()]*)\)\s*$")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")


def offered_skills(text: str) -> list[str]:
    """The skill names a catalog text offers, in order, without repeats."""
    names: list[str] = []
    for name, _ in _listed(text):
        if name not in names:
            names.append(name)
    return names


def _listed(text: str) -> list[tuple[str, str | None]]:
    """Each catalog entry's name and the file its ``(file: ...)`` locator names (``None`` if none)."""
    if "## Skills" not in text and "<skills_instructions>" not in text:
        return []
    listed: list[tuple[str, str | None]] = []
    in_section = False  # inside "## Skills" or <skills_instructions>
    listing = False  # inside "### Available skills"
    for line in text.splitlines():
        if line.startswith("<skills_instructions>") or line.startswith("## Skills"):
            in_section, listing = True, False
            continue
        if not in_section:
            continue
        if line.startswith("</skills_instructions>") or (line.startswith("## ") and not line.startswith("## Skills")):
            in_section = listing = False
            continue
        if line.startswith("### "):
            listing = line.startswith("### Available skills")
            continue
        if not line.startswith("- "):
            continue
        name, sep, _ = line[2:].partition(": ")
        locator = _LOCATOR.search(line)
        # Outside the listing (older catalogs had none) only lines ending in a locator count.
        if not sep or not name.strip() or (not listing and not locator):
            continue
        name = name.strip().strip("`")
        file = _FILE.search(line)
        if name:
            listed.append((name, file.group(1).strip() if file else None))
    return listed


@attrs.frozen(slots=True)
class Injection:
    """A skill injected into the conversation: its name, path, and content as injected."""

    name: str
    path: str
    content: str

    @property
    def sha(self) -> str:
        """sha256 (hex) of the content exactly as injected."""
        return hashlib.sha256(self.content.encode("utf-8", "surrogatepass")).hexdigest()


def parse_injection(text: str) -> Injection | None:
    """The skill a ``<skill>`` message injects, or ``None`` if it is not one."""
    m = _INJECTION.match(text)
    if m is None:
        return None
    content = text[m.end() :]
    end = content.rfind("</skill>")
    if end >= 0:
        content = content[:end]
        if content.endswith("\n"):
            content = content[:-1]
    name = m.group(1).strip()
    return Injection(name, m.group(2).strip(), content) if name else None


def front_matter_version(content: str) -> str | None:
    """``version:`` (or ``metadata.version``) from a SKILL.md's YAML front matter."""
    if not content.startswith("---"):
        return None
    end = content.find("\n---", 3)
    if end < 0:
        return None
    in_metadata = False
    nested: str | None = None
    for line in content[3:end].splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indented = line[0] in " \t"
        key, sep, value = line.strip().partition(":")
        if not sep:
            continue
        if not indented:
            in_metadata = key == "metadata"
            if key == "version" and value.strip():
                return _scalar(value)
        elif in_metadata and key == "version" and value.strip() and nested is None:
            nested = _scalar(value)
    return nested


def _scalar(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


@lru_cache(maxsize=256)
def _sidecar(skill_path: str) -> dict[str, Any] | None:
    """The ``rematch.json`` beside a skill file on disk (a rematch entry's manifest), if there is one."""
    try:
        sidecar = Path(skill_path).parent / "rematch.json"
        if not sidecar.is_file() or sidecar.stat().st_size > _MAX_SIDECAR:
            return None
        doc: Any = orjson.loads(sidecar.read_bytes())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _sidecar_version(skill_path: str) -> str | None:
    """``version`` from the ``rematch.json`` beside a skill file, if there is one."""
    doc = _sidecar(skill_path)
    version = doc.get("version") if doc is not None else None
    if isinstance(version, bool) or not isinstance(version, (str, int, float)):
        return None
    return str(version)


def _sidecar_id(skill_path: str, name: str) -> str:
    """The entry id a ``rematch.json`` gives (``id``), else the skill's name."""
    doc = _sidecar(skill_path)
    found = doc.get("id") if doc is not None else None
    return found if isinstance(found, str) and found.strip() else name


def _sidecar_sha(skill_path: str) -> str | None:
    """``content_sha256`` from the ``rematch.json`` beside a skill file, when it is a sha256."""
    doc = _sidecar(skill_path)
    sha = doc.get("content_sha256") if doc is not None else None
    return sha.lower() if isinstance(sha, str) and _SHA256.fullmatch(sha) else None


def skill_version(injection: Injection) -> str | None:
    """The loaded skill's version: its front matter, else a ``rematch.json`` beside it."""
    return front_matter_version(injection.content) or (
        _sidecar_version(injection.path) if injection.path else None
    )


@attrs.frozen(slots=True)
class Loaded:
    """A loaded skill as a ``loaded_entries`` item."""

    id: str
    version: str | None
    sha: str


def loaded_entry(injection: Injection) -> Loaded:
    """A loaded skill's entry: id, version and sha from its ``rematch.json`` when it has one.

    A rematch entry's version and sha are its manifest's ``version`` and
    ``content_sha256``, as the seed defines them; where the manifest lacks
    one, the front matter's version and the sha256 of the content Codex
    injected stand in, as for a skill without a manifest.
    """
    path = injection.path
    if not path or _sidecar(path) is None:
        return Loaded(injection.name, skill_version(injection), injection.sha)
    version = _sidecar_version(path) or front_matter_version(injection.content)
    return Loaded(_sidecar_id(path, injection.name), version, _sidecar_sha(path) or injection.sha)


def offered_entries(text: str) -> list[str]:
    """The rematch entries a catalog offers: listed skills whose file has a ``rematch.json`` beside it.

    Read from disk at import time (only a ``file:`` locator names a file);
    other skills in the catalog are not rematch entries.
    """
    found: list[str] = []
    for name, path in _listed(text):
        if path is not None and _sidecar(path) is not None:
            entry = _sidecar_id(path, name)
            if entry not in found:
                found.append(entry)
    return found
