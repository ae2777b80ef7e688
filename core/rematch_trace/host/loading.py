"""The plugin manager: entry points of group ``rematch``, and the built-ins.

``REMATCH_LOAD_PLUGINS`` limits loading to the named plugins (comma-separated
entry-point or distribution names; empty loads none). ``REMATCH_TRACE_PLUGINS=1``
prints every hook call to stderr, for plugin authors. A plugin that fails to
load is said on stderr, once per process, by every command that loads plugins.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any

import pluggy

from rematch_trace.host import hookspecs
from rematch_trace.host.source import Location

GROUP = "rematch"
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


class EntryPoint:
    """One entry point of an installed distribution: what :mod:`importlib.metadata` gives, found
    without importing it (it imports ``email``, ``zipfile`` and more: a third of a rerun's start-up)."""

    def __init__(self, name: str, value: str, dist_path: str) -> None:
        self.name = name
        self.value = value
        self.dist_path = dist_path

    def load(self) -> Any:
        """The object the entry point names (``module`` or ``module:attr.attr``)."""
        module, _, attrs = self.value.partition(":")
        obj: Any = importlib.import_module(module.strip())
        for attr in re.sub(r"\[.*\]", "", attrs).strip().split("."):
            if attr:
                obj = getattr(obj, attr)
        return obj

    def _metadata(self) -> Any:
        import importlib.metadata
        from pathlib import Path

        return importlib.metadata.PathDistribution(Path(self.dist_path))

    def dist_name(self) -> str:
        """The name of the distribution it comes from."""
        return str(self._metadata().metadata["Name"] or "")

    def version(self) -> str | None:
        """The version of the distribution it comes from."""
        version = self._metadata().version
        return str(version) if version else None


def entry_points(group: str) -> list[EntryPoint]:
    """The entry points of ``group``, in the order :func:`importlib.metadata.entry_points` gives them.

    The same search: every folder on ``sys.path`` in order, its ``*.dist-info`` and
    ``*.egg-info`` folders in listing order, the first distribution of a name winning.
    (A plugin inside a zip archive on ``sys.path`` is not found here.)
    """
    seen: set[str] = set()
    out: list[EntryPoint] = []
    for entry in sys.path:
        folder = entry or "."
        try:
            children = os.listdir(folder)
        except OSError:
            continue  # a zip archive, or a folder that is gone
        by_name: dict[str, list[str]] = {}
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                by_name.setdefault(_normalize(low.rpartition(".")[0].partition("-")[0]), []).append(child)
        for name, dists in by_name.items():
            for child in dists:
                if name in seen:
                    break
                seen.add(name)
                out.extend(_group_of(os.path.join(folder, child), group))
    return out


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _group_of(dist_path: str, group: str) -> list[EntryPoint]:
    """The entry points of ``group`` in one distribution's ``entry_points.txt``."""
    try:
        # Read as bytes: every command reads every distribution's file, most naming no plugin.
        with open(os.path.join(dist_path, "entry_points.txt"), "rb") as f:
            data = f.read()
    except OSError:
        return []
    if group.encode() not in data:
        return []
    out: list[EntryPoint] = []
    section = None
    for raw in data.decode("utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            continue
        if section == group and "=" in line:
            name, _, value = line.partition("=")
            out.append(EntryPoint(name.strip(), value.strip(), dist_path))
    return out


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
