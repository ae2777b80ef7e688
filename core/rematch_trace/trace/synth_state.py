"""The synthesizer's saved state, typed: what a grown file's import continues from.

Saved as JSON in the ledger (through :mod:`rematch_trace.store.states`), in
this field order, so the saved bytes are what the untyped dict of earlier
versions gave; a state saved before a field existed takes its default.
"""

from __future__ import annotations

from typing import Any

import attrs

from rematch_trace.trace.flags import FlagTracker


@attrs.define(slots=True)
class SynthState:
    """Everything :class:`~rematch_trace.trace.synth.Synthesizer` needs to go on where it stopped.

    The held records and pending calls stay JSON (``dict``/``list``): they are
    trace records and digests, written back as they are.

    An import's state keeps the held records out (:attr:`held`): they are the
    first lines of the trace past its saved length, which the continuation
    reads back from there (see ``Synthesizer.restore_held``). Its
    :attr:`flags` have then already taken them into account (they are
    observed when the state is taken, with the seqs they are written with).
    """

    #: The next record's seq, and the time of the last record seen (unix ms).
    seq: int = 0
    t: int = 0
    #: The stream's session fields (id, cwd, agent kind, harness version, parent, start time).
    session: dict[str, Any] | None = None
    #: Whether ``session_start`` was written (it waits for the first model).
    started: bool = False
    first_model: dict[str, str] | None = None
    #: Instruction entries the session was offered, and those it loaded.
    visible: list[str] = attrs.field(factory=list)
    loaded: list[dict[str, Any]] = attrs.field(factory=list)
    #: Records held back: ``[record without seq and t, t]``.
    buffer: list[list[Any]] = attrs.field(factory=list)
    #: Where the open run's input is in :attr:`buffer`.
    input_at: int | None = None
    run_open: bool = False
    run_turns: int = 0
    last_aborted: bool = False
    deliverable: str | None = None
    #: Digests of the previous input's tokens (never the words).
    prev_tokens: list[str] | None = None
    #: Tool calls waiting for their results: call id -> digest.
    calls: dict[str, list[Any]] = attrs.field(factory=dict)
    #: Calls a hook blocked (live), kept so that a result arriving after the block still
    #: carries the call's input and ``args_hash``: call id -> digest (the last few only).
    blocked_calls: dict[str, list[Any]] = attrs.field(factory=dict)
    turn: dict[str, Any] | None = None
    last_model: dict[str, str] | None = None
    flags: FlagTracker = attrs.field(factory=FlagTracker)
    #: Records written per ``ev``.
    counts: dict[str, int] = attrs.field(factory=dict)
    #: How many records are held back in the trace's lines past its saved length (then
    #: :attr:`buffer` is empty); 0 in states of earlier versions, which kept them in :attr:`buffer`.
    held: int = 0
    #: With :attr:`held`: the open run's input's ``skills_invoked`` as the state was taken (the
    #: written line may hold skills a later record of that import added).
    held_skills: list[str] | None = None


__all__ = ["SynthState"]
