"""visible_entries (offered skills), skill injections, and classify_action."""

from __future__ import annotations

from pathlib import Path

import pytest

import rematch_codex as plugin
from rematch_codex.skills import front_matter_version, offered_skills, parse_injection

AGENTS_MD_ERA = """# AGENTS.md instructions for /w

<INSTRUCTIONS>
Repo rules.

## Skills
A skill is a set of local instructions to follow that is stored in a `SKILL.md` file.
### Available skills
- pdf: Read and write PDFs. (file: /home/u/.codex/skills/pdf/SKILL.md)
- box:box-content-api: Box APIs: uploads, (and more). (file: C:/Users/u/.codex/plugins/box/SKILL.md)
### How to use skills
- Discovery: The list above is the skills available in this session.
- Trigger rules: If the user names a skill, use it.
</INSTRUCTIONS>"""

DEVELOPER_BLOCK = """<skills_instructions>
## Skills
A skill is a set of instructions provided through a `SKILL.md` source.
### Available skills
- imagegen: Generate images. (file: /root/.codex/skills/.system/imagegen/SKILL.md)
- rhwp-edit: Edit HWP documents. (executor package: rhwp)
### How to use skills
- Missing/blocked: say so briefly.
</skills_instructions>"""

OLD_UNHEADED = """## Skills
These skills are discovered at startup.
- lint: Lint the repo (file: /s/lint/SKILL.md)
- Usage: follow the skill when asked.
## Other section
- not-a-skill: nope (file: /x/SKILL.md)"""


def test_catalog_entries_from_both_catalog_forms() -> None:
    assert offered_skills(AGENTS_MD_ERA) == ["pdf", "box:box-content-api"]
    assert offered_skills(DEVELOPER_BLOCK) == ["imagegen", "rhwp-edit"]
    assert offered_skills(OLD_UNHEADED) == ["lint"]


def test_visible_entries_are_the_offered_rematch_skills(tmp_path: Path) -> None:
    # A skill is a rematch entry when a rematch.json sits beside its file; its id is the manifest's.
    for name, manifest in (("lint", '{"id": "team/lint", "version": "2"}'), ("deploy", "{}"), ("plain", None)):
        d = tmp_path / name
        d.mkdir()
        (d / "SKILL.md").write_text(f"---\nname: {name}\n---\n")
        if manifest is not None:
            (d / "rematch.json").write_text(manifest)
    catalog = "<skills_instructions>\n## Skills\n### Available skills\n" + "".join(
        f"- {n}: does {n} (file: {tmp_path / n / 'SKILL.md'})\n" for n in ("lint", "deploy", "plain", "gone")
    ) + "- pkg: remote (executor package: pkg)\n</skills_instructions>"
    assert plugin.visible_entries(catalog) == ["team/lint", "deploy"]
    # Catalogs of skills none of which is a rematch entry offer none (the real ones in the corpus).
    assert plugin.visible_entries(AGENTS_MD_ERA) == [] and plugin.visible_entries(DEVELOPER_BLOCK) == []


def test_visible_entries_ignores_other_text() -> None:
    assert plugin.visible_entries("# AGENTS.md instructions for /w\n- a: b (file: /x)") == []


def test_injection_parsing() -> None:
    text = "<skill>\n<name>rhwp</name>\n<path>/s/rhwp/SKILL.md</path>\n<resource_access>{}</resource_access>\nBODY\n</skill>"
    inj = parse_injection(text)
    assert inj is not None and (inj.name, inj.path, inj.content) == ("rhwp", "/s/rhwp/SKILL.md", "BODY")
    assert parse_injection("<skill>\nno name</skill>") is None
    assert parse_injection("plain text") is None


@pytest.mark.parametrize(
    ("content", "version"),
    [
        ("---\nname: a\nversion: 2.0.1\n---\nbody", "2.0.1"),
        ("---\nname: a\nversion: '3'\n---\n", "3"),
        ("---\nname: a\nmetadata:\n  category: docs\n  version: \"0.9\"\n---\n", "0.9"),
        ("---\nname: a\n---\nversion: 7 (in the body, not the front matter)", None),
        ("no front matter\nversion: 1", None),
    ],
)
def test_front_matter_version(content: str, version: str | None) -> None:
    assert front_matter_version(content) == version


@pytest.mark.parametrize(
    ("tool", "tool_input", "action"),
    [
        ("shell", {"command": ["bash", "-lc", "ls"]}, "shell_exec"),
        ("shell", {"command": ["bash", "-lc", "apply_patch <<'P'\nP"]}, "file_edit"),
        ("shell_command", {"command": "ls"}, "shell_exec"),
        ("local_shell", {"type": "exec", "command": ["ls"]}, "shell_exec"),
        ("local_shell_call", {}, "shell_exec"),
        ("exec_command", {"cmd": "ls"}, "shell_exec"),
        ("write_stdin", {"session_id": 1, "chars": "q"}, "shell_exec"),
        ("exec", "const r = await tools.shell()", "shell_exec"),
        ("apply_patch", "*** Begin Patch", "file_edit"),
        ("mcp__docs__search", {"q": "x"}, "mcp"),
        ("docs__search", {"q": "x"}, "mcp"),
        ("read_mcp_resource", {"uri": "x"}, "mcp"),
        ("web_search", {"type": "search"}, "network"),
        ("spawn_agent", {"message": "go"}, "subagent"),
        ("send_input", {"id": "a"}, "subagent"),
        ("wait", {"ids": ["a"]}, "subagent"),
        ("wait", {"cell_id": "3"}, "shell_exec"),
        ("view_image", {"path": "a.png"}, "file_read"),
        ("read_file", {"path": "a"}, "file_read"),
        ("skills.read", {"package": "pdf"}, "file_read"),
        ("update_plan", {"plan": []}, "other"),
        ("request_user_input", {}, "other"),
    ],
)
def test_classify_action(tool: str, tool_input: object, action: str) -> None:
    assert plugin.classify_action(tool, tool_input) == action
