"""``rematch report --open``: the index opened as a ``file://`` URL through Python's webbrowser, which runs
``$BROWSER``; when no browser starts, one clear line (with the URL) and exit status 0: the report was built.

The real ``rematch`` process runs with ``BROWSER`` set to a small script and no display and an empty
``PATH``, so no other browser on the machine can be picked instead.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hostile_gen import cli_env, make, run_import


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("open")
    make(root / "src", "claude_code", 1)
    assert run_import(root / "data", root / "src").returncode == 0
    return root / "data"


def _report(data: Path, out: Path, browser: str | None, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in cli_env().items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    empty = tmp / "empty-path"
    empty.mkdir(exist_ok=True)
    env["PATH"] = str(empty)  # no www-browser, lynx, xdg-open...: only $BROWSER can open anything
    if browser is not None:
        env["BROWSER"] = browser
    return subprocess.run([sys.executable, "-m", "rematch_trace.cli", "report", "--data", str(data), "--out",
                           str(out), "--open"], capture_output=True, text=True, env=env, timeout=120)


def _script(tmp: Path, body: str) -> Path:
    p = tmp / "browser.sh"
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(0o755)
    return p


def test_open_gives_the_browser_the_index_as_a_file_url(data: Path, tmp_path: Path) -> None:
    seen = tmp_path / "seen.txt"
    browser = _script(tmp_path, f'printf "%s\\n" "$@" >> "{seen}"\n')
    out = tmp_path / "report"
    res = _report(data, out, str(browser), tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    index = (out / "index.html").resolve()
    assert seen.read_text().splitlines() == [index.as_uri()]
    assert index.as_uri().startswith("file:///") and index.is_file()
    # Opening again after a rerun opens the same page (nothing rebuilt).
    res = _report(data, out, str(browser), tmp_path)
    assert res.returncode == 0 and "0 page(s) written" in res.stdout
    assert seen.read_text().splitlines() == [index.as_uri()] * 2


@pytest.mark.parametrize("how", ["fails", "missing", "none"])
def test_a_browser_that_cannot_open_is_one_clear_line(data: Path, tmp_path: Path, how: str) -> None:
    browser = {"fails": lambda: str(_script(tmp_path, "exit 3\n")), "missing": lambda: str(tmp_path / "no-such"),
               "none": lambda: None}[how]()
    out = tmp_path / "report"
    res = _report(data, out, browser, tmp_path)
    assert res.returncode == 0, res.stderr  # the site asked for was built: no browser to show it is a note
    index = (out / "index.html").resolve()
    # The report is built all the same, and the user is told where it is.
    assert index.is_file() and "1 page(s) written" in res.stdout and str(out / "index.html") in res.stdout
    lines = res.stderr.splitlines()
    assert lines == [f"rematch: report built but not opened (no browser could be started); open {index.as_uri()}"]
    assert "Traceback" not in res.stderr
