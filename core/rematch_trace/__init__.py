"""rematch: coding-agent transcripts in one trace schema.

The public API: pre-classification, flag rules, canonical hashing, remote
normalization, folding a trace back, the record classes, and the markers
plugins implement hooks with.
"""

from .canonical import args_hash, canonical_json
from .flags import flag_reasons
from .fold import FoldedSession, fold_trace
from .hookspecs import hookimpl, hookspec
from .identity import Place, identify, normalize_remote
from .prelabel import prelabel
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
