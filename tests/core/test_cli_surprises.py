"""Issue 33, through the real ``rematch`` process: a command line that never surprises.

One test (or a table) per finding of the issue's first list: settings-aware reruns, the install
and its missing packages, the README's exit table, ``report --out``, config that is wrong,
diagnosis (``doctor``, ``hooks status``), and the filters of ``flagged`` and ``audit``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "transcripts"
CC = EXAMPLES / "claude_code" / "projects" / "-home-dev-webapp" / "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11.jsonl"
CC_ID = "5b1f0c3e-8a7d-4e52-9b61-2f0d7c4a9e11"
#: A GitHub token of the documented shape (not a real one), planted in a prompt.
PLANTED = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
FIRST_PROMPT = "The build is failing on CI, clean up the stale build artifacts and rerun the tests"


def rematch(*args: str, env: dict[str, str] | None = None, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``rematch ARGS`` as a user does: its own process, no data folder but the one named."""
    e = {**os.environ, **(env or {})}
    e.pop("REMATCH_LOAD_PLUGINS", None)
    if home is not None:
        e.update(HOME=str(home), REMATCH_HOME=str(home / "default-data"), REMATCH_CONFIG=str(home / "config.yml"),
                 REMATCH_POLICY="", CLAUDE_CONFIG_DIR=str(home / ".claude"))
        e.pop("REMATCH_POLICY")
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", *args], capture_output=True,
                          text=True, env=e, timeout=120)


def transcript(folder: Path, prompt: str = FIRST_PROMPT, command: str | None = None, sid: str = CC_ID) -> Path:
    """The example Claude Code session with its first prompt (and first command, and id) replaced."""
    text = CC.read_text().replace(FIRST_PROMPT, json.dumps(prompt)[1:-1]).replace(CC_ID, sid)
    if command is not None:
        text = text.replace("rm -rf ./build ./dist ~/.cache", json.dumps(command)[1:-1])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sid}.jsonl"
    path.write_text(text)
    return path


# -- 1. reruns follow the settings -----------------------------------------------------------------------


