"""The hook command (``rematch-hook <harness>``): what Claude Code runs for every hook event.

Thin on purpose: it starts with the standard library only, reads the payload
from stdin, and hands it to the capture code. It **never gets in the way**:
stdout and stderr are pointed at ``/dev/null`` before anything runs (nothing
reaches the harness, which would act on it, except a deny: when the service's
verdict denies a call, the harness plugin's ``hook_denial`` output is written
to the real stdout, as the fast client does), every failure is logged to
``<data>/live/errors.log`` instead, and the exit status is always 0 (the
session goes on: fail open). The payload itself is never written anywhere.

Usage: ``rematch-hook [HARNESS] [--data DIR]`` (harness ``claude_code`` by
default; the data folder is ``--data`` or its other name ``--out``, else ``$REMATCH_HOME``, else the
platform's). Only the harness's plugin is loaded (with rematch's built-ins)
unless ``REMATCH_LOAD_PLUGINS`` names others, e.g. a plugin implementing
``identify_place``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rematch_trace.live.ipc.messages import Reply


def _data_root(out: str | None) -> Path:
    from rematch_trace.store.datafolder import data_dir

    return data_dir(out)


#: The options that take a value (the fast client's, ``rematch_hook.parse_args``: the two read the same
#: command lines); the value is never taken for the harness.
_VALUED = ("--data", "--out", "--deadline-ms")


def _args(argv: list[str]) -> tuple[str, str | None]:
    """(harness, data folder or ``None``): ``--data DIR`` (``--out`` is its other name, ``=`` forms too),
    the harness the last word that is not an option or an option's value."""
    harness = "claude_code"
    out: str | None = None
    it = iter(argv)
    for arg in it:
        name, eq, value = arg.partition("=")
        if name in _VALUED:
            value = value if eq else next(it, "")
            if name != "--deadline-ms":
                out = value or None
        elif not arg.startswith("-"):
            harness = arg
    return harness, out


#: Set by the fast client (``rematch_hook.capture_here``) when it hands an event to this command because
#: its own interpreter has no rematch: why no service took it (the cause the fallback log names).
CAUSE_ENV = "REMATCH_HOOK_CAUSE"
#: The longest cause taken from it.
MAX_CAUSE_CHARS = 200


def _handed_cause() -> str | None:
    """The cause the fast client handed over (printable ASCII, bounded), or ``None``."""
    given = os.environ.get(CAUSE_ENV, "")
    text = "".join(c for c in given[:MAX_CAUSE_CHARS] if " " <= c <= "~")
    return text or None


def _silence() -> int:
    """Point fds 1 and 2 at /dev/null (whatever any code prints, the harness sees nothing);
    return a copy of the real stdout, for a deny only."""
    out = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)
    return out


def _describe(err: BaseException) -> str:
    """A one-line description of an error, redacted (a message may quote input)."""
    text = f"{type(err).__name__}: {err}"
    try:
        from rematch_trace.security.redact import default_redactor

        return default_redactor().redact_text(text)
    except Exception:
        return type(err).__name__


def _to_service(harness: str, raw: bytes, t: int, root: Path) -> Reply | None:
    """Hand the payload to the resident service (started on demand); its verdict when it took it.

    ``None`` (capture in this process instead) when the payload is not an
    object the protocol can carry, or the service did not answer in time. The
    request carries the hook's own start time, so an event the service did
    capture after all is not applied twice (the writer remembers each
    invocation's digest).
    """
    try:
        from rematch_trace.live import client  # type: ignore[attr-defined,unused-ignore]  # IPC v2 (issue 14)
    except ImportError:
        return None
    import orjson

    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if type(payload) is not dict:
        return None
    text = os.environ.get("REMATCH_IPC_DEADLINE_MS", "")
    budget = int(text) if text.isdigit() and 0 < int(text) <= 60_000 else SERVICE_DEADLINE_MS
    request = client.new_request("hook_event", payload, adapter=harness, adapter_version="1",
                                 host_version="unknown", deadline_ms=budget)
    request["received_at_ms"] = t
    request["hard_deadline_ms"] = t + budget
    reply = client.send(request, data=root)
    # Only a service that captured it says "recorded" (or denies the call, recorded first); any
    # other answer (an older service without the handler, say) leaves the capture to this process.
    return reply if reply is not None and _taken(reply) else None


def _taken(reply: Reply) -> bool:
    """Whether the service took the event (as the fast client decides): recorded, or a recorded deny."""
    return reply.get("reason") == "recorded" or (
        reply.get("decision") == "deny" and reply.get("decision_source") not in ("protocol_error", "fail_open")
    )


