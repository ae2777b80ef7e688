"""``rematch hooks install|uninstall|status|folder``: live capture from Claude Code's or Codex's hooks, or pi/omp's extension."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from rematch_trace.cli.common import data_folder, data_option, echo_json

if TYPE_CHECKING:
    from rematch_trace.live.install import Outcome

_SETTINGS = click.option(
    "--settings", "settings", type=click.Path(dir_okay=False),
    help="The harness's hook file (default: Claude Code's $CLAUDE_CONFIG_DIR/settings.json, else "
         "~/.claude/settings.json; Codex's $CODEX_HOME/hooks.json, else ~/.codex/hooks.json; Gemini CLI's "
         "$GEMINI_CLI_HOME/.gemini/settings.json, else ~/.gemini/settings.json; opencode's "
         "$XDG_CONFIG_HOME/opencode/opencode.json, else ~/.config/opencode/opencode.json).",
)
_OUT = data_option
_HARNESS = click.option(
    "--harness", "harness", type=click.Choice(["claude_code", "codex", "gemini_cli", "opencode", "pi", "omp"]),
    default="claude_code", show_default=True,
    help="The harness: Claude Code's, Codex's or Gemini CLI's hooks, rematch's plugin for opencode, or its "
         "extension for pi or omp.",
)
#: The harnesses whose hooks live in a JSON hook file (the others take rematch's extension).
_HOOK_FILES = ("claude_code", "codex", "gemini_cli")
#: ``hooks folder``: only the harnesses whose plugin gives a plugin folder (pi and omp take the extension;
#: Gemini CLI and opencode take rematch's hooks or plugin through ``hooks install``).
_FOLDER_HARNESS = click.option(
    "--harness", "harness", type=click.Choice(["claude_code", "codex"]), default="claude_code", show_default=True,
    help="Claude Code's plugin folder, or Codex's (pi and omp: rematch hooks install --harness pi|omp).",
)
#: What Codex asks of a person before it runs a new or changed hook, said after an install.
CODEX_TRUST = ("Codex runs a new or changed hook only once you trust it: start codex and open /hooks to "
               "review and trust rematch's hooks (each install that changes them asks again). For automation "
               "whose hooks you checked yourself: codex exec --dangerously-bypass-hook-trust.")
#: What Gemini CLI asks before it runs rematch's hooks, said after an install (docs/live-capture.md).
GEMINI_TRUST = ("Gemini CLI runs hooks from your user settings as they are. A project's .gemini/settings.json "
                "(--settings) is read only in a trusted folder, Gemini CLI warns before the first run of each "
                "hook there and again whenever its name or command changes (a reinstall that changes it), and the "
                "agent can edit that file: the user settings are the place for a guard.")
#: Said after an install, per harness.
_AFTER_INSTALL = {"codex": CODEX_TRUST, "gemini_cli": GEMINI_TRUST}
_AGENT_DIR = click.option(
    "--agent-dir", "agent_dir", type=click.Path(file_okay=False),
    help="pi/omp: the agent folder (default: $PI_CODING_AGENT_DIR, else ~/.pi/agent or ~/.omp/agent).",
)


def _edit(change: Callable[[], Outcome], after: str = "") -> None:
    """Run an edit of the settings file; say what it did, or why it refused, in one line."""
    from rematch_trace.live.install import SettingsError

    try:
        outcome = change()
    except SettingsError as err:
        raise click.ClickException(str(err)) from None
    except OSError as err:
        raise click.ClickException(f"{err.filename}: {err.strerror or err}") from None
    from rematch_trace.host.text import one_line

    click.echo(one_line(outcome.message))
    if after and outcome.changed:
        click.echo(after)


@click.group("hooks")
def hooks_cmd() -> None:
    """Capture sessions live as they run: Claude Code's and Codex's hooks, or rematch's extension for pi and
    omp (--harness; see docs/live-capture.md)."""


@hooks_cmd.command("install")
@_SETTINGS
@_OUT
@_HARNESS
@_AGENT_DIR
@click.option("--hold-seconds", "hold_seconds", type=click.IntRange(1, 590), default=None,
              help="How long a call the policy holds waits for `rematch approve|deny` (default: the policy's "
                   "approval_timeout_s, else 120); sets the PreToolUse hook's timeout and IPC deadline.")
def install_cmd(settings: str | None, out: str | None, hold_seconds: int | None, harness: str,
                agent_dir: str | None) -> None:
    """Add rematch's hooks to Claude Code's or Codex's hook file, or its extension to pi/omp (idempotent; keeps your own)."""
    from rematch_trace.live.install import (
        HARNESS_HOOKS,
        default_hold_seconds,
        hook_command,
        install,
        settings_path,
    )

    hold = hold_seconds if hold_seconds is not None else default_hold_seconds()
    if harness == "opencode":
        from rematch_trace.live import opencode_install as oc
        from rematch_trace.store.location import data_dir

        root = data_dir(out).resolve()
        _edit(lambda: oc.install(oc.config_path(settings), root, hold))
        return
    if harness not in _HOOK_FILES:
        from rematch_trace.live import extension_install as ext
        from rematch_trace.store.location import data_dir

        root = data_dir(out).resolve()
        _edit(lambda: ext.install(harness, ext.target(harness, agent_dir), root, hold))
        return
    path, command = settings_path(settings, harness), hook_command(out, harness=harness)
    _edit(lambda: install(path, command, hold, HARNESS_HOOKS[harness]), _AFTER_INSTALL.get(harness, ""))


