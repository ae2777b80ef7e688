"""The plugin manager: entry points of group ``rematch``, and the built-ins.

``REMATCH_LOAD_PLUGINS`` limits loading to the named plugins (comma-separated
entry-point or distribution names; empty loads none). ``REMATCH_TRACE_PLUGINS=1``
prints every hook call to stderr, for plugin authors. A plugin that fails to
load is said on stderr, once per process, by every command that loads plugins.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import pluggy

from rematch_trace.host import hookspecs
from rematch_trace.host.entry_points import GROUP as GROUP  # re-exported: callers import them from here
from rematch_trace.host.entry_points import EntryPoint, entry_points
from rematch_trace.host.source import Location

#: Built-in plugins, registered like any other.
DEFAULT_PLUGINS = ("rematch_trace.host.default_plugins.place",)

pm = pluggy.PluginManager(GROUP)
pm.add_hookspecs(hookspecs)

_loaded = False
#: The entry points plugins were loaded from, by plugin name (their metadata is parsed only when asked).
_dists: dict[str, EntryPoint] = {}
#: Entry points that failed to load: (name, error).
load_errors: list[tuple[str, str]] = []


def load_plugins() -> None:
    """Register the built-ins and every allowed installed plugin, once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in DEFAULT_PLUGINS:
        mod = importlib.import_module(name)
        pm.register(mod, name)
    if getattr(sys, "_called_from_test", False) and "REMATCH_LOAD_PLUGINS" not in os.environ:
        return
    allowed_env = os.environ.get("REMATCH_LOAD_PLUGINS")
    allowed = None if allowed_env is None else {p.strip() for p in allowed_env.split(",") if p.strip()}
    for ep in entry_points(GROUP):
        if allowed is not None and ep.name not in allowed and ep.dist_name() not in allowed:
            continue
        if pm.get_plugin(ep.name) is not None or pm.is_blocked(ep.name):
            continue
        try:
            plugin = ep.load()
        except Exception as err:  # a broken plugin must not take the host down
            load_errors.append((ep.name, f"{type(err).__name__}: {err}"))
            print(f"rematch: plugin {ep.name!r} failed to load, its files are not imported: "
                  f"{type(err).__name__}: {err}", file=sys.stderr)
            continue
        pm.register(plugin, name=ep.name)
        _dists[ep.name] = ep
    pm.check_pending()
    if os.environ.get("REMATCH_TRACE_PLUGINS"):
        _trace_hooks()


def _trace_hooks() -> None:
    def before(hook_name: str, impls: Any, kwargs: Any) -> None:
        names = ", ".join(i.plugin_name for i in impls)
        print(f"rematch: {hook_name}({', '.join(kwargs)}) -> [{names}]", file=sys.stderr)

    def after(outcome: Any, hook_name: str, impls: Any, kwargs: Any) -> None:
        if outcome.exception is not None:  # the core reports it, naming the plugin
            print(f"rematch: {hook_name} raised {type(outcome.exception).__name__}: {outcome.exception}",
                  file=sys.stderr)
        else:
            print(f"rematch: {hook_name} returned {outcome.get_result()!r:.200}", file=sys.stderr)

    pm.add_hookcall_monitoring(before, after)


def get_plugins(include_builtin: bool = False) -> list[dict[str, Any]]:
    """Installed plugins as ``{name, version, hooks, locations}``, sorted by name.

    ``locations`` are the plugin's default transcript folders (``[]`` when it
    has none, or when asking raised).
    """
    load_plugins()
    out = []
    for plugin in pm.get_plugins():
        name = pm.get_name(plugin) or repr(plugin)
        if not include_builtin and name in DEFAULT_PLUGINS:
            continue
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or [])
        entry: dict[str, Any] = {"name": name, "hooks": hooks, "locations": _locations_of(plugin)}
        if getattr(plugin, "EXAMPLE", False) is True:
            entry["example"] = True  # a plugin that says it is an example (examples/plugin), listed apart
        ep = _dists.get(name)
        version = (ep.version() if ep is not None else None) or getattr(plugin, "__version__", None)
        if version:
            entry["version"] = version
        out.append(entry)
    return sorted(out, key=lambda e: e["name"])


def _locations_of(plugin: Any) -> list[str]:
    """The default transcript folders one plugin names (its own answer only)."""
    caller = pm.subset_hook_caller("default_locations", [p for p in pm.get_plugins() if p is not plugin])
    try:
        answers = caller()
        return [str(loc.path) for answer in answers for loc in answer or [] if isinstance(loc, Location)]
    except Exception as err:  # shown, not fatal: `rematch plugins` is where a broken plugin is looked at
        print(f"rematch: plugin {pm.get_name(plugin)!r} failed in default_locations: {type(err).__name__}: {err}",
              file=sys.stderr)
        return []
