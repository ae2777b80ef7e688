"""``rematch hooks install|uninstall|status --harness pi|omp``: rematch's extension in the harness's folder.

Through the real ``rematch`` command: the copy is the shipped source with its configuration line
filled in; installing is idempotent; a file that is not rematch's is refused and left as it is;
uninstalling removes only rematch's copy; status says what is there and exits 1 when it cannot run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from live_helpers import rematch

from rematch_trace.live import extension_install


def _install(agent: Path, data: Path, harness: str = "pi") -> tuple[int, str]:
    res = rematch("hooks", "install", "--harness", harness, "--agent-dir", str(agent), "--data", str(data),
                  HOME=str(agent.parent))
    return res.returncode, res.stdout + res.stderr


@pytest.mark.parametrize("harness", ["pi", "omp"])
def test_install_writes_the_configured_copy_once(tmp_path: Path, harness: str) -> None:
    agent, data = tmp_path / "agent", tmp_path / "data"
    rc, said = _install(agent, data, harness)
    assert rc == 0 and "installed" in said, said
    target = agent / "extensions" / "rematch" / "index.ts"
    text = target.read_text()
    [line] = [x for x in text.splitlines() if x.startswith("const INSTALLED")]
    conf = json.loads(line.split(" = ", 1)[1].rstrip(";"))
    assert (conf["data"], conf["adapter"], conf["harness"]) == (str(data.resolve()), harness, harness)
    assert Path(conf["python"]).exists() and conf["call_deadline_ms"] > conf["deadline_ms"] > 0
    # Everything else is the shipped source.
    shipped = extension_install.shipped_source()
    assert shipped is not None
    assert [x for x in text.splitlines() if not x.startswith("const INSTALLED")] == \
        [x for x in shipped.read_text().splitlines() if not x.startswith("const INSTALLED")]
    before = target.read_bytes()
    rc, said = _install(agent, data, harness)
    assert rc == 0 and "already installed" in said and target.read_bytes() == before


def test_a_file_that_is_not_rematchs_is_left_alone(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    target = agent / "extensions" / "rematch" / "index.ts"
    target.parent.mkdir(parents=True)
    target.write_text("export default function mine() {}\n")
    rc, said = _install(agent, tmp_path / "data")
    assert rc == 1 and "not rematch's extension" in said
    assert target.read_text() == "export default function mine() {}\n"
    res = rematch("hooks", "uninstall", "--harness", "pi", "--agent-dir", str(agent))
    assert res.returncode == 1 and target.exists()


def test_uninstall_removes_only_rematchs_copy(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    assert _install(agent, tmp_path / "data")[0] == 0
    folder = agent / "extensions" / "rematch"
    (folder / "notes.md").write_text("mine")
    res = rematch("hooks", "uninstall", "--harness", "pi", "--agent-dir", str(agent))
    assert res.returncode == 0 and "removed" in res.stdout
    assert sorted(p.name for p in folder.iterdir()) == ["notes.md"]
    (folder / "notes.md").unlink()
    assert _install(agent, tmp_path / "data")[0] == 0
    assert rematch("hooks", "uninstall", "--harness", "pi", "--agent-dir", str(agent)).returncode == 0
    assert not folder.exists()  # emptied: taken away too
    again = rematch("hooks", "uninstall", "--harness", "pi", "--agent-dir", str(agent))
    assert again.returncode == 0 and "not installed" in again.stdout


def test_status_says_what_is_there_and_fails_when_it_cannot_run(tmp_path: Path) -> None:
    agent, data = tmp_path / "agent", tmp_path / "data"

    def status() -> tuple[int, dict]:
        res = rematch("hooks", "status", "--harness", "pi", "--agent-dir", str(agent), "--data", str(data), "--json")
        return res.returncode, json.loads(res.stdout)

    rc, report = status()
    assert rc == 0 and report["installed"] is False and report["problems"] == []
    assert _install(agent, data)[0] == 0
    rc, report = status()
    assert rc == 0 and (report["installed"], report["current"], report["problems"]) == (True, True, [])
    target = agent / "extensions" / "rematch" / "index.ts"
    conf_line = next(x for x in target.read_text().splitlines() if x.startswith("const INSTALLED"))
    conf = json.loads(conf_line.split(" = ", 1)[1].rstrip(";"))
    broken = dict(conf, python=str(tmp_path / "gone" / "python3"))
    target.write_text(target.read_text().replace(conf_line, f"const INSTALLED: Config | null = {json.dumps(broken)};"))
    rc, report = status()
    assert rc == 1 and any("cannot run" in p for p in report["problems"]), report
    other = rematch("hooks", "status", "--harness", "pi", "--agent-dir", str(agent), "--data", str(tmp_path / "other"))
    assert other.returncode == 1 and "sends events to" in other.stdout


def test_uninstall_takes_away_the_extensions_folder_install_made(tmp_path: Path) -> None:
    """Issue 43: an ``extensions`` folder install made is gone after uninstall; one that was there stays."""
    agent = tmp_path / "agent"
    assert _install(agent, tmp_path / "data")[0] == 0
    assert rematch("hooks", "uninstall", "--harness", "pi", "--agent-dir", str(agent)).returncode == 0
    assert not (agent / "extensions").exists()
    (agent / "extensions").mkdir()
    assert _install(agent, tmp_path / "data")[0] == 0
    assert rematch("hooks", "uninstall", "--harness", "pi", "--agent-dir", str(agent)).returncode == 0
    assert (agent / "extensions").is_dir() and not any((agent / "extensions").iterdir())


def test_hooks_help_names_every_harness_and_folder_offers_only_those_it_makes() -> None:
    """Issue 43: the help speaks of Codex, pi and omp too; ``hooks folder`` offers no harness it cannot make."""
    said = rematch("hooks", "--help").stdout
    assert "Claude Code" in said and "Codex" in said and "pi" in said and "omp" in said
    folder = rematch("hooks", "folder", "--help").stdout
    assert "claude_code|codex" in folder.replace("'", "")
    for harness in ("pi", "omp"):
        res = rematch("hooks", "folder", "--harness", harness)
        assert res.returncode == 2 and "rematch hooks install --harness pi|omp" not in res.stdout
        assert "is not one of 'claude_code', 'codex'" in res.stderr, res.stderr
