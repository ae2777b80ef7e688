"""A typed facade over the hooks: pluggy does the calling, the facade gives types and isolation.

Every call goes through ``pm.hook`` (or a subset of it), so hook wrappers,
``tryfirst``/``trylast``, ``REMATCH_TRACE_PLUGINS`` tracing and
``add_hookcall_monitoring`` behave as in any pluggy host. What the facade adds:

* types that ``pm.hook`` cannot give;
* **one plugin per source**: ``detect_source`` stamps the claiming plugin on the
  :class:`~rematch_trace.host.source.Source`, and the per-source hooks
  (:data:`PER_SOURCE_HOOKS`) go to that plugin only (plus every hook wrapper);
* **isolation**: a plugin that raises is named (:class:`PluginFailure`). In a
  hook every file goes through (``default_locations``, ``detect_source``,
  ``identify_place``) the call is repeated without it, so every other plugin's
  files still import; the failure is kept, once per plugin and hook, in
  :attr:`Host.isolated` for the caller to report. In a per-source hook only
  that plugin's file fails.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from rematch_trace.errors import RestartImport
from rematch_trace.host.source import Location, Problem, RawRecord, Source

if TYPE_CHECKING:
    # Imported where used: registering the plugins and planning a rerun need neither.
    from rematch_trace.host.vocab import Neutral
    from rematch_trace.place.identity import Place

ACTION_TYPES = ("shell_exec", "file_read", "file_write", "file_edit", "network", "mcp", "subagent", "other")
HEAD_BYTES = 4096
#: Hooks asked only of the plugin that claimed the source (and the hook wrappers).
PER_SOURCE_HOOKS = ("read_transcript", "to_trace_records", "visible_entries", "classify_action", "conversation_items")


class PluginFailure(Exception):
    """A plugin raised; carries the plugin's name, the hook, what it raised and, when known, where.

    :param where: the place in the transcript the plugin was at (``"line 12"``), or ``""``.
    """

    def __init__(self, plugin: str, hook: str, error: BaseException, where: str = "") -> None:
        at = f" at {where}" if where else ""
        super().__init__(f"plugin {plugin!r} failed in {hook}{at}: {type(error).__name__}: {error}")
        self.plugin = plugin
        self.hook = hook
        self.error = error
        self.where = where

    def at(self, where: str) -> PluginFailure:
        """The same failure, saying where in the transcript the plugin was."""
        return PluginFailure(self.plugin, self.hook, self.error, where)


class Host:
    """Typed, isolated access to the plugin hooks of one plugin manager.

    The plugins are read once, when the host is made: register plugins before.
    """

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.pm = pm
        self._places: dict[str, Place] = {}
        # (hook, plugins left out) -> caller, and (hook, plugin) -> that plugin's route.
        self._callers: dict[tuple[str, frozenset[str]], pluggy.HookCaller] = {}
        self._routes: dict[tuple[str, str], _Route] = {}
        #: harness -> the plugin that claims its files ("" when none does on its own).
        self._owners: dict[str, str] = {}
        #: harness -> the plugin that translates its live hook payloads.
        self._live_owners: dict[str, str] = {}
        #: harness -> the plugin asked to claim the files found in its default locations.
        self._hint_owners: dict[str, str] = {}
        # (hook, plugin) of the failures already reported.
        self._reported: set[tuple[str, str]] = set()
        #: Plugin failures isolated and not yet reported (see :meth:`drain_isolated`).
        self.isolated: list[PluginFailure] = []
        #: The file-name patterns of sources with other names (see :meth:`source_names`).
        self._source_names: tuple[str, ...] | None = None

    # -- calling ---------------------------------------------------------------------------

    def _caller(self, hook: str, without: frozenset[str] = frozenset()) -> pluggy.HookCaller:
        """``pm.hook.<hook>``, less the plugins named in ``without``."""
        key = (hook, without)
        caller = self._callers.get(key)
        if caller is None:
            plugins = [self.pm.get_plugin(name) for name in without]
            caller = self._callers[key] = self.pm.subset_hook_caller(hook, [p for p in plugins if p is not None])
        return caller

    def _route(self, hook: str, plugin: str) -> Callable[..., Any]:
        """The hook as only ``plugin`` (and every wrapper) answers it; all plugins when ``plugin`` is ""."""
        if not plugin:
            return self._caller(hook)
        key = (hook, plugin)
        route = self._routes.get(key)
        if route is None:
            full: pluggy.HookCaller = getattr(self.pm.hook, hook)
            impls = [i for i in full.get_hookimpls() if i.plugin_name == plugin or i.wrapper or i.hookwrapper]
            firstresult = bool(full.spec and full.spec.opts.get("firstresult"))
            route = self._routes[key] = _Route(self.pm, hook, impls, firstresult)
        return route

    def _culprit(self, hook: str, err: BaseException) -> str | None:
        """The plugin whose implementation (or wrapper) the exception passed through, innermost."""
        codes: dict[Any, str] = {}
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            code = getattr(inspect.unwrap(impl.function), "__code__", None)
            if code is not None:
                codes[code] = impl.plugin_name
        name = None
        tb = err.__traceback__
        while tb is not None:
            name = codes.get(tb.tb_frame.f_code, name)
            tb = tb.tb_next
        return name

    def _isolated(self, hook: str, **kwargs: Any) -> Any:
        """Call ``hook`` through pluggy; a plugin that raises is left out and the call repeated.

        Each failing plugin is reported once per hook (:attr:`isolated`), and
        left out of this call only: its other files may still import.
        """
        without: frozenset[str] = frozenset()
        while True:
            try:
                return self._caller(hook, without)(**kwargs)
            except (PluginFailure, RestartImport):
                raise
            except Exception as err:
                name = self._culprit(hook, err)
                if name is None or name in without:
                    raise PluginFailure(name or "?", hook, err) from err
                without |= {name}
                if (hook, name) not in self._reported:
                    self._reported.add((hook, name))
                    self.isolated.append(PluginFailure(name, hook, err))

    def _per_source(self, hook: str, source: Source, **kwargs: Any) -> Any:
        """Call a per-source hook of the plugin that claimed ``source``."""
        try:
            return self._route(hook, source.plugin)(source=source, **kwargs)
        except (PluginFailure, RestartImport):
            raise
        except Exception as err:
            raise self._failure(hook, source, err) from err

    def _failure(self, hook: str, source: Source, err: Exception) -> PluginFailure:
        """``err`` from a per-source hook, with the plugin that raised it named."""
        return PluginFailure(self._culprit(hook, err) or source.plugin or "?", hook, err)

    def drain_isolated(self) -> list[str]:
        """The plugin failures isolated since the last call, as one-line messages."""
        out = [f"{f} (left out; the other plugins went on)" for f in self.isolated]
        self.isolated.clear()
        return out

    # -- the hooks -------------------------------------------------------------------------

    def _listed(self, hook: str) -> Iterator[list[Any]]:
        """Each plugin's answer to a list hook, read whole; a plugin whose answer raises while it is read
        (a generator pluggy returned before it ran) is reported and left out."""
        for answer in self._isolated(hook):
            try:
                yield list(answer or [])
            except Exception as err:
                self.isolated.append(PluginFailure(self._culprit(hook, err) or "?", hook, err))

    def locations(self) -> list[Location]:
        """Every plugin's default transcript folders (a plugin that raises is left out)."""
        return [loc for found in self._listed("default_locations") for loc in found if isinstance(loc, Location)]

    def suffixes(self) -> tuple[str, ...]:
        """The file endings transcripts may have: the core's own, then those plugins name (each once)."""
        from rematch_trace.host.fs import SUFFIXES

        out = list(SUFFIXES)
        for found in self._listed("transcript_suffixes"):
            out.extend(s for s in found if isinstance(s, str) and s.startswith(".") and len(s) > 1 and s not in out)
        return tuple(out)

    def source_names(self) -> tuple[str, ...]:
        """The file-name patterns of sources that are not JSONL files, of every plugin's locations (cached)."""
        names = self._source_names
        if names is None:
            names = self._source_names = tuple(sorted({n for loc in self.locations() for n in loc.names
                                                       if isinstance(n, str) and n}))
        return names

    def members(self, path: Path) -> list[str] | None:
        """The member files of a source that is more than its own bytes (``source_members``), or ``None``."""
        answer = self._isolated("source_members", path=path)
        if answer is None:
            return None
        return [str(p) for p in answer]

    def member_source(self, path: Path) -> str | None:
        """The source a changed member file belongs to (``member_source``), or ``None``."""
        answer = self._isolated("member_source", path=path)
        return str(answer) if answer is not None else None

    def detect(self, path: Path, hint: str | None) -> Source | None:
        """The source a plugin claims ``path`` as, reading at most its first 4 KiB.

        The source names the plugin that claimed it (:attr:`Source.plugin`).
        """
        from rematch_trace.host.fs import read_spans

        head = read_spans(path, [(0, HEAD_BYTES)])[0]
        owner = self._hinted(hint) if hint is not None else ""
        if owner:
            result = self._claimed_by(owner, path, head, hint)
        else:
            result = self._isolated("detect_source", path=path, head=head, hint=hint)
        if not isinstance(result, Source):
            return None
        if result.plugin and self.pm.get_plugin(result.plugin) is not None:
            return result
        return attrs.evolve(result, plugin=owner or self._owner(result, path, head, hint))

    def _hinted(self, hint: str) -> str:
        """The plugin asked alone about a file found in ``hint``'s default locations: the one whose
        ``default_locations`` name that harness ("" when none does: every plugin is asked, as for a
        path the user named). So a plugin is never asked about another harness's folders, and
        needs no test of ``hint`` against its own harness."""
        owner = self._hint_owners.get(hint)
        if owner is None:
            owner = self._hint_owners[hint] = self._location_owner(hint, "detect_source")
        return owner

    def _claimed_by(self, owner: str, path: Path, head: bytes, hint: str | None) -> Any:
        """``detect_source`` as ``owner`` (and every wrapper) answers it; a failure is isolated as in the
        hooks every file passes through (reported once, the file left unclaimed)."""
        try:
            return self._route("detect_source", owner)(path=path, head=head, hint=hint)
        except (PluginFailure, RestartImport):
            raise
        except Exception as err:
            name = self._culprit("detect_source", err) or owner
            if ("detect_source", name) not in self._reported:
                self._reported.add(("detect_source", name))
                self.isolated.append(PluginFailure(name, "detect_source", err))
            return None

    def _owner(self, source: Source, path: Path, head: bytes, hint: str | None) -> str:
        """The plugin that claims files of ``source.harness``.

        pluggy returns the first result, not who gave it: ask each plugin in
        pluggy's order, alone (without the wrappers, which have had their say),
        which one claims this file, once per harness. A harness name belongs to
        one plugin.
        """
        owner = self._owners.get(source.harness)
        if owner is not None:
            return owner
        owner = ""
        for impl in reversed(self.pm.hook.detect_source.get_hookimpls()):
            if impl.wrapper or impl.hookwrapper:
                continue
            others = [p for p in self.pm.get_plugins() if p is not impl.plugin]
            try:
                alone = self.pm.subset_hook_caller("detect_source", others)(path=path, head=head, hint=hint)
            except Exception:
                continue  # it answered the full call without raising; a stray failure here decides nothing
            if isinstance(alone, Source):  # even when a wrapper then changed what it claimed
                owner = impl.plugin_name
                break
        self._owners[source.harness] = owner
        return owner

    def read(self, source: Source, start: int) -> Iterator[RawRecord | Problem]:
        """The source's raw records from byte ``start``."""
        result = self._per_source("read_transcript", source, start=start)
        if result is None:
            raise PluginFailure(source.plugin or source.harness, "read_transcript",
                                LookupError("no plugin reads this source"))
        return _guard(result, source.plugin or source.harness, "read_transcript")

    def translate(self, source: Source, records: Iterator[RawRecord], state: dict[str, Any]) -> Iterator[Neutral]:
        """The source's neutral records."""
        result = self._per_source("to_trace_records", source, records=records, state=state)
        if result is None:
            raise PluginFailure(source.plugin or source.harness, "to_trace_records",
                                LookupError("no plugin translates this source"))
        from rematch_trace.host.ids import clean_record

        # Every id a plugin fills is checked to be an id (host/ids.py): a planted credential or text goes no further.
        return map(clean_record, _guard(result, source.plugin or source.harness, "to_trace_records"))

    def conversation(self, source: Source, records: Iterator[RawRecord]) -> Iterator[Any] | None:
        """The source's conversation items (``host/conversation.py``), or ``None``: its plugin gives none.

        The hook is optional: a plugin that does not implement it (or answers ``None``) has no
        conversation view and no tool outputs in search; every item is type-checked by the core.
        """
        result = self._per_source("conversation_items", source, records=records)
        if result is None:
            return None
        from rematch_trace.host.ids import clean_record

        return map(clean_record, _guard(result, source.plugin or source.harness, "conversation_items"))

    def place(self, cwd: str) -> Place:
        """The place of ``cwd`` (cached per cwd for the life of this host)."""
        cached = self._places.get(cwd)
        if cached is None:
            result = self._isolated("identify_place", cwd=cwd)
            from rematch_trace.place.identity import Place

            cached = result if isinstance(result, Place) else Place()
            self._places[cwd] = cached
        return cached

    def visible(self, source: Source, text: str) -> list[str]:
        """The entries an instruction text offers, by the claiming plugin's (and any wrapper's) account."""
        out: list[str] = []
        for answer in self._per_source("visible_entries", source, text=text):
            for entry in answer or []:
                if isinstance(entry, str) and entry not in out:
                    out.append(entry)
        return out

    def live_plugin(self, harness: str) -> str:
        """The plugin whose ``live_records`` translates ``harness`` ("" when none does).

        Routed as the import is, to the plugin that owns the harness: the one whose
        ``default_locations`` name it (each asked alone, once per harness), so a plugin's
        ``live_records`` is only ever asked about its own harness's payloads. A plugin that
        names no location at all is asked, alone, with an empty payload: the one that does
        not answer ``None`` owns it. Its name goes on the live session's
        :class:`~rematch_trace.host.source.Source`, so the per-source hooks
        (``classify_action``...) are asked of it alone, as for a file it claimed.
        """
        owner = self._live_owners.get(harness)
        if owner is None:
            owner = self._location_owner(harness, "live_records")
            if not owner:
                for impl in reversed(self.pm.hook.live_records.get_hookimpls()):
                    if impl.wrapper or impl.hookwrapper or self._named(impl.plugin_name):
                        continue  # a plugin that owns harnesses by their folders owns no other
                    try:
                        answer = self._route("live_records", impl.plugin_name)(harness=harness, event={}, t=0)
                    except Exception:
                        continue  # a plugin that cannot answer an empty payload claims nothing here
                    if answer is not None:
                        owner = impl.plugin_name
                        break
            self._live_owners[harness] = owner
        return owner

    def _location_owner(self, harness: str, hook: str) -> str:
        """The plugin implementing ``hook`` whose ``default_locations`` name ``harness`` ("" when none)."""
        implementing = {i.plugin_name for i in getattr(self.pm.hook, hook).get_hookimpls()
                        if not (i.wrapper or i.hookwrapper)}
        for impl in reversed(self.pm.hook.default_locations.get_hookimpls()):
            if impl.wrapper or impl.hookwrapper or impl.plugin_name not in implementing:
                continue
            if harness in self._named(impl.plugin_name):
                return impl.plugin_name
        return ""

    def _unowned(self, hook: str) -> pluggy.HookCaller:
        """``hook`` as the plugins that own no harness by their folders answer it (no owner found)."""
        owners = frozenset(i.plugin_name for i in self.pm.hook.default_locations.get_hookimpls()
                           if not (i.wrapper or i.hookwrapper) and self._named(i.plugin_name))
        return self._caller(hook, owners)

    def _named(self, plugin: str) -> set[str]:
        """The harnesses ``plugin``'s ``default_locations`` name (none when it cannot say)."""
        try:
            answers = self._route("default_locations", plugin)()
            named: set[str] = set()
            for answer in answers or ():
                for loc in [answer] if isinstance(answer, Location) else answer or ():
                    if isinstance(loc, Location):
                        named.add(loc.harness)
        except Exception:
            return set()  # a plugin that cannot list its folders owns no harness by them
        return named

    def denial(self, harness: str, verdict: dict[str, Any]) -> bytes | None:
        """The deny output of the plugin that owns ``harness`` (its ``hook_denial``), or ``None``."""
        plugin = self.live_plugin(harness)
        route = self._route("hook_denial", plugin) if plugin else self._unowned("hook_denial")
        text = route(harness=harness, verdict=verdict)
        return text if isinstance(text, bytes) and text else None

    def plugin_template(self, harness: str) -> Path | None:
        """The template of ``harness``'s plugin folder (``harness_plugin_template`` of the plugin that owns
        it), or ``None`` when its plugin gives none (or names a folder that is not there)."""
        plugin = self._location_owner(harness, "harness_plugin_template")
        route = self._route("harness_plugin_template", plugin) if plugin else self._unowned("harness_plugin_template")
        try:
            got = route(harness=harness)
        except Exception as err:
            raise PluginFailure(self._culprit("harness_plugin_template", err) or plugin or "?",
                                "harness_plugin_template", err) from err
        return got if isinstance(got, Path) and got.is_dir() else None

    def live(self, harness: str, event: dict[str, Any], t: int) -> list[Neutral]:
        """The neutral records of one live hook payload (``[]`` when no plugin translates it)."""
        try:
            plugin = self.live_plugin(harness)
            route = self._route("live_records", plugin) if plugin else self._unowned("live_records")
            result = route(harness=harness, event=event, t=t)
        except (PluginFailure, RestartImport):
            raise
        except Exception as err:
            raise PluginFailure(self._culprit("live_records", err) or "?", "live_records", err) from err
        from rematch_trace.host.ids import clean_record
        from rematch_trace.host.vocab import NEUTRAL_TYPES

        return [clean_record(r) for r in result or () if isinstance(r, NEUTRAL_TYPES)]  # type: ignore[misc]

    def action_type(self, source: Source, tool: str, tool_input: Any) -> str:
        """The security action type of a tool call (``other`` when the plugin does not say)."""
        # Once per tool call: the route is looked up and called without going through _per_source.
        route = self._routes.get(("classify_action", source.plugin)) or self._route("classify_action", source.plugin)
        try:
            result = route(source=source, tool=tool, tool_input=tool_input)
        except (PluginFailure, RestartImport):
            raise
        except Exception as err:
            raise self._failure("classify_action", source, err) from err
        return result if result in ACTION_TYPES else "other"