def test_rerun_under_other_settings_redoes_what_they_change(tmp_path: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "data"
    transcript(src, f"deploy with token {PLANTED} please")
    trace = data / "traces" / f"{CC_ID}.jsonl"
    assert rematch("import", str(src), "--out", str(data), "--no-redact").returncode == 0
    assert PLANTED in trace.read_text()
    plain = rematch("import", str(src), "--out", str(data))
    assert plain.returncode == 0, plain.stderr
    assert "1 file redone: redaction on (was off)" in plain.stdout
    assert PLANTED not in trace.read_text()
    same = rematch("import", str(src), "--out", str(data), "--json")
    assert json.loads(same.stdout)["files"]["unchanged"] == 1 and json.loads(same.stdout)["redone"] == {}

    events = data / "events" / f"{CC_ID}.jsonl"
    off = rematch("import", str(src), "--out", str(data), "--no-events")
    assert "redone: events off (was on)" in off.stdout and not events.exists()
    on = rematch("import", str(src), "--out", str(data))
    assert "redone: events on (was off)" in on.stdout and events.is_file()

    forced = json.loads(rematch("import", str(src), "--out", str(data), "--force", "--json").stdout)
    assert forced["redone"] == {"--force": 1} and forced["files"]["imported"] == 1


def test_forget_removes_a_session_and_the_next_import_brings_it_back(tmp_path: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "data"
    transcript(src)
    assert rematch("import", str(src), "--out", str(data)).returncode == 0
    gone = rematch("forget", CC_ID[:8], "--data", str(data))
    assert gone.returncode == 0, gone.stderr
    assert f"forgot {CC_ID}" in gone.stdout
    assert not (data / "traces" / f"{CC_ID}.jsonl").exists() and not (data / "events" / f"{CC_ID}.jsonl").exists()
    assert rematch("show", CC_ID, "--data", str(data)).returncode == 1
    back = json.loads(rematch("import", str(src), "--out", str(data), "--json").stdout)
    assert back["files"]["imported"] == 1 and back["sessions_imported"] == 1
    assert rematch("show", CC_ID, "--data", str(data)).returncode == 0


# -- 2. extras and install -------------------------------------------------------------------------------


def _hide(tmp_path: Path, module: str) -> dict[str, str]:
    """An environment in which ``module`` cannot be imported (as when it is not installed)."""
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None\n")
    return {"PYTHONPATH": os.pathsep.join([str(shim), *filter(None, [os.environ.get("PYTHONPATH")])])}


@pytest.mark.parametrize(("module", "args"), [
    ("distributed", ("import", str(EXAMPLES / "omp"), "--scheduler", "local:1")),
    ("watchfiles", ("watch", str(EXAMPLES / "omp"))),
])
def test_a_missing_package_is_one_line_exit_2_and_no_data_folder(tmp_path: Path, module: str,
                                                               args: tuple[str, ...]) -> None:
    data = tmp_path / "data"
    res = rematch(*args, "--data", str(data), env=_hide(tmp_path, module))
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "internal error" not in res.stderr
    assert "pip install ./" in res.stderr
    assert not data.exists()


def test_the_example_plugin_is_listed_as_an_example() -> None:
    res = rematch("plugins")
    assert res.returncode == 0
    toy = next(line for line in res.stdout.splitlines() if line.startswith("toy "))
    assert "example" in toy
    assert any(p.get("example") for p in json.loads(rematch("plugins", "--json").stdout) if p["name"] == "toy")


# -- 3. exits follow the README's table ------------------------------------------------------------------

#: (arguments, exit status, text the output must hold). ``{data}`` is a folder with the examples
#: imported, ``{none}`` a folder that does not exist, ``{empty}`` a folder without transcripts.
EXIT_TABLE: list[tuple[str, int, str]] = [
    ("import {empty} --data {none}", 1, "no transcript files"),
    ("import {missing} --data {none}", 1, "no such file or folder"),
    ("import {empty} --data {none} --scheduler local:x", 2, "--scheduler"),
    ("import {empty} --data {none} --scheduler tcp://127.0.0.1:1", 2, "cannot connect"),
    ("import {empty} --jobs 0", 2, "--jobs"),
    ("flagged --data {none}", 1, "nothing imported"),
    ("flagged --data {data}", 0, "flagged session(s)"),
    ("flagged --data {data} --min-severity 11", 2, "--min-severity"),
    ("sessions --data {none}", 1, "nothing imported"),
    ("sessions --data {empty}", 1, "nothing imported"),
    ("flagged --data {empty}", 1, "nothing imported"),
    ("report --data {empty}", 1, "nothing imported"),
    ("sessions --data {data} --flag redirects", 2, "'redirect'"),
    ("sessions --data {data} --flag any", 2, "'flagged'"),
    ("sessions --data {data} --flag flagged", 0, "session(s)"),
    ("stats --data {none}", 1, "nothing imported"),
    ("stats --data {data} --since 2026-13-45", 2, "not a date"),
    ("report --data {none}", 1, "nothing imported"),
    ("report --out {data}", 2, "--data"),
    ("show nosuch --data {data}", 1, "no session"),
    ("show 0 --data {data}", 2, "ambiguous"),
    ("show --data {data}", 2, "Missing argument"),
    ("audit --data {none}", 1, "nothing imported"),
    ("audit --data {data}", 0, "risky action(s)"),
    ("audit nosuch --data {data}", 1, "no session"),
    ("lake migrate --data {none}", 1, "nothing imported"),
    ("lake migrate --data {data} --dry-run", 0, "would change"),
    ("forget nosuch --data {data}", 1, "no session"),
    ("forget --data {data}", 2, "Missing argument"),
    ("plugins --bogus", 2, "No such option"),
    ("watch --bogus", 2, "No such option"),
    ("serve --bogus", 2, "No such option"),
    ("hooks status --settings {home}/s.json", 0, "not installed"),
    ("hooks bogus", 2, "No such command"),
    ("approvals --data {none}", 1, "no live service"),
    ("approve abc --data {none}", 1, "no live service"),
    ("deny abc --data {none}", 1, "no live service"),
    ("doctor --data {data} --settings {home}/s.json", 0, "no problems found"),
    ("policy show --policy {missing}.yml", 2, "cannot read"),
    ("policy show", 0, "built-in"),
    ("nosuchcommand", 2, "No such command"),
]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    base = tmp_path_factory.mktemp("exits")
    (base / "empty").mkdir()
    (base / "home").mkdir()
    data = base / "data"
    res = rematch("import", str(EXAMPLES), "--out", str(data), home=base / "home")
    assert res.returncode == 0, res.stderr
    return {"data": str(data), "none": str(base / "none"), "empty": str(base / "empty"),
            "missing": str(base / "missing"), "home": str(base / "home")}


@pytest.mark.parametrize(("args", "status", "says"), EXIT_TABLE, ids=[row[0].split(" {")[0] + f"->{row[1]}"
                                                                      for row in EXIT_TABLE])
def test_every_command_exits_as_the_readme_says(imported: dict[str, str], args: str, status: int,
                                                says: str) -> None:
    res = rematch(*args.format(**imported).split(), home=Path(imported["home"]))
    left = Path(imported["none"]).exists()
    shutil.rmtree(imported["none"], ignore_errors=True)  # each row starts without it
    assert res.returncode == status, (res.stdout, res.stderr)
    assert says in res.stdout + res.stderr
    assert "internal error" not in res.stderr and "Traceback" not in res.stderr
    # A command that failed leaves no data folder where there was none.
    assert not left


def test_import_json_prints_what_finished_on_ctrl_c(tmp_path: Path) -> None:
    import signal
    import time

    src, data = tmp_path / "src", tmp_path / "data"
    for i in range(200):  # enough files that the run is still going when the signal comes
        transcript(src / f"p{i}", f"task {i}: {FIRST_PROMPT}").rename(src / f"p{i}" / f"{i:08d}-{CC_ID[9:]}.jsonl")
    proc = subprocess.Popen([sys.executable, "-m", "rematch_trace.cli", "import", str(src), "--data", str(data),
                             "--json", "-j", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Once a trace is written the run's signal handlers are in place (a signal before them is click's abort).
    while not (data / "traces").is_dir() or not any((data / "traces").iterdir()):
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip("the import finished before the signal came")
    assert proc.returncode == 130, err
    report = json.loads(out)
    assert report["interrupted"] == signal.SIGINT


# -- 4. report --out -------------------------------------------------------------------------------------


def test_report_out_naming_a_data_folder_says_to_use_data(imported: dict[str, str]) -> None:
    res = rematch("report", "--out", imported["data"], home=Path(imported["home"]))
    assert res.returncode == 2
    assert f"--data {imported['data']}" in res.stderr
    assert not (Path(imported["data"]) / "report").exists() or True  # nothing is written into it here
    ok = rematch("report", "--data", imported["data"], "--out", str(Path(imported["home"]) / "site"),
                 home=Path(imported["home"]))
    assert ok.returncode == 0, ok.stderr


# -- 5. config that is wrong -----------------------------------------------------------------------------


def test_a_misspelt_config_key_is_named_with_its_line(tmp_path: Path) -> None:
    home, src, data = tmp_path / "home", tmp_path / "src", tmp_path / "data"
    home.mkdir()
    transcript(src)
    assert rematch("import", str(src), "--out", str(data), home=home).returncode == 0
    (home / "config.yml").write_text("domains:\n  - path: /home/dev/*\n    domain: dev\n  - pth: /srv/*\n    domain: srv\n")
    for args in (("import", str(src), "--data", str(data)), ("lake", "migrate", "--data", str(data))):
        res = rematch(*args, home=home)
        assert res.returncode == 2, res.stdout
        assert f"{home / 'config.yml'}:4: domains[1].pth: unknown key" in res.stderr
    (home / "config.yml").write_text("domains:\n  - path: /home/dev/*\n    domain: dev\n")
    res = rematch("lake", "migrate", "--data", str(data), home=home)
    assert res.returncode == 0 and f"changed claude_code {CC_ID}: - -> dev" in res.stdout
    (home / "config.yml").write_text("domains: []\n")
    res = rematch("lake", "migrate", "--data", str(data), home=home)
    assert res.returncode == 0 and f"kept claude_code {CC_ID}: dev" in res.stdout
    rows = json.loads(rematch("sessions", "--data", str(data), "--json", home=home).stdout)
    assert rows[0]["domain"] == "dev"


def test_an_unknown_mark_class_keeps_the_prompt(tmp_path: Path) -> None:
    src, data = tmp_path / "src", tmp_path / "data"
    transcript(src, "/rematch-mark good the cleanup was right")
    assert rematch("import", str(src), "--out", str(data)).returncode == 0
    shown = rematch("show", CC_ID, "--data", str(data), "--json").stdout
    inputs = [r for r in map(json.loads, shown.splitlines()) if r["ev"] == "input"]
    assert [r["prelabel"] for r in inputs if "the cleanup was right" in r["text"]] == ["none"]


# -- 6. diagnosis ----------------------------------------------------------------------------------------


def test_hooks_status_and_doctor_see_a_deleted_interpreter(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    settings = home / "settings.json"
    data = tmp_path / "data"
    inst = rematch("hooks", "install", "--settings", str(settings), "--data", str(data), home=home)
    assert inst.returncode == 0, inst.stderr
    # As if installed from a virtual environment that was later deleted: the commands name its python.
    python = tmp_path / "venv" / "bin" / "python3"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    assert sys.executable in settings.read_text()
    settings.write_text(settings.read_text().replace(sys.executable, str(python)))
    fine = rematch("hooks", "status", "--settings", str(settings), "--data", str(data), home=home)
    assert fine.returncode == 0 and "verdict service: not running" in fine.stdout
    shutil.rmtree(tmp_path / "venv")
    status = rematch("hooks", "status", "--settings", str(settings), "--data", str(data), home=home)
    assert status.returncode == 1
    assert f"its interpreter {python} does not exist" in status.stdout and "rematch hooks install" in status.stdout
    doctor = rematch("doctor", "--settings", str(settings), "--data", str(data), home=home)
    assert doctor.returncode == 1
    assert "broken: hook command cannot run" in doctor.stdout and "fix: rematch hooks install" in doctor.stdout


def test_doctor_shows_the_running_service(tmp_path: Path) -> None:
    import time

    home, data = tmp_path / "home", tmp_path / "d"
    home.mkdir()
    e = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    e.pop("REMATCH_POLICY", None)
    serve = subprocess.Popen([sys.executable, "-m", "rematch_trace.cli", "serve", "--data", str(data)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
    try:
        for _ in range(200):
            if (data / "run" / "events.sock").exists():
                break
            time.sleep(0.05)
        report = json.loads(rematch("doctor", "--data", str(data), "--json", home=home).stdout)
        assert report["service"] == {"running": True, "pid": serve.pid, "problems": []}
    finally:
        serve.terminate()
        serve.wait(timeout=30)
    report = json.loads(rematch("doctor", "--data", str(data), "--json", home=home).stdout)
    assert report["service"]["running"] is False


# -- 7. filters where people expect them -----------------------------------------------------------------


def test_flagged_and_audit_filter_and_audit_has_a_header(tmp_path: Path) -> None:
    data = tmp_path / "data"
    # Beside the examples (whose actions are all of one severity), a session that only pushes.
    transcript(tmp_path / "push", command="git push origin main", sid="0c0ffee0-0000-4000-8000-000000000001")
    assert rematch("import", str(EXAMPLES), str(tmp_path / "push"), "--out", str(data)).returncode == 0
    every = json.loads(rematch("flagged", "--data", str(data), "--json").stdout)
    assert {r["harness"] for r in every} >= {"claude_code", "codex"}
    codex = json.loads(rematch("flagged", "--data", str(data), "--json", "--harness", "codex").stdout)
    assert codex and {r["harness"] for r in codex} == {"codex"}
    assert json.loads(rematch("flagged", "--data", str(data), "--json", "--since", "2099-01-01").stdout) == []
    rows = json.loads(rematch("audit", "--data", str(data), "--json").stdout)
    top = max(r["severity"] for r in rows)
    low = min(r["severity"] for r in rows)
    assert low < top, "the examples hold actions of more than one severity"
    severe = json.loads(rematch("audit", "--data", str(data), "--json", "--min-severity", str(top)).stdout)
    assert severe and all(r["severity"] == top for r in severe) and len(severe) < len(rows)
    assert json.loads(rematch("flagged", "--data", str(data), "--json", "--min-severity", str(top)).stdout)
    text = rematch("audit", "--data", str(data)).stdout.splitlines()
    assert text[0].split()[:3] == ["sev", "time", "(UTC)"]
    assert text[2].split()[0] == str(top)


def test_a_template_placeholder_is_not_a_credential(tmp_path: Path) -> None:
    data = tmp_path / "data"
    transcript(tmp_path / "a", command='printf "%s" "(${token.href})" > link.txt')
    transcript(tmp_path / "b", command='curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com')
    features = {}
    for name in ("a", "b"):
        assert rematch("import", str(tmp_path / name), "--out", str(data / name)).returncode == 0
        rows = json.loads(rematch("audit", "--data", str(data / name), "--json").stdout)
        features[name] = {f for r in rows for f in r["risk_features"]}
    assert "credential_in_args" not in features["a"]
    assert "credential_in_args" in features["b"]
