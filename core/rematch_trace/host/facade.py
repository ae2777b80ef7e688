"""A typed facade over the hooks, with a guard around every plugin call.

Call sites get types that ``pm.hook`` cannot give, and a plugin that raises is
reported by name (:class:`PluginFailure`) instead of taking a batch down.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pluggy

from rematch_trace.errors import RestartImport
from rematch_trace.host.source import Location, Problem, RawRecord, Source
from rematch_trace.host.vocab import Neutral
from rematch_trace.place.identity import Place

ACTION_TYPES = ("shell_exec", "file_read", "file_write", "file_edit", "network", "mcp", "subagent", "other")
HEAD_BYTES = 4096


class PluginFailure(Exception):
    """A plugin raised; carries the plugin's name and what it raised."""

    def __init__(self, plugin: str, hook: str, error: BaseException) -> None:
        super().__init__(f"plugin {plugin!r} failed in {hook}: {type(error).__name__}: {error}")
        self.plugin = plugin
        self.hook = hook
        self.error = error


class Host:
    """Typed, guarded access to the plugin hooks of one plugin manager."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._places: dict[str, Place] = {}
        self._impl_cache: dict[str, list[Any]] = {}

    def _impls(self, hook: str) -> list[Any]:
        impls = self._impl_cache.get(hook)
        if impls is None:
            caller = getattr(self.pm.hook, hook)
            # pluggy calls the last registered (and tryfirst) implementations first.
            impls = self._impl_cache[hook] = list(reversed(caller.get_hookimpls()))
        return impls

    def _call(self, impl: Any, hook: str, kwargs: dict[str, Any]) -> Any:
        names = impl.argnames
        try:
            # An implementation taking every argument (the usual case) gets them as they are.
            if len(names) == len(kwargs):
                return impl.function(**kwargs)
            return impl.function(**{k: kwargs[k] for k in names})
        except Exception as err:
            raise PluginFailure(impl.plugin_name, hook, err) from err

    def _first(self, hook: str, **kwargs: Any) -> tuple[Any, str]:
        for impl in self._impls(hook):
            result = self._call(impl, hook, kwargs)
            if result is not None:
                return result, impl.plugin_name
        return None, ""

    def locations(self) -> list[Location]:
        """Every plugin's default transcript folders."""
        out: list[Location] = []
        for impl in self._impls("default_locations"):
            for loc in self._call(impl, "default_locations", {}) or []:
                if isinstance(loc, Location):
                    out.append(loc)
        return out

    def detect(self, path: Path, hint: str | None) -> Source | None:
        """The source a plugin claims ``path`` as, reading at most its first 4 KiB."""
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
        result, _ = self._first("detect_source", path=path, head=head, hint=hint)
        return result if isinstance(result, Source) else None

    def read(self, source: Source, start: int) -> Iterator[RawRecord | Problem]:
        """The source's raw records from byte ``start``."""
        result, name = self._first("read_transcript", source=source, start=start)
        if result is None:
            raise PluginFailure(source.harness, "read_transcript", LookupError("no plugin reads this source"))
        return _guard(result, name, "read_transcript")

    def translate(self, source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
        """The source's neutral records."""
        result, name = self._first("to_trace_records", source=source, records=records, state=state)
        if result is None:
            raise PluginFailure(source.harness, "to_trace_records", LookupError("no plugin translates this source"))
        return _guard(result, name, "to_trace_records")

    def place(self, cwd: str) -> Place:
        """The place of ``cwd`` (cached per cwd for the life of this host)."""
        cached = self._places.get(cwd)
        if cached is None:
            result, _ = self._first("identify_place", cwd=cwd)
            cached = result if isinstance(result, Place) else Place()
            self._places[cwd] = cached
        return cached

    def visible(self, source: Source, text: str) -> list[str]:
        """The entries an instruction text offers, by every plugin's account."""
        out: list[str] = []
        for impl in self._impls("visible_entries"):
            for entry in self._call(impl, "visible_entries", {"source": source, "text": text}) or []:
                if isinstance(entry, str) and entry not in out:
                    out.append(entry)
        return out

    def action_type(self, source: Source, tool: str, tool_input: Any) -> str:
        """The security action type of a tool call (``other`` when no plugin says)."""
        result, _ = self._first("classify_action", source=source, tool=tool, tool_input=tool_input)
        return result if result in ACTION_TYPES else "other"


def _guard(it: Any, plugin: str, hook: str) -> Iterator[Any]:
    try:
        yield from it
    except (PluginFailure, RestartImport):
        raise
    except Exception as err:
        raise PluginFailure(plugin, hook, err) from err