#: The hook events whose payload is judged (a verdict may deny it): a call before it runs, and the
#: harness asking its person to approve one (Codex's ``PermissionRequest``).
JUDGED_EVENTS = ("PreToolUse", "PermissionRequest", "BeforeTool")


def _event_name(raw: bytes) -> str:
    """The payload's top-level ``hook_event_name`` (``PreToolUse`` when it cannot be read)."""
    import orjson

    try:
        event = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "PreToolUse"
    name = event.get("hook_event_name") if type(event) is dict else None
    return name if type(name) is str else "PreToolUse"


def _deny(harness: str, verdict: Reply, out: int, event: str = "PreToolUse") -> None:
    """Print the harness's own deny output (its plugin's ``hook_denial``) on the saved stdout.

    ``event``: the hook event the deny answers, handed to the plugin as the verdict's
    ``hook_event_name`` (a ``PermissionRequest`` is denied in its own shape).
    """
    from rematch_trace.live.capture import default_host

    text = default_host().denial(harness, {**verdict, "hook_event_name": event})
    if text:
        os.write(out, text)


#: How long the hook waits for the service before capturing in-process (it may have to start
#: it), unless ``REMATCH_IPC_DEADLINE_MS`` says otherwise.
SERVICE_DEADLINE_MS = 1000


