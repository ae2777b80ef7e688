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

**Which policy the fallback trusts** (:func:`fallback_policies`). A running
service (the holder of its lock, paused or not) keeps the bytes of the policy
it loaded in a sealed memory file: the fallback applies exactly those, whatever
``run/policy`` or the policy file now say. With no service running, the note
``run/policy`` (the file's path and the digest of the bytes the service
loaded) is checked against the file: when they differ, or a running service's
copy cannot be read, the built-in rules are applied **as well** (the stricter
verdict wins) and the log says so: a rewritten note or file cannot switch a
rule off unseen.
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
    builtin_policy,
    load_policy,
    merge,
    parse_policy,
    policy_path,
)
from rematch_trace.live.verdicts.provider import LocalRulesProvider, Verdict

#: The file in the service's private folder naming the policy it was started with: the file's path ("" for the
#: built-in rules), then the digest of the bytes it loaded (``sha256:<hex>``).
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


def _note(data: Path) -> tuple[str | None, str | None]:
    """``run/policy`` as (path or ``None``, digest or ``None``)."""
    from rematch_trace.live import paths

    try:
        lines = (paths.run_dir(data) / POLICY_NOTE).read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None, None
    path = lines[0].strip() if lines else ""
    return path or None, (lines[1].strip() or None) if len(lines) > 1 else None


def recorded_policy(data: Path) -> str | None:
    """The policy file the service of ``data`` was started with, as it noted in its private folder."""
    return _note(data)[0]


def note_policy(data: Path, source: str | os.PathLike[str] | None, text: bytes | None = None) -> None:
    """Note the service's policy file (absolute; ``None``: the built-in rules) and the digest of ``text``, the
    bytes it loaded, for the hook's fallback."""
    from rematch_trace.live import paths
    from rematch_trace.live.service_identity import digest

    note = paths.run_dir(data) / POLICY_NOTE
    where = os.path.abspath(os.path.expanduser(source)) if source else ""
    try:
        tmp = note.with_name(f".{POLICY_NOTE}.{os.getpid()}")
        tmp.write_text(f"{where}\n{digest(text or b'')}\n", "utf-8")
        os.replace(tmp, note)
    except OSError:
        pass


def policy_of_bytes(text: bytes, source: str) -> Policy:
    """The policy whose file held ``text`` (empty: the built-in rules); :class:`PolicyError` on any fault."""
    import yaml

    if not text:
        return builtin_policy()
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise PolicyError(f"{source}: not YAML: {str(err).splitlines()[0]}") from None
    return merge(builtin_policy(), parse_policy(data, source), data)


def fallback_policy(data: Path) -> tuple[Policy, str]:
    """The first of :func:`fallback_policies` and its note."""
    policies, note = fallback_policies(data)
    return policies[0], note


def fallback_policies(data: Path) -> tuple[list[Policy], str]:
    """The policies the hook's fallback applies (a deny of any one is a deny), and a note when they are not
    simply the one the service uses.

    As the service resolves it: the running service's own copy (see the module
    docstring); else the noted file, checked against its digest; else
    ``$REMATCH_POLICY``, else ``~/.config/rematch/policy.yml``, else the built-in. A
    file that does not load gives way to the built-in rules: a broken file must
    not switch the rules off.
    """
    from rematch_trace.live import paths
    from rematch_trace.live import service_identity as ident

    run = paths.run_dir(data)
    pid = ident.running_service(run)
    explicit, noted = _note(data)
    if pid is not None:
        anchored = ident.anchored_policy(pid)
        if anchored is not None:
            try:
                return [policy_of_bytes(anchored, explicit or "the service's policy")], ""
            except PolicyError:
                return [builtin_policy()], "the running service's policy does not load; the built-in rules applied"
    try:
        policy, note = load_policy(explicit), ""
    except PolicyError:
        where = policy_path(explicit)
        policy, note = load_policy(DEFAULT_POLICY), f"policy {where} does not load; the built-in rules applied"
    if pid is not None:
        return [policy, builtin_policy()], (f"{note}; " if note else "") + (
            f"policy_untrusted: the running service (pid {pid}) holds no readable copy of its policy; the "
            "built-in rules applied as well")
    if noted is not None:
        try:
            now = policy_path(explicit).read_bytes() if explicit else b""
        except OSError:
            now = b""
        if ident.digest(now) != noted:
            return [policy, builtin_policy()], (f"{note}; " if note else "") + (
                "policy_untrusted: the policy file is not the one run/policy names (rewritten since the service "
                "started, or the note was); the built-in rules applied as well")
    return [policy], note


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
    "fallback_policies",
    "fallback_policy",
    "fallback_verdict",
    "incident_of",
    "judge",
    "note_policy",
    "parse_unbounded",
    "policy_of_bytes",
    "recorded_policy",
]