@hooks_cmd.command("folder")
@_FOLDER_HARNESS
def folder_cmd(harness: str) -> None:
    """Print the harness's plugin folder with rematch's hooks, made (or brought up to date) in the data folder.

    For Claude Code (claude --plugin-dir "$(rematch hooks folder)") and Codex (codex plugin
    marketplace add "$(rematch hooks folder --harness codex)", then codex plugin add rematch@rematch).
    Its hooks write to $REMATCH_HOME, else the platform's data folder: the folder is made there.
    """
    from rematch_trace.cli.common import Fatal, NothingToRead
    from rematch_trace.host.facade import PluginFailure
    from rematch_trace.importing.worker import worker_host
    from rematch_trace.live.harness_folder import made_whole

    try:
        template = worker_host().plugin_template(harness)
    except PluginFailure as err:
        raise Fatal(str(err)) from None
    if template is None:
        raise NothingToRead(f"no plugin folder for {harness}: its plugin gives none (rematch hooks install "
                            f"--harness {harness} installs rematch's hooks)")
    try:
        click.echo(str(made_whole(template, harness)))
    except OSError as err:
        raise Fatal(f"the plugin folder cannot be written: {err}") from None


@hooks_cmd.command("uninstall")
@_SETTINGS
@_OUT
@_HARNESS
@_AGENT_DIR
def uninstall_cmd(settings: str | None, out: str | None, harness: str, agent_dir: str | None) -> None:
    """Remove rematch's hooks (restoring the settings file exactly when nothing else changed), or its extension."""
    from rematch_trace.live.install import settings_path, uninstall

    if harness == "opencode":
        from rematch_trace.live import opencode_install as oc
        from rematch_trace.store.location import data_dir

        _edit(lambda: oc.uninstall(oc.config_path(settings), data_dir(out).resolve()))
        return
    if harness not in _HOOK_FILES:
        from rematch_trace.live import extension_install as ext

        _edit(lambda: ext.uninstall(ext.target(harness, agent_dir)))
        return
    _edit(lambda: uninstall(settings_path(settings, harness)))


