"""``rematch doctor``: what is installed, what is broken, and what to run to fix it."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import click

from rematch_trace.cli.common import PACKAGES, data_folder, data_option, echo_json, missing_package

#: The harnesses besides Claude Code whose hooks rematch installs into a hook file.
_FILE_HOOKS = ("codex", "gemini_cli")


def hooks_report(settings: str | None, harness: str = "claude_code") -> dict[str, Any]:
    """The hooks installed for ``harness``, each command checked (see :mod:`rematch_trace.live.hook_check`).

    Shared with ``rematch hooks status``. Claude Code, Codex and Gemini CLI have hooks in a file.
    """
    from rematch_trace.live.hook_check import command_problem
    from rematch_trace.live.install import HARNESS_HOOKS, SettingsError, installed_events, settings_path

    events = HARNESS_HOOKS[harness].events
    path = settings_path(settings, harness)
    out: dict[str, Any] = {"harness": harness, "settings": str(path), "settings_error": None,
                           "installed": [], "missing": [e for e, _a, _m in events], "broken": []}
    try:
        found = installed_events(path)
    except SettingsError as err:
        out["settings_error"] = str(err)
        return out
    out["installed"] = sorted(found)
    out["missing"] = [e for e, _a, _m in events if e not in found]
    problems = {}
    for commands in found.values():
        for c in commands:
            why = command_problem(c)
            if why is not None:
                problems[c] = why
    out["broken"] = [{"command": c, "problem": why} for c, why in sorted(problems.items())]
    return out


def _data_report(out: str | None) -> dict[str, Any]:
    from rematch_trace.importing.settings import ImportSettings
    from rematch_trace.store.ledger import SCHEMA_VERSION, Ledger

    data = data_folder(out)
    rep: dict[str, Any] = {"path": str(data.root), "exists": data.root.is_dir(), "problem": None}
    if not rep["exists"]:
        return rep
    rep["writable"] = os.access(data.root, os.W_OK)
    if not data.ledger.is_file():
        return rep
    try:
        with Ledger(data.ledger, readonly=True) as ledger:
            rep["schema"] = ledger.version
            rep["sessions"], rep["flagged"] = ledger.totals()
            if ledger.version >= SCHEMA_VERSION:
                key = ImportSettings().outputs_key
                rep["other_settings"] = int(ledger.db.execute(
                    "SELECT count(*) FROM sources WHERE outcome IN ('imported', 'resumed') "
                    "AND settings IS NOT ?", (key,)).fetchone()[0])
    except sqlite3.Error as err:
        rep["problem"] = f"the ledger cannot be read: {err}"
        return rep
    if rep["schema"] > SCHEMA_VERSION:
        rep["problem"] = f"the ledger is at schema {rep['schema']}, newer than this rematch ({SCHEMA_VERSION})"
    return rep


@click.command("doctor")
@data_option
@click.option("--settings", "settings", type=click.Path(dir_okay=False),
              help="Claude Code settings file (default: $CLAUDE_CONFIG_DIR/settings.json, else ~/.claude/settings.json).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def doctor_cmd(out: str | None, settings: str | None, as_json: bool) -> None:
    """Check the installation: plugins, packages, the data folder, hooks, the verdict service, the policy,
    the configuration. Exit status 1 when something is broken, with what to run to fix it."""
    from rematch_trace.host.loading import get_plugins, load_errors
    from rematch_trace.live.hook_check import SERVICE_FIX, service_problems, service_state
    from rematch_trace.live.verdicts.policy import PolicyError, load_policy, policy_path
    from rematch_trace.place.domain import config_path, config_problems

    broken: list[tuple[str, str]] = []  # (what, what to run)
    plugins = get_plugins()
    for name, err in load_errors:
        broken.append((f"plugin {name} does not load: {err}", f"pip install --force-reinstall the plugin {name}"))
    packages = {dist: not missing_package(module) for module, dist in PACKAGES.values()}
    for dist, present in packages.items():
        if not present:
            broken.append((f"the Python package {dist} is missing", "pip install ./ (in rematch's checkout)"))
    data = _data_report(out)
    if data.get("problem"):
        broken.append((f"data folder {data['path']}: {data['problem']}", "upgrade rematch"))
    if data.get("exists") and not data.get("writable"):
        broken.append((f"data folder {data['path']} is read-only", f"chmod u+w {data['path']}"))
    hooks = hooks_report(settings)
    if hooks["settings_error"]:
        broken.append((f"hooks: {hooks['settings_error']}", "fix the settings file, then rematch hooks install"))
    for b in hooks["broken"]:
        broken.append((f"hook command cannot run: {b['problem']}", "rematch hooks install (writes this environment's paths)"))
    # The other harnesses whose hooks rematch writes into a hook file (Codex, Gemini CLI), when their
    # plugin is loaded and their file holds rematch's hooks or cannot be read: checked the same way.
    loaded = {str(p["name"]) for p in plugins}
    more = [r for r in (hooks_report(None, h) for h in _FILE_HOOKS if h in loaded)
            if r["installed"] or r["settings_error"]]
    if "opencode" in loaded:
        from pathlib import Path

        from rematch_trace.live import opencode_install as oc

        st = oc.status(oc.config_path(None), Path(str(data["path"])).resolve())
        if st.named or st.problems:
            more.append({"harness": "opencode", "settings": str(st.config), "settings_error": None,
                         "installed": ["plugin"] if st.named else [], "missing": [],
                         "broken": [{"command": str(st.copy), "problem": why} for why in st.problems]})
    for r in more:
        again = f"rematch hooks install --harness {r['harness']}"
        if r["settings_error"]:
            broken.append((f"hooks ({r['harness']}): {r['settings_error']}", f"fix the settings file, then {again}"))
        for b in r["broken"]:
            broken.append((f"hook command ({r['harness']}) cannot run: {b['problem']}", again))
    running, pid = service_state(data["path"])
    service_broken = service_problems(data["path"]) if running else []
    for problem in service_broken:
        broken.append((f"verdict service: {problem}", SERVICE_FIX))
    policy: dict[str, Any] = {"path": str(policy_path()), "problem": None}
    try:
        p = load_policy()
        policy["rules"] = len(p.rules)
        policy["default"] = p.default
    except PolicyError as err:
        policy["problem"] = str(err)
        policy["problems"] = list(err.problems)
        broken.extend((f"policy: {p}", f"fix {policy['path']} (rematch policy show checks it)") for p in err.problems)
    config = {"path": str(config_path()), "problems": config_problems()}
    for problem in config["problems"]:
        broken.append((f"config: {problem}", f"fix {config['path']} (see README: domains)"))
    report = {
        "plugins": plugins, "plugin_errors": [{"name": n, "error": e} for n, e in load_errors],
        "packages": packages, "data": data, "hooks": [hooks, *more],
        "service": {"running": running, "pid": pid, "problems": service_broken}, "policy": policy, "config": config,
        "broken": [{"problem": what, "fix": fix} for what, fix in broken],
    }
    if as_json:
        echo_json(report)
    else:
        names = ", ".join(f"{p['name']} {p.get('version', '')}".strip() + (" (example)" if p.get("example") else "")
                          for p in plugins) or "none"
        click.echo(f"plugins: {names}")
        click.echo("packages: " + ", ".join(f"{d} {'ok' if ok else 'MISSING'}" for d, ok in packages.items()))
        if not data["exists"]:
            click.echo(f"data folder: {data['path']} (not made yet: rematch import)")
        else:
            extra = f"; {data['other_settings']} files made under other settings (the next import redoes them)" \
                if data.get("other_settings") else ""
            click.echo(f"data folder: {data['path']}: {data.get('sessions', 0)} sessions, "
                       f"{data.get('flagged', 0)} flagged{extra}")
        if hooks["installed"]:
            state = f"{len(hooks['installed'])} events installed in {hooks['settings']}"
            state += f", {len(hooks['broken'])} cannot run" if hooks["broken"] else ", their commands run"
        else:
            state = f"not installed in {hooks['settings']} (rematch hooks install)"
        # The other harness plugins by name, as loaded: a plugin added (opencode...) is listed with no code here.
        shown = {r["harness"] for r in more}
        others = [str(p["name"]) for p in plugins
                  if p["name"] != "claude_code" and p["name"] not in shown and not p.get("example")]
        rest = f"; {', '.join(others)}: imported, hooks not checked here" if others else ""
        click.echo(f"hooks (claude_code): {state}{rest}")
        for r in more:
            if r["settings_error"]:
                click.echo(f"hooks ({r['harness']}): {r['settings']}: cannot be read")
                continue
            what = "rematch's plugin named" if r["harness"] == "opencode" else f"{len(r['installed'])} events installed"
            state = f"{what} in {r['settings']}"
            if r["harness"] == "opencode":
                state += f", {len(r['broken'])} problem(s)" if r["broken"] else ", it can run"
            else:
                state += f", {len(r['broken'])} cannot run" if r["broken"] else ", their commands run"
            click.echo(f"hooks ({r['harness']}): {state}")
        # Each plugin's default folders, as it names them: no harness is known to the core here.
        for plugin in plugins:
            if plugin["locations"]:
                where = ", ".join(loc if os.path.isdir(loc) else f"{loc} (none)" for loc in plugin["locations"])
                click.echo(f"looks in ({plugin['name']}): {where}")
        state = "BROKEN" if service_broken else "running"
        click.echo(f"verdict service: {state + ', pid ' + str(pid) if running else 'not running (rematch serve)'}")
        click.echo(f"policy: {policy['path']}" + (f": {policy['rules']} rules, default {policy['default']}"
                                                  if policy["problem"] is None else ": BROKEN"))
        click.echo(f"config: {config['path']}" + (": BROKEN" if config["problems"] else ""))
        for what, fix in broken:
            click.echo(f"broken: {what}\n  fix: {fix}")
        click.echo(f"{len(broken)} problem(s)" if broken else "no problems found")
    if broken:
        raise SystemExit(1)
