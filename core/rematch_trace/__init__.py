"""rematch: coding-agent transcripts in one trace schema.

The public API: pre-classification, flag rules, canonical hashing, remote
normalization, folding a trace back, the record classes, and the markers
plugins implement hooks with.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rematch_trace.host.hookspecs import hookimpl, hookspec
    from rematch_trace.place.identity import Place, identify, normalize_remote
    from rematch_trace.trace.canonical import args_hash, canonical_json
    from rematch_trace.trace.flags import flag_reasons
    from rematch_trace.trace.fold import FoldedSession, fold_trace
    from rematch_trace.trace.prelabel import prelabel
    from rematch_trace.trace.records import (
        Agent,
        AgentEnd,
        Input,
        LoadedEntry,
        MarkRecord,
        Model,
        ModelChange,
        Retrieval,
        SessionShutdown,
        SessionStart,
        ToolBlocked,
        ToolResultRecord,
        TurnEnd,
        UsageRecord,
    )

# The public API loads on first use, so the command starts fast.
# Imported on first use: every command (a rerun with nothing to do too) imports this package.
_LAZY: dict[str, str] = {
    "prelabel": "trace.prelabel",
    "args_hash": "trace.canonical",
    "canonical_json": "trace.canonical",
    "flag_reasons": "trace.flags",
    "FoldedSession": "trace.fold",
    "fold_trace": "trace.fold",
    "hookimpl": "host.hookspecs",
    "hookspec": "host.hookspecs",
    "Place": "place.identity",
    "identify": "place.identity",
    "normalize_remote": "place.identity",
    "Agent": "trace.records",
    "AgentEnd": "trace.records",
    "Input": "trace.records",
    "LoadedEntry": "trace.records",
    "MarkRecord": "trace.records",
    "Model": "trace.records",
    "ModelChange": "trace.records",
    "Retrieval": "trace.records",
    "SessionShutdown": "trace.records",
    "SessionStart": "trace.records",
    "ToolBlocked": "trace.records",
    "ToolResultRecord": "trace.records",
    "TurnEnd": "trace.records",
    "UsageRecord": "trace.records",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rematch_trace' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "Agent",
    "AgentEnd",
    "FoldedSession",
    "Input",
    "LoadedEntry",
    "MarkRecord",
    "Model",
    "ModelChange",
    "Place",
    "Retrieval",
    "SessionShutdown",
    "SessionStart",
    "ToolBlocked",
    "ToolResultRecord",
    "TurnEnd",
    "UsageRecord",
    "args_hash",
    "canonical_json",
    "flag_reasons",
    "fold_trace",
    "hookimpl",
    "hookspec",
    "identify",
    "normalize_remote",
    "prelabel",
]