class _Route:
    """One plugin's implementations of a hook, with every wrapper, run by the manager's hook executor.

    What ``pm.subset_hook_caller`` gives, without rebuilding the implementation
    list on every call: the per-source hooks run once per tool call. The
    executor is the one monitoring and tracing wrap, so they see these calls.

    A route of one plain implementation (no wrapper), while nothing monitors or
    traces the manager, calls that function itself: what pluggy's executor
    would do for it, without its per-call set-up (a few microseconds a tool call).
    """

    __slots__ = ("direct", "execute", "firstresult", "impls", "name", "pick", "pm", "spread")

    def __init__(self, pm: pluggy.PluginManager, name: str, impls: list[Any], firstresult: bool) -> None:
        self.pm = pm
        self.execute = pm._hookexec
        self.name = name
        self.impls = impls
        self.firstresult = firstresult
        self.direct: Callable[..., Any] | None = None
        #: The implementation's arguments picked from the call's keywords, in its order (an
        #: itemgetter: no Python frame per call); ``spread`` when it gives a tuple (2+ arguments).
        self.pick: Callable[[dict[str, Any]], Any] | None = None
        self.spread = False
        only = impls[0] if len(impls) == 1 else None
        if (only is not None and only.argnames and not (only.wrapper or only.hookwrapper or only.kwargnames)
                and _plain_executor()):
            self.direct = only.function
            self.pick = operator.itemgetter(*only.argnames)
            self.spread = len(only.argnames) > 1

    def __call__(self, **kwargs: Any) -> Any:
        direct = self.direct
        if direct is not None and getattr(self.pm, "_inner_hookexec", None) is _PLAIN_EXECUTOR[0]:
            try:
                args = self.pick(kwargs)  # type: ignore[misc]  # (set with direct)
            except KeyError:  # pluggy's executor says which argument is missing
                return self.execute(self.name, self.impls, kwargs, self.firstresult)
            result = direct(*args) if self.spread else direct(args)
            if self.firstresult:
                return result
            return [result] if result is not None else []
        return self.execute(self.name, self.impls, kwargs, self.firstresult)


#: pluggy's own executor, which a manager runs while nothing monitors or traces it.
_PLAIN_EXECUTOR: list[Any] = []


def _plain_executor() -> Any:
    """The executor a fresh plugin manager has (``None`` where pluggy keeps it elsewhere)."""
    if not _PLAIN_EXECUTOR:
        _PLAIN_EXECUTOR.append(getattr(pluggy.PluginManager("rematch-probe"), "_inner_hookexec", None))
    return _PLAIN_EXECUTOR[0]


def _guard(it: Any, plugin: str, hook: str) -> Iterator[Any]:
    try:
        yield from it
    except (PluginFailure, RestartImport):
        raise
    except Exception as err:
        raise PluginFailure(plugin, hook, err) from err
