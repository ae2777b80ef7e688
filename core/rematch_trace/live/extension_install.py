"""Installing rematch's extension into pi or omp, and taking it out again.

The extension is the omp plugin's ``rematch_omp/extension/rematch.ts`` (docs/live-capture.md,
"pi and omp"). Rules:

* it goes to ``<agent dir>/extensions/rematch/index.ts``, a folder pi (and omp) load
  extensions from at start; the agent dir is ``--agent-dir``, else ``$PI_CODING_AGENT_DIR``,
  else ``~/.pi/agent`` (pi) or ``~/.omp/agent`` (omp, ``$PI_CONFIG_DIR`` in place of ``.omp``);
* the copy is the shipped source with its ``INSTALLED`` line filled in (the data folder, this
  interpreter, the budgets): nothing else of the harness's settings is touched;
* installing is idempotent (the copy is rewritten, never doubled) and atomic; a file at that
  place that is not rematch's is refused and left as it is;
* uninstalling removes only rematch's copy (and the ``rematch`` folder when it is then empty, and the
  ``extensions`` folder when install made it and it is then empty: a marker beside the copy says so);
* status says whether the copy is there, current (the shipped source), and runnable (its
  interpreter exists and the data folder is the one asked about).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import attrs

from rematch_trace.live.install import HOLD_SECONDS, Outcome, SettingsError, _write, hold_budget

#: The harnesses this installs for, and their default config folder under HOME.
HARNESSES = {"pi": ".pi", "omp": ".omp"}
#: The folder, under the agent dir, the extension is copied to (as ``index.ts``).
FOLDER = Path("extensions") / "rematch"
#: The file beside the copy that says install made the ``extensions`` folder (uninstall removes it when empty).
MADE_MARK = ".rematch-made-extensions"
#: The line of the shipped source that install fills in.
INSTALLED_LINE = re.compile(r"^const INSTALLED: Config \| null = (.*);$", re.M)
#: What marks a file as rematch's extension (its first doc line).
MARK = "rematch's extension for pi and omp"
#: How long any event may hold the harness, ms (the hook client's default IPC budget).
DEADLINE_MS = 1500


def agent_dir(harness: str, explicit: str | os.PathLike[str] | None = None) -> Path:
    """The harness's agent folder (see the module docstring)."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("PI_CODING_AGENT_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    top = os.environ.get("PI_CONFIG_DIR", "").strip() if harness == "omp" else ""
    return Path.home() / (top or HARNESSES[harness]) / "agent"


def target(harness: str, explicit: str | os.PathLike[str] | None = None) -> Path:
    """Where the extension is installed: ``<agent dir>/extensions/rematch/index.ts``."""
    return agent_dir(harness, explicit) / FOLDER / "index.ts"


