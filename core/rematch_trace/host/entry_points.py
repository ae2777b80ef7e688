"""The installed plugins' entry points (group ``rematch``), found without importing :mod:`importlib.metadata`
or the plugin manager: what a command that only checks a harness name against the installed ones needs
(``rematch search --harness``), and what :mod:`~rematch_trace.host.loading` loads plugins from."""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any

#: The entry-point group plugins register under.
GROUP = "rematch"


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
