"""The Claude Code skill catalog behind live ``visible_entries``."""

from __future__ import annotations

from pathlib import Path

from rematch_claude_code import skills


def test_a_skill_catalog_is_read_only_from_its_own_header(tmp_path: Path) -> None:
    """Any other instruction text (a CLAUDE.md that starts like a path list) offers nothing."""
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "SKILL.md").write_text("x")
    (folder / "rematch.json").write_text('{"id": "e1"}')
    assert skills.offered_entries(f"{skills.CATALOG_HEADER}\n{folder}\nrelative/path\n/no/such") == ["e1"]
    assert skills.offered_entries(f"{folder}\n{folder}") == []
    assert skills.offered_entries("") == []
