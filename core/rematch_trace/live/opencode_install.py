"""Installing rematch's opencode plugin, and taking it out again.

The plugin is the opencode plugin's ``rematch_opencode/plugin/rematch.ts`` (docs/live-capture.md,
"opencode"). Rules:

* the copy goes to ``<data>/harness-plugins/opencode/rematch.ts`` with its ``INSTALLED`` line filled
  in (this interpreter, the hook client, the data folder, the budgets), and opencode's config
  (``--settings``, else ``$XDG_CONFIG_HOME/opencode/opencode.json``, else
  ``~/.config/opencode/opencode.json``) names it in its ``plugin`` list as a ``file://`` URL;
* opencode (1.18) installs ``@opencode-ai/plugin`` into each of its config folders when a plugin is
  configured, and waits for npm before it loads them (85 s of retries without a network, measured).
  It skips that when the folder's ``node_modules`` exists and its ``package-lock.json`` lists the
  package. The plugin imports only node's modules and needs nothing from npm, so when the config's
  folder has neither (opencode never installed there), install lays them out (:data:`LOCK`: an empty
  ``node_modules`` and a lock naming the package) and uninstall takes them back when unchanged. A
  plugin of your own in that folder that imports ``@opencode-ai/plugin`` at run time then needs
  ``npm install @opencode-ai/plugin`` there (docs/live-capture.md);
* the config edit keeps the promises of :mod:`rematch_trace.live.install`: a file that is not a JSON
  object (or whose ``plugin`` is not a list) is refused and left as it is; idempotent (rematch's
  entry replaced, never doubled; every other key and plugin kept); the first install keeps the exact
  bytes (``.rematch-backup``, ``.rematch-absent``), and uninstall restores them when nothing else
  changed since, else removes rematch's entry only; writes are atomic and keep the mode;
* the folders install made for the config (``~/.config/opencode``, and ``~/.config`` when it was
  not there either) are recorded beside it (``.rematch-made``: how many levels up); uninstall
  removes them when they are empty again, and never a folder that was there before.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import attrs

from rematch_trace.live.extension_install import INSTALLED_LINE, fill_installed
from rematch_trace.live.install import (
    ABSENT_SUFFIX,
    BACKUP_SUFFIX,
    HOLD_SECONDS,
    Outcome,
    SettingsError,
    _dump,
    _target,
    _write,
    hold_budget,
    hook_client,
    keep_original,
    original_of,
    read_object,
)

#: The plugin's place under the data folder.
FOLDER = Path("harness-plugins") / "opencode"
NAME = "rematch.ts"
#: What marks a file as rematch's plugin (its first doc line).
MARK = "rematch's plugin for opencode"
#: An ordinary event's budget, ms (the hook client's default).
DEADLINE_MS = 1500
#: The lock install lays out in a config folder opencode never installed into: what opencode's
#: check of its dependencies reads as ``@opencode-ai/plugin`` being there (nothing else reads it).
LOCK = (b'{\n  "name": "opencode-config",\n  "lockfileVersion": 3,\n  "requires": true,\n  "packages": {\n'
        b'    "": {\n      "dependencies": {\n        "@opencode-ai/plugin": "*"\n      }\n    }\n  }\n}\n')


def _lay_out(folder: Path) -> bool:
    """``node_modules`` and :data:`LOCK` in ``folder`` when it has neither; whether they were laid out."""
    modules, lock = folder / "node_modules", folder / "package-lock.json"
    if modules.exists() or lock.exists():
        return False
    modules.mkdir(parents=True)
    _write(lock, LOCK)
    return True


def _take_back(folder: Path) -> None:
    """Remove what :func:`_lay_out` made, when it is as it was made (an empty ``node_modules``, :data:`LOCK`)."""
    modules, lock = folder / "node_modules", folder / "package-lock.json"
    try:
        if lock.read_bytes() != LOCK:
            return
    except OSError:
        return
    try:
        modules.rmdir()  # only when empty: npm installed something there since
    except OSError:
        return
    lock.unlink(missing_ok=True)


#: The suffix of the record, beside the config, of how many of its folders install made.
MADE_SUFFIX = ".rematch-made"


def _missing_levels(folder: Path) -> int:
    """How many of ``folder`` and its ancestors do not exist (what making it would make)."""
    levels = 0
    while not folder.exists() and folder.parent != folder:
        levels += 1
        folder = folder.parent
    return levels


def _remove_made(config: Path) -> None:
    """Remove the folders install made for ``config`` (its record says how many), each only when empty."""
    made = config.with_name(config.name + MADE_SUFFIX)
    try:
        levels = int(made.read_bytes().strip() or b"0")
    except (OSError, ValueError):
        return
    made.unlink(missing_ok=True)
    folder = config.parent
    for _ in range(max(0, min(levels, len(folder.parents)))):
        try:
            folder.rmdir()
        except OSError:
            return  # not empty: the user's files (or opencode's) are there now
        folder = folder.parent


def config_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """opencode's global config: ``explicit``, else ``$XDG_CONFIG_HOME/opencode/opencode.json`` (an absolute
    ``XDG_CONFIG_HOME``), else ``~/.config/opencode/opencode.json``."""
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".config"
    return base / "opencode" / "opencode.json"


def plugin_path(data: Path) -> Path:
    """Where the plugin's copy goes: ``<data>/harness-plugins/opencode/rematch.ts``."""
    return data / FOLDER / NAME


