"""One verdict function for every path: the service's, and the hook's own when no service can answer.

The service judges a ``pre_tool_use`` (and a ``PreToolUse`` handed over in a
``hook_event``) with :func:`judge`. When the service cannot answer a call (none
runs, it is busy, the payload breaks a bound of the protocol, the reply did
not come in time), the hook judges the same call in its own process with
:func:`fallback_verdict`: the same :func:`judge` over the same normalized
event, with the local rules of the policy the service would load. So no call
escapes a rule by its size, its numbers, its nesting or its timing
(docs/ipc-v2.md, "When the service cannot answer").

The fallback reads the payload without the protocol's bounds (it never crosses
a socket): a number past 2^53 is kept exact, a string of any length is read
whole, nesting is bounded only by the parser. It cannot hold a call for an
approval (no one could decide it), so a ``hold`` is a deny saying why.

:func:`could_match` is what is left when even the fallback fails (an
exception): the rules whose cheap pre-conditions (tool name) a payload meets,
read from the bytes.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from rematch_trace.live.ipc.messages import Reply, Request, make_reply
from rematch_trace.live.verdicts.action import LiveAction, build_action
from rematch_trace.live.verdicts.policy import (
    DEFAULT_POLICY,
    Policy,
    PolicyError,
    Rule,
    load_policy,
    policy_path,
)
from rematch_trace.live.verdicts.provider import LocalRulesProvider, Verdict

#: The file in the service's private folder naming the policy it was started with (``--policy``).
POLICY_NOTE = "policy"
#: The ``decision_source`` of a verdict the hook reached itself.
FALLBACK_SOURCE = "local_rules"


def judge(host: Any, provider: Any, request: Request, deadline: float) -> tuple[LiveAction, Verdict]:
    """The normalized call of ``request`` and ``provider``'s verdict on it (the one verdict path).

    :raises DecodeError: the payload lacks the call's keys (``build_action``).
    :raises ProviderUnavailable: the provider cannot answer.
    """
    action = build_action(host, request)
    return action, provider.analyze(action, request, deadline)


def incident_of(action: LiveAction, nonce: str) -> str:
    """The incident id of a denied call: from its binding, else its fingerprint, else the nonce."""
    fp = action.binding or action.event["action_fingerprint"] or nonce
    return f"inc-{fp[:20]}"


def parse_unbounded(raw: bytes) -> Any:
    """The payload's JSON value, read whole: exact integers of any size, strings of any length.

    ``orjson`` first (fast; integers up to 64 bits); the standard library's
    parser for what it refuses (a larger integer). Raises ``ValueError`` (or
    ``RecursionError``, nesting past the parser's stack) when neither reads it.
    """
    import orjson

    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        import json

        return json.loads(raw)


def recorded_policy(data: Path) -> str | None:
    """The ``--policy`` the service of ``data`` was started with, as it noted in its private folder."""
    from rematch_trace.live import paths

    try:
        text = (paths.run_dir(data) / POLICY_NOTE).read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def note_policy(data: Path, explicit: str | os.PathLike[str] | None) -> None:
    """Note the service's explicit ``--policy`` (absolute) for the hook's fallback, or clear the note."""
    from rematch_trace.live import paths

    note = paths.run_dir(data) / POLICY_NOTE
    try:
        if explicit:
            tmp = note.with_name(f".{POLICY_NOTE}.{os.getpid()}")
            tmp.write_text(os.path.abspath(os.path.expanduser(explicit)) + "\n", "utf-8")
            os.replace(tmp, note)
        else:
            note.unlink(missing_ok=True)
    except OSError:
        pass


def fallback_policy(data: Path) -> tuple[Policy, str]:
    """The policy the hook's fallback applies, and a note when it is not the one asked for.

    As the service resolves it: the service's own ``--policy`` (noted in its
    folder), else ``$REMATCH_POLICY``, else ``~/.config/rematch/policy.yml``,
    else the built-in. A file that does not load (the service refuses to start
    on it) gives way to the built-in rules: a broken file must not switch the
    rules off.
    """
    explicit = recorded_policy(data)
    try:
        return load_policy(explicit), ""
    except PolicyError:
        where = policy_path(explicit)
        return load_policy(DEFAULT_POLICY), f"policy {where} does not load; the built-in rules applied"


def fallback_verdict(host: Any, harness: str, event: dict[str, Any], t: int, policy: Policy, cause: str) -> Reply:
    """The verdict on a ``PreToolUse`` payload the service did not answer, judged here.

    ``cause`` says why the service did not answer (never payload text); it is
    part of a held call's explanation. A ``deny`` stays a deny, a ``hold`` is a
    deny (nothing here can hold a call), anything else leaves the call to the
    harness (``no_override``).
    """
    request: Request = {  # what the service would have been handed (its bounds aside)
        "protocol_version": 2, "request_id": os.urandom(12).hex(), "request_kind": "pre_tool_use",
        "adapter": harness, "adapter_version": "1", "received_at_ms": t, "hard_deadline_ms": t + 600_000,
        "host_version": "unknown", "invocation_nonce": os.urandom(16).hex(), "host_payload": event,
    }
    action, verdict = judge(host, LocalRulesProvider(policy), request, time.monotonic() + 600)
    tool_class = action.action_type
    incident = incident_of(action, request["invocation_nonce"])
    if verdict.decision == "deny":
        return make_reply(None, "deny", verdict.reason, verdict.explanation, source=FALLBACK_SOURCE,
                          tool_class=tool_class, incident_id=incident)
    if verdict.decision == "hold":
        return make_reply(None, "deny", f"{verdict.reason}.cannot_hold",
                          f"{verdict.explanation} The call needs an approval, but no service could hold it "
                          f"({cause}), so it is denied.", source=FALLBACK_SOURCE, tool_class=tool_class,
                          incident_id=incident)
    return make_reply(None, "no_override", verdict.reason, verdict.explanation, source=FALLBACK_SOURCE,
                      tool_class=tool_class)


_TOOL_NAME = re.compile(rb'"tool_name"\s*:\s*"((?:[^"\\]|\\.){0,4096})"')


def could_match(policy: Policy, raw: bytes) -> Rule | None:
    """The first ``deny`` or ``hold`` rule a payload could meet, judged from its bytes alone.

    For a payload no evaluation could read: a rule's tool list is its one
    pre-condition read here (every ``tool_name`` key in the bytes counts, so a
    nested one cannot hide the real one); features, action types and paths are
    taken as possibly met.
    """
    names = {m.group(1).decode("utf-8", "replace") for m in _TOOL_NAME.finditer(raw)}
    for rule in policy.rules:
        if rule.decision not in ("deny", "hold"):
            continue
        tools = rule.when.tools
        if tools is None or not names or names & tools:
            return rule
    return None


__all__ = [
    "FALLBACK_SOURCE",
    "POLICY_NOTE",
    "could_match",
    "fallback_policy",
    "fallback_verdict",
    "incident_of",
    "judge",
    "note_policy",
    "parse_unbounded",
    "recorded_policy",
]
