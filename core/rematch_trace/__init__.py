"""rematch: coding-agent transcripts in one trace schema.

The public API: pre-classification, flag rules, canonical hashing, remote
normalization, folding a trace back, the record classes, and the markers
plugins implement hooks with.
"""

import importlib
from typing import TYPE_CHECKING, Any

# Eager: the submodule of the same name would otherwise shadow the function.
from .prelabel import prelabel

if TYPE_CHECKING:
    from .canonical import args_hash, canonical_json
    from .flags import flag_reasons
    from .fold import FoldedSession, fold_trace
    from .hookspecs import hookimpl, hookspec
    from .identity import Place, identify, normalize_remote
    from .records import (
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
_LAZY: dict[str, str] = {
    "args_hash": "canonical",
    "canonical_json": "canonical",
    "flag_reasons": "flags",
    "FoldedSession": "fold",
    "fold_trace": "fold",
    "hookimpl": "hookspecs",
    "hookspec": "hookspecs",
    "Place": "identity",
    "identify": "identity",
    "normalize_remote": "identity",
    "Agent": "records",
    "AgentEnd": "records",
    "Input": "records",
    "LoadedEntry": "records",
    "MarkRecord": "records",
    "Model": "records",
    "ModelChange": "records",
    "Retrieval": "records",
    "SessionShutdown": "records",
    "SessionStart": "records",
    "ToolBlocked": "records",
    "ToolResultRecord": "records",
    "TurnEnd": "records",
    "UsageRecord": "records",
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
