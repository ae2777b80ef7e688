"""Hook implementations that hand the call to a function of the plugin's own modules, imported on first use.

A plugin is registered at every command, also one that reads nothing (a rerun with nothing new): its
hooks import the modules that do the work only when first called. Written out, each such hook is the
same few lines (the lazy import, the call); :func:`lazy_hook` makes one from the hook's name, its
arguments and the function that answers it::

    detect_source = lazy_hook(__name__, "detect_source", ("path", "head", "hint"), "discover:detect",
                              "Claim Claude Code transcripts.")

The result is a plain function marked with :data:`~rematch_trace.host.hookspecs.hookimpl`, with the
hook's argument names (pluggy reads them from its code, and checks them against the hookspec) and a
code object of its own (so the host names the plugin a failure passed through). The module is
imported on the first call and kept; the function is looked up in it at each call (as ``from . import
m; m.f(...)`` did, so a test may replace it), with no import statement on the way:
``classify_action`` runs once per tool call.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from rematch_trace.host.hookspecs import hookimpl

#: The implementation's source: the arguments are spliced in (checked identifiers, never input).
_TEMPLATE = """\
def make(_load, _function):
    _module = None

    def {hook}({args}):
        nonlocal _module
        if _module is None:
            _module = _load()
        return getattr(_module, _function)({args})

    return {hook}
"""


def lazy_hook(package: str, hook: str, args: tuple[str, ...], target: str, doc: str) -> Callable[..., Any]:
    """An implementation of ``hook`` taking ``args`` (the hookspec's, or the part of them the plugin
    uses) that returns ``target(*args)``; ``target`` is ``"module:function"`` of ``package`` (the plugin's
    ``__name__``), imported on the first call. ``doc`` is the implementation's docstring."""
    for name in (hook, *args):
        if not name.isidentifier() or name.startswith("_"):  # (the template's own names start with _)
            raise ValueError(f"{name!r} is not a hook's or an argument's name")
    module, _, function = target.partition(":")

    def load() -> ModuleType:
        return importlib.import_module(f".{module}", package)

    namespace: dict[str, Any] = {}
    exec(compile(_TEMPLATE.format(hook=hook, args=", ".join(args)), f"<{package}.{hook}>", "exec"), namespace)
    impl: Callable[..., Any] = namespace["make"](load, function)
    impl.__module__ = package
    impl.__doc__ = doc
    return hookimpl(impl)
