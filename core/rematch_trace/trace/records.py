"""The trace records, one class per ``ev``, and the converter that writes them.

Each record is a frozen, slotted attrs class. ``seq`` and ``t`` are given by the
synthesizer when it writes a record, so the classes hold only the ``ev``'s own
fields, in the schema's order.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override


@attrs.frozen(slots=True)
class Model:
    """``{provider, id}``."""

    provider: str
    id: str


@attrs.frozen(slots=True)
class Agent:
    """``{kind, name}``: ``main`` or ``sub``, and the harness (or subagent) name."""

    kind: str
    name: str


@attrs.frozen(slots=True)
class LoadedEntry:
    """One loaded entry: ``{id, version, sha}``."""

    id: str
    version: str | None = None
    sha: str | None = None


@attrs.frozen(slots=True)
class UsageRecord:
    """``turn_end.usage``."""

    input: int = 0
    output: int = 0
    cacheRead: int = 0
    cacheWrite: int = 0
    totalTokens: int = 0
    cost: float | None = None


@attrs.frozen(slots=True)
class SessionStart:
    """The first record of every trace."""

    EV: ClassVar[str] = "session_start"
    session_id: str
    cwd: str
    repo: str | None
    branch_hint: str | None
    model: Model | None
    mode: str
    agent: Agent
    omp_version: str | None
    loaded_entries: list[LoadedEntry] = attrs.field(factory=list)
    hooks_loaded: list[str] = attrs.field(factory=list)
    staging_dirs: list[str] = attrs.field(factory=list)
    repo_remote: str | None = None
    subpath: str = ""
    head_sha: str | None = None
    visible_entries: list[str] = attrs.field(factory=list)


@attrs.frozen(slots=True)
class Input:
    """A user message, pre-classified."""

    EV: ClassVar[str] = "input"
    text: str
    source: str
    idle: bool
    after_deliverable: str | None
    prelabel: str
    skills_invoked: list[str] = attrs.field(factory=list)


@attrs.frozen(slots=True)
class ToolResultRecord:
    """A tool call's outcome (``ev: tool_result``)."""

    EV: ClassVar[str] = "tool_result"
    tool: str
    call_id: str
    input: Any
    args_hash: str | None
    result_bytes: int
    is_error: bool
    error_class: str | None


@attrs.frozen(slots=True)
class ToolBlocked:
    """A call a hook blocked (live capture only)."""

    EV: ClassVar[str] = "tool_blocked"
    tool: str
    call_id: str
    hook_id: str
    reason: str
    args_hash: str | None = None


@attrs.frozen(slots=True)
class TurnEnd:
    """One assistant message, after its tool results."""

    EV: ClassVar[str] = "turn_end"
    model: Model | None
    usage: UsageRecord
    stop_reason: str | None
    text_head: str


@attrs.frozen(slots=True)
class AgentEnd:
    """The end of a run (the turns between two inputs)."""

    EV: ClassVar[str] = "agent_end"
    turns: int
    is_terminal: bool = True
    yielded: bool = False


@attrs.frozen(slots=True)
class ModelChange:
    """The model changed between two turns."""

    EV: ClassVar[str] = "model_change"
    from_: Model | None
    to: Model
    reason: str


@attrs.frozen(slots=True)
class MarkRecord:
    """An explicit mark (``ev: mark``)."""

    EV: ClassVar[str] = "mark"
    cls: str
    note: str = ""


@attrs.frozen(slots=True)
class Retrieval:
    """Context added after the first model response: a retrieve hook's (live), or a late load.

    ``loaded_entries`` (written only when not empty) keeps the version and sha
    of entries an import saw loaded after ``session_start`` was written.
    """

    EV: ClassVar[str] = "retrieval"
    entry_ids: list[str]
    units: list[dict[str, Any]]
    bytes: int
    loaded_entries: list[LoadedEntry] = attrs.field(factory=list)


@attrs.frozen(slots=True)
class SessionShutdown:
    """The last record: flag reasons."""

    EV: ClassVar[str] = "session_shutdown"
    reasons: list[str]
    flagged: bool


RECORD_TYPES: tuple[type, ...] = (
    SessionStart, Input, ToolResultRecord, ToolBlocked, TurnEnd, AgentEnd, ModelChange,
    MarkRecord, Retrieval, SessionShutdown,
)
BY_EV: dict[str, type] = {cls.EV: cls for cls in RECORD_TYPES}  # type: ignore[attr-defined]

converter = cattrs.Converter()
# The unstructure functions are generated on first use (generating all of them costs a
# short-lived process, such as a live hook, more than the work it came to do).
def _renamed(cls: Any) -> Any:
    """The unstructure function of a record with a field named for a Python keyword."""
    if cls is ModelChange:
        return make_dict_unstructure_fn(ModelChange, converter, from_=override(rename="from"))
    return make_dict_unstructure_fn(MarkRecord, converter, cls=override(rename="class"))


converter.register_unstructure_hook_factory(lambda cls: cls is ModelChange or cls is MarkRecord, _renamed)
converter.register_structure_hook(
    ModelChange,
    lambda d, _: ModelChange(
        from_=converter.structure(d.get("from"), Model | None),  # type: ignore[arg-type]
        to=converter.structure(d["to"], Model),
        reason=d.get("reason", ""),
    ),
)
converter.register_structure_hook(
    MarkRecord, lambda d, _: MarkRecord(cls=d["class"], note=d.get("note", ""))
)
def _retrieval(cls: Any) -> Any:
    """Retrieval's unstructure function: ``loaded_entries`` written only when there are any."""
    fields = make_dict_unstructure_fn(Retrieval, converter)

    def unstructure(record: Retrieval) -> dict[str, Any]:
        d: dict[str, Any] = fields(record)
        if not d["loaded_entries"]:
            del d["loaded_entries"]  # live capture's retrievals stay as the seed writes them
        return d

    return unstructure


def _loaded_entry(cls: Any) -> Any:
    """LoadedEntry's structure function: the plain ``[id, ...]`` form of older traces is still read."""
    fields = make_dict_structure_fn(LoadedEntry, converter)
    return lambda d, _: LoadedEntry(id=d) if isinstance(d, str) else fields(d, LoadedEntry)


# Generated on first use too, like the others.
converter.register_unstructure_hook_factory(lambda cls: cls is Retrieval, _retrieval)
converter.register_structure_hook_factory(lambda cls: cls is LoadedEntry, _loaded_entry)


_HOOKS: dict[type, Any] = {}


def to_dict(record: Any, seq: int, t: int) -> dict[str, Any]:
    """The JSON object of one record: ``seq``, ``t``, ``ev``, then its fields in order."""
    out: dict[str, Any] = {"seq": seq, "t": t, "ev": record.EV}
    cls = type(record)
    hook = _HOOKS.get(cls)
    if hook is None:
        if cls not in RECORD_TYPES:
            raise KeyError(cls)
        hook = _HOOKS[cls] = converter.get_unstructure_hook(cls)
    out.update(hook(record))
    return out


def from_dict(obj: dict[str, Any]) -> Any:
    """Structure one trace line back into its record class (``ValueError`` if unknown)."""
    cls = BY_EV.get(obj.get("ev", ""))
    if cls is None:
        raise ValueError(f"unknown ev {obj.get('ev')!r}")
    fields = {k: v for k, v in obj.items() if k not in ("seq", "t", "ev")}
    return converter.structure(fields, cls)