def shipped_source() -> Path | None:
    """The extension's source in the installed ``rematch-omp``, found without importing the plugin."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("rematch_omp")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).resolve().parent / "extension" / "rematch.ts"
    return path if path.is_file() else None


def config(harness: str, data: Path, hold_seconds: float | None) -> dict[str, Any]:
    """The ``INSTALLED`` value: data folder, interpreter, adapter, budgets.

    The adapter (the harness the events are captured as, and the plugin the core asks to translate
    them) is the harness installed for: ``pi`` (``rematch-pi``) or ``omp`` (``rematch-omp``). A copy
    installed before pi had its own name says ``omp`` for pi too: ``hooks status`` calls it older
    than the shipped one, and installing again puts it right.
    """
    call_ms = hold_budget(hold_seconds if hold_seconds is not None else HOLD_SECONDS)[0]
    return {"data": str(data), "python": sys.executable, "adapter": harness, "harness": harness,
            "deadline_ms": DEADLINE_MS, "call_deadline_ms": call_ms}


def fill_installed(source: str, conf: dict[str, Any], missing: str) -> str:
    """``source`` (a TypeScript file rematch ships) with its ``INSTALLED`` line holding ``conf`` (JSON is a
    TypeScript literal); :class:`SettingsError` ``missing`` when it has no such line."""
    text = json.dumps(conf, ensure_ascii=True)
    out, n = INSTALLED_LINE.subn(lambda _m: f"const INSTALLED: Config | null = {text};", source, count=1)
    if n != 1:
        raise SettingsError(missing)
    return out


def render(source: str, conf: dict[str, Any]) -> str:
    """``source`` with its ``INSTALLED`` line holding ``conf``."""
    return fill_installed(source, conf, "the shipped extension has no INSTALLED line; reinstall rematch-omp")


def _is_ours(text: str) -> bool:
    return MARK in text[:2000] and INSTALLED_LINE.search(text) is not None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise SettingsError(f"{path} is a folder, not rematch's extension; nothing changed") from None


def install(harness: str, path: Path, data: Path, hold_seconds: float | None = None) -> Outcome:
    """Copy the extension to ``path`` with its configuration (idempotent)."""
    source = shipped_source()
    if source is None:
        raise SettingsError("rematch-omp (which ships the extension) is not installed here")
    old = _read(path)
    if old is not None and not _is_ours(old):
        raise SettingsError(f"{path} exists and is not rematch's extension; nothing changed")
    new = render(source.read_text(encoding="utf-8"), config(harness, data, hold_seconds))
    if old == new:
        return Outcome(path, False, f"rematch's extension is already installed in {path}")
    made = not path.parent.parent.exists()
    _write(path, new.encode("utf-8"))
    if made:
        (path.parent / MADE_MARK).write_bytes(b"")
    return Outcome(path, True, f"installed rematch's extension for {harness} in {path} (data: {data})")


def uninstall(path: Path) -> Outcome:
    """Remove rematch's copy at ``path`` (and its folder when empty); anything else stays."""
    old = _read(path)
    if old is None:
        return Outcome(path, False, f"rematch's extension is not installed in {path}")
    if not _is_ours(old):
        raise SettingsError(f"{path} is not rematch's extension; nothing changed")
    path.unlink()
    mark = path.parent / MADE_MARK
    made = mark.is_file()
    mark.unlink(missing_ok=True)
    try:
        path.parent.rmdir()
        if made:
            path.parent.parent.rmdir()  # the extensions folder install made, when nothing else is in it
    except OSError:
        pass  # the user keeps other files there
    return Outcome(path, True, f"removed rematch's extension from {path}")


@attrs.frozen
class Status:
    """What is installed at a path: present, rematch's, current, its configuration, problems."""

    path: Path
    installed: bool
    current: bool
    config: dict[str, Any] | None
    problems: tuple[str, ...]


def status(path: Path, data: Path | None = None) -> Status:
    """The state of ``path`` (:class:`Status`); ``data``: the folder the caller expects events in."""
    try:
        text = _read(path)
    except SettingsError as err:
        return Status(path, False, False, None, (str(err),))
    if text is None:
        return Status(path, False, False, None, ())
    if not _is_ours(text):
        return Status(path, False, False, None, (f"{path} is not rematch's extension",))
    m = INSTALLED_LINE.search(text)
    assert m is not None
    try:
        conf = json.loads(m.group(1))
    except ValueError:
        conf = None
    problems: list[str] = []
    if type(conf) is not dict:
        conf = None
        problems.append("its INSTALLED line is not rematch's configuration")
    else:
        python = conf.get("python")
        if type(python) is not str or not os.access(python, os.X_OK):
            problems.append(f"its interpreter {python!r} cannot run")
        if data is not None and conf.get("data") != str(data):
            problems.append(f"it sends events to {conf.get('data')!r}, not {str(data)!r}")
    source = shipped_source()
    current = False
    if source is not None and conf is not None:
        current = render(source.read_text(encoding="utf-8"), conf) == text
        if not current:
            problems.append("it is older than the installed rematch-omp")
    return Status(path, True, current, conf, tuple(problems))
