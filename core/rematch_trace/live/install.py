"""Installing the live hooks into a harness's hook file, and taking them out again.

Three harnesses read hooks from a JSON file of the same shape (``{"hooks": {EVENT: [{"matcher",
"hooks": [handler...]}]}}``): Claude Code (``settings.json``), Codex (``hooks.json``) and Gemini CLI
(``settings.json``). Each is a :class:`HarnessHooks`: the events installed, and what its handlers
may say.

Rules (docs/live-capture.md):

* the file is ``--settings``, else, for Claude Code, ``$CLAUDE_CONFIG_DIR/settings.json``, else
  ``~/.claude/settings.json``; for Codex, ``$CODEX_HOME/hooks.json``, else ``~/.codex/hooks.json``;
  for Gemini CLI, ``$GEMINI_CLI_HOME/.gemini/settings.json``, else ``~/.gemini/settings.json``;
* a file that is not a JSON object, or whose ``hooks`` are not shaped as
  Claude Code reads them, is refused with a message saying where, and left
  untouched;
* installing is idempotent: rematch's handlers are recognised by their
  command (``rematch-hook``), replaced, never doubled; every other handler,
  key and group stays as it was;
* the first install keeps the file's exact bytes in
  ``settings.json.rematch-backup`` (``.rematch-absent`` when there was no
  file); uninstalling restores those bytes when nothing else changed since,
  else removes only rematch's handlers;
* writes are atomic and keep the file's permissions; a ``settings.json`` that is a symbolic link
  (a dotfiles checkout) stays one: its target is replaced, and restored, through it.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from pathlib import Path
from typing import Any

import attrs

#: The hook command's executable name (the slower entry point, and what older installs ran).
HOOK_EXE = "rematch-hook"
#: The fast hook client's file name (beside this module; ``bin/`` in a harness plugin folder).
HOOK_CLIENT = "rematch_hook.py"
#: Events captured, and how: synchronous where order matters (a prompt, a stop, the
#: start and the end) and where rematch may deny (a call, before it runs), asynchronous
#: elsewhere so that no tool call waits for rematch.
EVENTS: tuple[tuple[str, bool, bool], ...] = (
    # (event, async, has a tool-name matcher)
    ("SessionStart", False, False),
    ("UserPromptSubmit", False, False),
    ("PreToolUse", False, True),
    ("PostToolUse", True, True),
    ("PostToolUseFailure", True, True),
    ("PermissionDenied", True, True),
    ("SubagentStart", True, False),
    ("SubagentStop", True, False),
    ("InstructionsLoaded", True, False),
    ("Stop", False, False),
    ("StopFailure", False, False),
    ("SessionEnd", False, False),
)
#: Codex's events (0.124+; docs: developers.openai.com/codex/hooks), all synchronous: Codex's
#: handlers have no ``async`` key (matching handlers of one event run concurrently instead).
#: ``PermissionRequest`` is judged as a ``PreToolUse`` is (a deny denies, a hold waits); ``PreCompact``
#: is not installed: nothing of it reaches the trace (docs/live-capture.md).
CODEX_EVENTS: tuple[tuple[str, bool, bool], ...] = (
    ("SessionStart", False, False),
    ("UserPromptSubmit", False, False),
    ("PreToolUse", False, False),
    ("PermissionRequest", False, False),
    ("PostToolUse", False, False),
    ("PostCompact", False, False),
    ("SubagentStart", False, False),
    ("SubagentStop", False, False),
    ("Stop", False, False),
    ("SessionEnd", False, False),
)
#: Gemini CLI's events (0.61; its docs: hooks/reference.md), all synchronous (Gemini CLI waits for
#: every hook but ``SessionEnd``). ``BeforeTool`` is judged (a deny is Gemini CLI's ``decision:
#: "deny"``, a hold waits); ``BeforeModel`` is where the log holds the step before it (the model's
#: calls and their results, written when they complete), ``AfterAgent`` the run's last response.
#: ``AfterModel`` (once per streamed chunk), ``AfterTool`` and ``BeforeToolSelection`` give nothing
#: the log does not, and are not installed (each would cost a hook's start).
GEMINI_CLI_EVENTS: tuple[tuple[str, bool, bool], ...] = (
    ("SessionStart", False, False),
    ("BeforeAgent", False, False),
    ("BeforeModel", False, False),
    ("BeforeTool", False, True),
    ("AfterAgent", False, False),
    ("PreCompress", False, False),
    ("SessionEnd", False, False),
)
#: The events whose hook may hold a call for a person: their command carries the hold's budget.
JUDGED_EVENTS = ("PreToolUse", "PermissionRequest", "BeforeTool")


@attrs.frozen
class HarnessHooks:
    """One harness's hook file: its events (name, async, has a tool matcher) and its ``matcher``.

    ``matcher``: what a group of a tool event matches every tool with (``None``: no matcher key,
    which Codex reads as every tool). ``timeout_ms``: a handler's ``timeout`` is in milliseconds
    (Gemini CLI's), not seconds. ``name``: the handler's ``name`` key (Gemini CLI shows it in
    ``/hooks`` and its trust prompt), or ``None``.
    """

    harness: str
    events: tuple[tuple[str, bool, bool], ...]
    matcher: str | None
    timeout_ms: bool = False
    name: str | None = None


CLAUDE_CODE_HOOKS = HarnessHooks("claude_code", EVENTS, "*")
CODEX_HOOKS = HarnessHooks("codex", CODEX_EVENTS, None)
GEMINI_CLI_HOOKS = HarnessHooks("gemini_cli", GEMINI_CLI_EVENTS, "*", timeout_ms=True, name="rematch")
#: The harnesses ``rematch hooks install --harness`` knows.
HARNESS_HOOKS = {h.harness: h for h in (CLAUDE_CODE_HOOKS, CODEX_HOOKS, GEMINI_CLI_HOOKS)}

#: How long a held ``PreToolUse`` waits for a person by default, seconds (when the policy gives none).
HOLD_SECONDS = 120
#: The longest hold: IPC v2's longest request span (10 minutes) less :data:`HOLD_SLACK_MS`.
MAX_HOLD_SECONDS = 590
#: The PreToolUse IPC budget beyond the hold: the verdict, the capture and the reply after a decision.
HOLD_SLACK_MS = 1500
#: Claude Code's ``timeout`` for the PreToolUse hook beyond its IPC budget: the interpreter's start,
#: and the in-process capture when no service answers. Past its timeout Claude Code stops the hook
#: and runs the call, so the timeout must outlast the budget.
TIMEOUT_SLACK_S = 10
BACKUP_SUFFIX = ".rematch-backup"
ABSENT_SUFFIX = ".rematch-absent"


class SettingsError(Exception):
    """The settings file cannot be read or edited safely; nothing was changed."""


def settings_path(explicit: str | os.PathLike[str] | None = None, harness: str = "claude_code") -> Path:
    """``explicit``, else the harness's own file: for Claude Code ``$CLAUDE_CONFIG_DIR/settings.json``,
    else ``~/.claude/settings.json``; for Codex ``$CODEX_HOME/hooks.json``, else ``~/.codex/hooks.json``;
    for Gemini CLI ``$GEMINI_CLI_HOME/.gemini/settings.json``, else ``~/.gemini/settings.json``."""
    if explicit:
        return Path(explicit).expanduser()
    if harness == "gemini_cli":
        home = os.environ.get("GEMINI_CLI_HOME", "").strip()
        return (Path(home).expanduser() if home else Path.home()) / ".gemini" / "settings.json"
    if harness == "codex":
        home = os.environ.get("CODEX_HOME", "").strip()
        return (Path(home).expanduser() if home else Path.home() / ".codex") / "hooks.json"
    env = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    root = Path(env).expanduser() if env else Path.home() / ".claude"
    return root / "settings.json"


def hook_client() -> Path:
    """The fast hook client: ``rematch_hook.py`` beside this module, standard library only.

    One file serves every harness: ``rematch hooks install`` points at it, and the plugin
    folders handed to harnesses carry a copy of it (:mod:`rematch_trace.live.harness_folder`).
    """
    return Path(__file__).resolve().with_name(HOOK_CLIENT)


def hook_command(out: str | None = None, harness: str = "claude_code") -> str:
    """The command line installed (absolute paths, so Claude Code's ``PATH`` does not matter).

    ``exec <this python> -S -I <rematch_hook.py> <harness>``: the fast client,
    which starts Python without ``site`` and imports no rematch code (see
    docs/live-capture.md). ``out`` is written as ``--out``, absolute. ``exec``:
    Claude Code runs the command with a shell, and the client's parent must be
    Claude Code itself, not that shell (the service takes it for the harness
    whose approvals it refuses; docs/threat-model.md).
    """
    cmd = f"exec {shlex.quote(sys.executable)} -S -I {shlex.quote(str(hook_client()))} {shlex.quote(harness)}"
    if out:
        cmd += f" --out {shlex.quote(str(Path(out).expanduser().resolve()))}"
    return cmd


def is_ours(handler: Any) -> bool:
    """Whether a hook handler is rematch's (its command runs ``rematch-hook`` or the fast client)."""
    if type(handler) is not dict or type(handler.get("command")) is not str:
        return False
    try:
        words = shlex.split(handler["command"])
    except ValueError:
        return False
    if words[:1] == ["exec"]:  # what this version installs
        words = words[1:]
    if not words:
        return False
    if os.path.basename(words[0]) == HOOK_EXE:
        return True
    # <python> [-S -I ...] <path>/rematch_hook.py: the script is the first word that is not an option.
    script = next((w for w in words[1:] if not w.startswith("-")), "")
    return os.path.basename(script) == HOOK_CLIENT


def read_object(path: Path, fix: str = "fix it or name another file with --settings") -> tuple[bytes | None, dict[str, Any]]:
    """A settings file's exact bytes (``None``: no file) and its JSON object (``{}`` when absent or blank).

    :raises SettingsError: it cannot be read, is not UTF-8, not JSON (``fix`` says what to do), or
        not an object.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as err:
        raise SettingsError(f"{path}: cannot read it ({err.strerror or err})") from None
    try:
        doc = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: not UTF-8 text; nothing was changed") from None
    except json.JSONDecodeError as err:
        raise SettingsError(
            f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); {fix}; nothing was changed"
        ) from None
    if type(doc) is not dict:
        raise SettingsError(f"{path}: holds a JSON {type(doc).__name__}, not an object; nothing was changed")
    return raw, doc


def _read(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    raw, doc = read_object(path)
    hooks = doc.get("hooks")
    if hooks is not None:
        if type(hooks) is not dict:
            raise SettingsError(f"{path}: \"hooks\" is not an object; nothing was changed")
        for event, groups in hooks.items():
            if type(groups) is not list or any(
                type(g) is not dict or type(g.get("hooks", [])) is not list for g in groups
            ):
                raise SettingsError(
                    f"{path}: \"hooks\".{event} is not a list of {{\"matcher\", \"hooks\": [...]}} groups; "
                    "nothing was changed"
                )
    return raw, doc


def _without_ours(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with rematch's handlers removed, and the groups and events left empty by that."""
    hooks = doc.get("hooks")
    if type(hooks) is not dict:
        return dict(doc)
    new_hooks: dict[str, Any] = {}
    for event, groups in hooks.items():
        kept = []
        for g in groups:
            handlers = g.get("hooks", [])
            mine = [h for h in handlers if is_ours(h)]
            if not mine:
                kept.append(g)
            elif len(mine) < len(handlers):
                kept.append({**g, "hooks": [h for h in handlers if not is_ours(h)]})
        if kept or not groups:
            new_hooks[event] = kept
    out = dict(doc)
    if new_hooks or not hooks:
        out["hooks"] = new_hooks
    else:
        del out["hooks"]
    return out


def _bare(doc: Any) -> Any:
    """``doc`` without empty hook lists or an empty ``hooks``: what removing ours may leave or take."""
    if type(doc) is not dict or type(doc.get("hooks")) is not dict:
        return doc
    hooks = {k: v for k, v in doc["hooks"].items() if v != []}
    out = {k: v for k, v in doc.items() if k != "hooks"}
    if hooks:
        out["hooks"] = hooks
    return out


def hold_budget(hold_seconds: float) -> tuple[int, int]:
    """(IPC budget in ms, Claude Code ``timeout`` in s) of a PreToolUse hook that waits ``hold_seconds`` for a person.

    The budget is the hold plus :data:`HOLD_SLACK_MS` (the service's approval wait stops
    1 s before the request's hard deadline; a policy timeout shorter than the hold ends it
    sooner); the timeout is the budget, rounded up, plus :data:`TIMEOUT_SLACK_S`.
    """
    budget_ms = round(hold_seconds * 1000) + HOLD_SLACK_MS
    return budget_ms, -(-budget_ms // 1000) + TIMEOUT_SLACK_S


def default_hold_seconds() -> int:
    """The hold ``hooks install`` uses when not told: the policy's ``approval_timeout_s``, else :data:`HOLD_SECONDS`."""
    from rematch_trace.live.verdicts.policy import PolicyError, load_policy

    try:
        seconds = load_policy().approval_timeout_s
    except PolicyError:
        return HOLD_SECONDS
    return max(1, min(MAX_HOLD_SECONDS, int(-(-seconds // 1))))


def _with_ours(doc: dict[str, Any], command: str, hold_seconds: float | None = None,
               target: HarnessHooks = CLAUDE_CODE_HOOKS) -> dict[str, Any]:
    out = _without_ours(doc)
    hooks = dict(out.get("hooks") or {})
    for event, is_async, matcher in target.events:
        handler: dict[str, Any] = {"type": "command", "command": command}
        if target.name is not None:
            handler = {"name": target.name, **handler}
        if event in JUDGED_EVENTS and hold_seconds is not None:
            # A held call waits for a person: the IPC budget (read by the hook client as one
            # word, which rematch-hook ignores) and the harness's own timeout follow the hold.
            budget_ms, timeout_s = hold_budget(hold_seconds)
            handler["command"] = f"{command} --deadline-ms={budget_ms}"
            handler["timeout"] = timeout_s * 1000 if target.timeout_ms else timeout_s
        if is_async:
            handler["async"] = True
        group: dict[str, Any] = {"matcher": target.matcher} if matcher and target.matcher is not None else {}
        group["hooks"] = [handler]
        hooks[event] = [*hooks.get(event, []), group]
    out["hooks"] = hooks
    return out


def _target(path: Path) -> Path:
    """The file ``path`` stands for: itself, or, when it is a symbolic link (a dotfiles checkout), the file
    the link leads to (existing or not), so that writing it keeps the link."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically, keeping its permissions (0600 for a new file); a symbolic link is
    kept, and its target replaced (:func:`_target`)."""
    path = _target(path)
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.rematch-{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _dump(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


@attrs.frozen
class Outcome:
    """What an install or uninstall did, for the command to say."""

    path: Path
    changed: bool
    message: str


def install(path: Path, command: str, hold_seconds: float | None = None,
            target: HarnessHooks = CLAUDE_CODE_HOOKS) -> Outcome:
    """Install rematch's handlers for every event of ``target`` (Claude Code's :data:`EVENTS`
    by default; idempotent).

    ``hold_seconds``: how long a held ``PreToolUse`` may wait for a person (its command's
    ``--deadline-ms`` and its ``timeout``, :func:`hold_budget`); ``None`` keeps the short budget.
    """
    raw, doc = _read(path)
    new = _with_ours(doc, command, hold_seconds, target)
    if new == doc:
        return Outcome(path, False, f"already installed in {path}")
    keep_original(path, raw)
    _write(path, _dump(new))
    held = f"; a held call waits up to {hold_seconds:g} s for a decision" if hold_seconds is not None else ""
    return Outcome(path, True, f"installed {len(target.events)} hooks in {path}{held}")


def keep_original(path: Path, raw: bytes | None) -> None:
    """Save ``path``'s state before rematch first writes it (its bytes ``raw``, or that it was absent): what
    uninstall restores. Kept once: a second install leaves the first record alone."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    absent = path.with_name(path.name + ABSENT_SUFFIX)
    if not backup.exists() and not absent.exists():
        if raw is None:
            _write(absent, b"")
        else:
            _write(backup, raw)


def original_of(path: Path) -> dict[str, Any] | None:
    """The JSON object ``path`` held before rematch's install (:func:`keep_original`), or ``None`` when no
    record of it is kept or it cannot be read."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if not backup.exists():
        return None
    try:
        doc = json.loads(backup.read_bytes().decode("utf-8") or "{}")
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def uninstall(path: Path) -> Outcome:
    """Remove rematch's handlers; restore the exact bytes of before when nothing else changed."""
    raw, doc = _read(path)
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    absent = path.with_name(path.name + ABSENT_SUFFIX)
    stripped = _without_ours(doc)
    if raw is None and not backup.exists():
        return Outcome(path, False, f"nothing to uninstall: {path} does not exist")
    original = original_of(path)
    if absent.exists() and stripped in ({}, {"hooks": {}}):
        _target(path).unlink(missing_ok=True)  # a link stays, leading nowhere again, as before install
        absent.unlink()
        return Outcome(path, True, f"removed {path} (there was none before rematch's install)")
    if original is not None and _bare(original) == _bare(stripped):
        _write(path, backup.read_bytes())
        backup.unlink()
        return Outcome(path, True, f"restored {path} exactly as it was before install")
    if stripped == doc:
        return Outcome(path, False, f"no rematch hooks in {path}")
    if original is not None and type(original.get("hooks")) is dict:
        # Empty event lists the user had are theirs: put back any that removing ours took.
        for event, groups in original["hooks"].items():
            if groups == [] and event not in stripped.get("hooks", {}):
                stripped.setdefault("hooks", {})[event] = []
    _write(path, _dump(stripped))
    for b in (backup, absent):
        b.unlink(missing_ok=True)
    return Outcome(path, True, f"removed rematch's hooks from {path} (other changes since install kept)")


def installed_events(path: Path) -> dict[str, list[str]]:
    """Event -> rematch's commands installed for it (empty when none)."""
    _raw, doc = _read(path)
    out: dict[str, list[str]] = {}
    for event, groups in (doc.get("hooks") or {}).items():
        for g in groups:
            for h in g.get("hooks", []):
                if is_ours(h):
                    out.setdefault(event, []).append(h["command"])
    return out