def capture_local(harness: str, raw: bytes, t: int, root: Path, cause: str = "",
                  tell: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Capture one payload in this process, failing open: any error is one line in ``live/errors.log``.

    What the fast hook client (:mod:`rematch_trace.live.rematch_hook`)
    runs when no service took the event; ``t`` is when the hook started. With
    ``tell``, a ``PreToolUse`` is judged here first (:func:`judge_and_capture`;
    ``cause`` says why the service did not answer) and a deny handed to ``tell``.
    """
    os.environ.setdefault("REMATCH_LOAD_PLUGINS", harness)
    try:
        if tell is not None:
            judge_and_capture(harness, raw, t, root, cause, tell)
            return
        from rematch_trace.live.capture import capture_bytes

        capture_bytes(harness, raw, t, root)
    except BaseException as err:  # fail open: the session goes on whatever happened here
        from rematch_trace.live.folder import log_error

        log_error(root, f"rematch-hook {harness}", _describe(err))


def _ids(event: object) -> str:
    """The session and call ids of a payload, for a log line (ids only, cut, never other payload text)."""
    def clean(v: object) -> str:
        return "".join(c for c in v if c.isalnum() or c in "-_.")[:64] if isinstance(v, str) else "?"

    if not isinstance(event, dict):
        return "session=? call=?"
    return f"session={clean(event.get('session_id'))} call={clean(event.get('tool_use_id'))}"


def judge_and_capture(harness: str, raw: bytes, t: int, root: Path, cause: str,
                      tell: Callable[[dict[str, Any]], None]) -> None:
    """The hook's own verdict on a call no service answered, told to the harness, then captured as told.

    A ``PreToolUse`` is judged by the local rules (:mod:`rematch_trace.live.verdicts.local`:
    the service's verdict function and policy) over the payload read whole;
    a deny goes to ``tell`` first, then the call is captured as ``tool_blocked``;
    anything else is captured as it is. The capture is ``told``: what the
    harness was told stands over a service's capture of the same invocation.
    When the evaluation itself fails, the call is denied if a deny or hold rule
    could match it (:func:`~rematch_trace.live.verdicts.local.could_match`),
    else it fails open; either way ``live.log`` says so (ids and cause only).
    """
    from rematch_trace.live import paths
    from rematch_trace.live.capture import MAX_PAYLOAD_BYTES, BadPayload, capture_event, default_host
    from rematch_trace.live.ipc.codec import DecodeError
    from rematch_trace.live.ipc.messages import make_reply
    from rematch_trace.live.session_writer import VERDICT_HOOK_ID
    from rematch_trace.live.verdicts import local
    from rematch_trace.store.datafolder import DataDir

    def log(line: str) -> None:
        paths.append_log(root, f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} hook {harness} {line}")

    pre = any(f'"{name}"'.encode() in raw for name in JUDGED_EVENTS)  # cheap and conservative
    host = default_host()
    event: object = None
    verdict: Reply | None = None
    try:
        if len(raw) > MAX_PAYLOAD_BYTES:
            raise BadPayload(f"payload of {len(raw)} bytes exceeds {MAX_PAYLOAD_BYTES}")
        try:
            event = local.parse_unbounded(raw)
        except (ValueError, RecursionError) as err:  # (no message: it may quote the payload)
            raise BadPayload(f"payload is not JSON ({type(err).__name__})") from None
        if type(event) is not dict:
            raise BadPayload(f"payload is a JSON {type(event).__name__}, not an object")
        if event.get("hook_event_name") in JUDGED_EVENTS:
            policies, note = local.fallback_policies(root)
            if note:
                log(f"fallback {note}")
            for policy in policies:  # more than one when the service's policy cannot be trusted: any deny wins
                v = local.fallback_verdict(host, harness, event, t, policy, cause)
                if verdict is None or (v["decision"] == "deny" and verdict["decision"] != "deny"):
                    verdict = v
    except DecodeError as err:
        # The payload lacks a call's keys: the service answers such a request no_override too.
        log(f"fallback failed open {_ids(event)} cause={cause!r} why=no_call:{err.code}")
    except Exception as err:
        if not pre:
            raise
        rule = next((r for r in (local.could_match(p, raw) for p in local.fallback_policies(root)[0]) if r), None)
        if rule is None:
            log(f"fallback failed open {_ids(event)} cause={cause!r} why=unjudged:{type(err).__name__}, no rule could match")
            return
        verdict = make_reply(None, "deny", f"policy:{rule.id}.unjudged",
                             f"The call could not be judged ({type(err).__name__}) and rule {rule.id} could match it, "
                             "so it is denied.", source=local.FALLBACK_SOURCE)
    denied = verdict is not None and verdict["decision"] == "deny"
    if verdict is not None:
        if denied:
            tell(dict(verdict))
            log(f"fallback deny {_ids(event)} cause={cause!r} reason={verdict['reason']}")
        else:
            log(f"fallback failed open {_ids(event)} cause={cause!r} why={verdict['reason']}")
    if type(event) is not dict:
        return  # (unreadable: nothing to capture; a deny was told)
    assert isinstance(event, dict)
    blocked = (VERDICT_HOOK_ID, f"{verdict['reason']}: {verdict['explanation']}") if denied and verdict else None
    capture_event(host, DataDir(root), harness, event, t, blocked, told=True)


#: How far ``REMATCH_HOOK_T_MS`` may lie from now, ms: the time an extension received the event it hands over.
HANDED_T_SKEW_MS = 600_000


def _event_time() -> int:
    """Now, unix ms; or ``REMATCH_HOOK_T_MS``, when a caller that already sent the event to the service
    (pi's extension) hands it over with the time it sent it at: the same invocation, so the service's
    capture and this one are applied once (the digest is over harness, time and payload)."""
    now = time.time_ns() // 1_000_000
    given = os.environ.get("REMATCH_HOOK_T_MS", "")
    if given.isdigit() and abs(int(given) - now) <= HANDED_T_SKEW_MS:
        return int(given)
    return now


def main(argv: list[str] | None = None) -> int:
    """Capture one hook payload; always return 0."""
    t = _event_time()
    harness, out = _args(sys.argv[1:] if argv is None else argv)
    out_fd = _silence()
    # Only the harness's own plugin (and the built-ins): importing every installed plugin
    # costs each hook process a third more. REMATCH_LOAD_PLUGINS still overrides.
    os.environ.setdefault("REMATCH_LOAD_PLUGINS", harness)
    root: Path | None = None
    try:
        root = _data_root(out)
        raw = sys.stdin.buffer.read((64 << 20) + 1)  # capture.MAX_PAYLOAD_BYTES, and one more to tell
        cause = _handed_cause() or "service off (REMATCH_LIVE_SERVICE=0)"
        if os.environ.get("REMATCH_LIVE_SERVICE", "1") != "0":
            verdict = _to_service(harness, raw, t, root)
            if verdict is not None:
                if verdict.get("decision") == "deny":
                    _deny(harness, verdict, out_fd, _event_name(raw))
                return 0
            cause = "no service took it"
        # No service answered: the call is judged here, by the same rules, and captured as told.
        judge_and_capture(harness, raw, t, root, cause,
                          lambda verdict: _deny(harness, cast("Reply", verdict), out_fd, _event_name(raw)))
    except BaseException as err:  # fail open: the session goes on whatever happened here
        if root is not None:
            from rematch_trace.live.folder import log_error

            log_error(root, f"rematch-hook {harness}", _describe(err))
    return 0


if __name__ == "__main__":
    sys.exit(main())