def shipped_source() -> Path | None:
    """The plugin's source in the installed ``rematch-opencode``, found without importing the plugin."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("rematch_opencode")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).resolve().parent / "plugin" / NAME
    return path if path.is_file() else None


def settings(data: Path, hold_seconds: float | None) -> dict[str, Any]:
    """The ``INSTALLED`` value: interpreter, hook client, data folder, budgets."""
    call_ms = hold_budget(hold_seconds if hold_seconds is not None else HOLD_SECONDS)[0]
    return {"python": sys.executable, "client": str(hook_client()), "data": str(data),
            "deadline_ms": DEADLINE_MS, "call_deadline_ms": call_ms}


def render(source: str, conf: dict[str, Any]) -> str:
    """``source`` with its ``INSTALLED`` line holding ``conf``."""
    return fill_installed(source, conf, "the shipped opencode plugin has no INSTALLED line; reinstall rematch-opencode")


def is_ours(spec: Any) -> bool:
    """Whether a ``plugin`` entry is rematch's (a ``file://`` URL of ``harness-plugins/opencode/rematch.ts``)."""
    return type(spec) is str and spec.startswith("file://") and spec.endswith(f"/{FOLDER.as_posix()}/{NAME}")


def _read(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    raw, doc = read_object(path, "opencode also reads comments, which rematch does not rewrite: add the plugin by "
                                 "hand or name another file with --settings")
    if "plugin" in doc and type(doc["plugin"]) is not list:
        raise SettingsError(f"{path}: \"plugin\" is not a list; nothing was changed")
    return raw, doc


def _without_ours(doc: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)
    if "plugin" in out:
        kept = [p for p in out["plugin"] if not is_ours(p)]
        if kept or not doc["plugin"]:
            out["plugin"] = kept
        else:
            del out["plugin"]
    return out


def install(config: Path, data: Path, hold_seconds: float | None = None) -> Outcome:
    """Copy the plugin into ``data`` and name it in ``config`` (idempotent)."""
    source = shipped_source()
    if source is None:
        raise SettingsError("rematch-opencode (which ships the plugin) is not installed here")
    raw, doc = _read(config)
    copy = plugin_path(data)
    text = render(source.read_text(encoding="utf-8"), settings(data, hold_seconds))
    copied = False
    try:
        old = copy.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = None
    if old != text:
        _write(copy, text.encode("utf-8"))
        copied = True
    new = _without_ours(doc)
    new["plugin"] = [*new.get("plugin", []), copy.resolve().as_uri()]
    levels = _missing_levels(config.parent)
    laid = _lay_out(_target(config).parent)
    if new == doc and not laid:
        said = "updated rematch's plugin" if copied else "rematch's plugin is already installed"
        return Outcome(config, copied, f"{said} in {copy}, named in {config}")
    keep_original(config, raw)
    made = config.with_name(config.name + MADE_SUFFIX)
    if levels and not made.exists():
        _write(made, b"%d\n" % levels)
    _write(config, _dump(new))
    return Outcome(config, True, f"installed rematch's plugin in {copy}, named in {config} (data: {data})")


def uninstall(config: Path, data: Path) -> Outcome:
    """Take rematch's entry out of ``config`` (restoring its bytes when nothing else changed) and remove the copy."""
    raw, doc = _read(config)
    backup = config.with_name(config.name + BACKUP_SUFFIX)
    absent = config.with_name(config.name + ABSENT_SUFFIX)
    copy = plugin_path(data)
    removed = copy.exists()
    copy.unlink(missing_ok=True)
    _take_back(_target(config).parent)
    stripped = _without_ours(doc)
    if absent.exists() and stripped in ({}, {"plugin": []}):
        _target(config).unlink(missing_ok=True)
        absent.unlink()
        _remove_made(config)
        return Outcome(config, True, f"removed {config} (there was none before rematch's install) and {copy}")
    original = original_of(config)
    if original is not None and original == stripped:
        _write(config, backup.read_bytes())
        backup.unlink()
        return Outcome(config, True, f"restored {config} exactly as it was before install; removed {copy}")
    if raw is None or stripped == doc:
        _remove_made(config)
        return Outcome(config, removed, f"no rematch plugin named in {config}" + (f"; removed {copy}" if removed else ""))
    _write(config, _dump(stripped))
    for b in (backup, absent):
        b.unlink(missing_ok=True)
    _remove_made(config)  # the record only: the folder holds the config kept
    return Outcome(config, True, f"removed rematch's plugin from {config} (other changes since install kept)")


@attrs.frozen
class Status:
    """Whether the plugin is named in the config, its copy current and runnable, and what is wrong."""

    config: Path
    copy: Path
    named: bool
    current: bool
    problems: tuple[str, ...]


def status(config: Path, data: Path) -> Status:
    """The state of the install for ``data`` (:class:`Status`)."""
    copy = plugin_path(data)
    problems: list[str] = []
    try:
        _raw, doc = _read(config)
    except SettingsError as err:
        return Status(config, copy, False, False, (str(err),))
    named = copy.resolve().as_uri() in doc.get("plugin", [])
    others = [p for p in doc.get("plugin", []) if is_ours(p) and p != copy.resolve().as_uri()]
    if others:
        problems.append(f"{config} names another data folder's rematch plugin: {others[0]}")
    try:
        text = copy.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = None
    current = False
    if text is None:
        if named:
            problems.append(f"{config} names {copy}, which is gone")
        return Status(config, copy, named, False, tuple(problems))
    m = INSTALLED_LINE.search(text)
    conf = json.loads(m.group(1)) if m is not None and MARK in text[:2000] else None
    if type(conf) is not dict:
        problems.append(f"{copy} is not rematch's plugin")
    else:
        for key in ("python", "client"):
            if type(conf.get(key)) is not str or not os.path.exists(conf[key]):
                problems.append(f"its {key} {conf.get(key)!r} is gone")
        source = shipped_source()
        current = source is not None and render(source.read_text(encoding="utf-8"), conf) == text
        if not current:
            problems.append("it is older than the installed rematch-opencode")
    return Status(config, copy, named, current, tuple(problems))