@hooks_cmd.command("status")
@_SETTINGS
@_OUT
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
@_HARNESS
@_AGENT_DIR
def status_cmd(settings: str | None, out: str | None, as_json: bool, harness: str, agent_dir: str | None) -> None:
    """Say which hooks are installed, and whether events arrived recently."""
    if harness == "opencode":
        _opencode_status(settings, out, as_json)
        return
    if harness not in _HOOK_FILES:
        _extension_status(harness, agent_dir, out, as_json)
        return
    from rematch_trace.live.folder import live_dir
    from rematch_trace.live.install import HARNESS_HOOKS, SettingsError, installed_events, settings_path
    from rematch_trace.live.session_writer import read_state

    events = HARNESS_HOOKS[harness].events
    path = settings_path(settings, harness)
    report: dict[str, Any] = {"harness": harness, "settings": str(path)}
    try:
        found = installed_events(path)
        report["installed"] = sorted(found)
        report["missing"] = [e for e, _a, _m in events if e not in found]
        report["settings_error"] = None
    except SettingsError as err:
        report["installed"], report["missing"], report["settings_error"] = [], [e for e, _a, _m in events], str(err)
    data = data_folder(out)
    folder = live_dir(data.root)
    states = sorted(folder.glob("*.json")) if folder.is_dir() else []
    last = 0
    running = 0
    for p in states:
        st = read_state(p) or {}
        last = max(last, int(st.get("last_ms") or 0))
        running += st.get("ended") is None
    errors = folder / "errors.log"
    lines = errors.read_text(errors="replace").splitlines() if errors.is_file() else []
    from rematch_trace.cli.doctor_cmd import hooks_report
    from rematch_trace.live.hook_check import SERVICE_FIX, service_problems, service_state

    serving, pid = service_state(data.root)
    report["broken"] = hooks_report(settings, harness)["broken"]
    service_broken = service_problems(data.root) if serving else []
    report["service"] = {"running": serving, "pid": pid, "problems": service_broken}
    report.update(
        data=str(data.root),
        live_sessions=len(states),
        running=running,
        last_event_ms=last or None,
        errors=len(lines),
        last_error=lines[-1] if lines else None,
    )
    if as_json:
        echo_json(report)
        if report["broken"] or service_broken:
            raise SystemExit(1)
        return
    from rematch_trace.host.text import one_line

    # Paths and the error log's last line (which may name a session's id) shown with hidden characters escaped.
    if report["settings_error"]:
        click.echo(one_line(f"settings: {report['settings_error']}"))
    elif not found:
        again = f" --harness {harness}" if harness != "claude_code" else ""
        click.echo(one_line(f"not installed in {path} (rematch hooks install{again})"))
    else:
        missing = f"; missing: {', '.join(report['missing'])}" if report["missing"] else ""
        click.echo(one_line(f"installed in {path}: {len(found)} of {len(events)} events{missing}"))
    if last:
        ago = max(0, int(time.time() - last / 1000))
        click.echo(one_line(f"{len(states)} live sessions ({running} running) in {data.root}; last event {ago}s ago"))
    else:
        click.echo(one_line(f"no live event has arrived in {data.root} yet"))
    if lines:
        click.echo(one_line(f"{len(lines)} errors logged in {errors}; last: {lines[-1]}"))
    click.echo(f"verdict service: running, pid {pid}" if serving else "verdict service: not running (rematch serve)")
    for b in report["broken"]:
        click.echo(f"broken: a hook command cannot run: {b['problem']}; fix: rematch hooks install")
    for problem in service_broken:
        click.echo(f"broken: verdict service: {problem}; fix: {SERVICE_FIX}")
    if report["broken"] or service_broken:
        raise SystemExit(1)


def _extension_status(harness: str, agent_dir: str | None, out: str | None, as_json: bool) -> None:
    """``hooks status --harness pi|omp``: the extension's copy, its configuration, the service; exit 1 when broken."""
    from rematch_trace.host.text import one_line
    from rematch_trace.live import extension_install as ext
    from rematch_trace.live.hook_check import SERVICE_FIX, service_problems, service_state

    data = data_folder(out)
    st = ext.status(ext.target(harness, agent_dir), data.root.resolve())
    serving, pid = service_state(data.root)
    service_broken = service_problems(data.root) if serving else []
    report = {"harness": harness, "path": str(st.path), "installed": st.installed, "current": st.current,
              "problems": list(st.problems), "data": str(data.root),
              "service": {"running": serving, "pid": pid, "problems": service_broken}}
    if as_json:
        echo_json(report)
    else:
        if st.installed:
            click.echo(one_line(f"installed in {st.path}" + ("" if st.current else " (not current)")))
        else:
            click.echo(one_line(f"not installed in {st.path} (rematch hooks install --harness {harness})"))
        for problem in st.problems:
            click.echo(one_line(f"broken: {problem}; fix: rematch hooks install --harness {harness}"))
        click.echo(f"verdict service: running, pid {pid}" if serving else "verdict service: not running (rematch serve)")
        for problem in service_broken:
            click.echo(one_line(f"broken: verdict service: {problem}; fix: {SERVICE_FIX}"))
    if st.problems or service_broken:
        raise SystemExit(1)


def _opencode_status(settings: str | None, out: str | None, as_json: bool) -> None:
    """``hooks status --harness opencode``: the plugin named in opencode's config, its copy, the service;
    exit 1 when broken."""
    from rematch_trace.host.text import one_line
    from rematch_trace.live import opencode_install as oc
    from rematch_trace.live.hook_check import service_state

    data = data_folder(out)
    st = oc.status(oc.config_path(settings), data.root.resolve())
    serving, pid = service_state(data.root)
    report = {"harness": "opencode", "config": str(st.config), "path": str(st.copy), "installed": st.named,
              "current": st.current, "problems": list(st.problems), "data": str(data.root),
              "service": {"running": serving, "pid": pid}}
    if as_json:
        echo_json(report)
    else:
        if st.named:
            click.echo(one_line(f"installed in {st.copy}, named in {st.config}" + ("" if st.current else " (not current)")))
        else:
            click.echo(one_line(f"not installed in {st.config} (rematch hooks install --harness opencode)"))
        for problem in st.problems:
            click.echo(one_line(f"broken: {problem}; fix: rematch hooks install --harness opencode"))
        click.echo(f"verdict service: running, pid {pid}" if serving else "verdict service: not running (rematch serve)")
    if st.problems:
        raise SystemExit(1)
