"""``rematch approvals``, ``rematch approve ID``, ``rematch deny ID``: calls held for a decision.

Approving needs a person at a terminal (docs/threat-model.md): ``rematch
approve ID`` run interactively has the service write a one-time code to this
terminal and asks for it back; run without a terminal it is refused unless the
policy sets ``approve_without_code: true``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click
import orjson

from rematch_trace.cli.common import data_option, echo_json

_OUT = data_option
#: Seconds between two looks at the held calls under ``--watch``.
WATCH_POLL_S = 0.5


def _data(out: str | None) -> Path:
    from rematch_trace.live import paths

    return paths.data_folder(out)


#: Columns of a command's wrapped rows.
WRAP = 100


def _rows(text: str) -> list[str]:
    """``text`` as terminal rows: each of its lines escaped (:func:`one_line`), then wrapped; a row that goes on
    from the one before starts with ``+``, a line of the text with ``|``."""
    import textwrap

    from rematch_trace.host.text import one_line

    rows: list[str] = []
    for line in text.split("\n"):
        pieces = textwrap.wrap(one_line(line), WRAP, break_on_hyphens=False, drop_whitespace=False,
                               replace_whitespace=False) or [""]
        rows.extend(("      | " if i == 0 else "      + ") + piece for i, piece in enumerate(pieces))
    return rows


def _show(a: Any) -> None:
    """One held call, for a person: its whole redacted command, wrapped, hidden characters escaped (the agent
    chose it, and its session's id); when the service could not show it whole, a loud warning of its own, the
    head, the tail and every risky part of what is between."""
    from rematch_trace.host.text import one_line

    who = a["session"] + (f"/{a['agent_sub_id']}" if a["agent_sub_id"] else "")
    click.echo(one_line(f"{a['approval_id']}  {a['tool_name']} ({a['tool_class']})  {a['rule']}  "
                        f"{a['expires_in_ms'] // 1000}s left  session {who}"))
    if a["command_hidden"]:
        click.echo(f"    !! this call is {a['command_chars']} characters long; {a['command_hidden']} in its middle "
                   "are NOT shown below (its first and last parts are)")
        click.echo("    first part:")
        for row in _rows(a["command_head"]):
            click.echo(row)
        click.echo(f"    !! ... {a['command_hidden']} characters not shown ...")
        if a["risky_parts"]:
            click.echo(f"    !! risky parts of what is not shown ({len(a['risky_parts'])} of {a['risky_total']}):")
            for part in a["risky_parts"]:
                for row in _rows(part):
                    click.echo(row)
        elif a["risky_total"] == 0 and a["command_head"]:
            click.echo("    (nothing in what is not shown looks risky to rematch's patterns)")
        click.echo("    last part:")
        for row in _rows(a["command_tail"]):
            click.echo(row)
        click.echo("    !! deny it unless you know what the unshown middle does")
    else:
        click.echo(f"    command ({a['command_chars']} characters, shown whole):")
        for row in _rows(a["command_head"]):
            click.echo(row)
    if a["risk_features"]:
        click.echo(one_line(f"    risk: {', '.join(a['risk_features'])}"))
    click.echo(one_line(f"    fingerprint {a['action_fingerprint']}  nonce {a['invocation_nonce']}"))
    if a.get("event_fingerprint"):
        click.echo(one_line(f"    event fingerprint {a['event_fingerprint']}"))


def _whole(data: Path, items: list[Any]) -> list[Any]:
    """Each listed call as ``show_approval`` gives it (as much of its command as one reply carries)."""
    from rematch_trace.live.control import show

    out = []
    for a in items:
        full = show(data, a["approval_id"])
        out.append(full if full is not None else a)  # decided since it was listed: as listed
    return out


def _watch(data: Path, as_json: bool) -> None:
    """Print each held call once, as it arrives, and say when it leaves; until interrupted."""
    from rematch_trace.live.control import ControlError, list_approvals

    shown: set[str] = set()
    if not as_json:
        click.echo("watching for held calls (Ctrl-C to stop); approve one with: rematch approve ID", err=True)
    try:
        while True:
            try:
                items = list_approvals(data)
                fresh = _whole(data, [a for a in items if a["approval_id"] not in shown])
            except ControlError as err:
                raise click.ClickException(str(err)) from None
            now = {a["approval_id"] for a in items}
            for a in fresh:
                if a["approval_id"] not in shown:
                    if as_json:
                        click.echo(orjson.dumps(a, option=orjson.OPT_SORT_KEYS).decode())
                    else:
                        _show(a)
            for gone in sorted(shown - now):
                if not as_json:
                    click.echo(f"{gone}  no longer held (decided, expired or cancelled)")
            shown = now
            sys.stdout.flush()
            time.sleep(WATCH_POLL_S)
    except KeyboardInterrupt:
        return


@click.command("approvals")
@_OUT
@click.option("--json", "as_json", is_flag=True, help="Print the held calls as JSON (one object a line with --watch).")
@click.option("--watch", is_flag=True, help="Keep running and show held calls as they arrive.")
def approvals_cmd(out: str | None, as_json: bool, watch: bool) -> None:
    """List the calls the live service holds for an approval.

    At a terminal it then offers to approve one (with the one-time code the
    service writes to this terminal) or deny one.
    """
    from rematch_trace.live.control import ControlError, list_approvals

    if watch:
        _watch(_data(out), as_json)
        return
    try:
        items = _whole(_data(out), list_approvals(_data(out)))
    except ControlError as err:
        raise click.ClickException(str(err)) from None
    if as_json:
        echo_json(items)
        return
    if not items:
        click.echo("no calls are waiting for an approval")
        return

    for a in items:
        _show(a)
    if sys.stdin.isatty() and sys.stdout.isatty():
        _prompt(_data(out))


def _prompt(data: Path) -> None:
    """At a terminal: approve (with the one-time code) or deny one of the calls listed."""
    from rematch_trace.live.control import ControlError, decide

    try:
        answer = input("a ID to approve, d ID to deny, Enter to leave: ").split()
    except EOFError:
        return
    if not answer:
        return
    if len(answer) != 2 or answer[0] not in ("a", "d"):
        raise click.ClickException("answer a ID or d ID")
    try:
        if answer[0] == "a":
            click.echo(_approve_at_terminal(data, answer[1]))
        else:
            click.echo(decide(data, answer[1], False))
    except ControlError as err:
        raise click.ClickException(str(err)) from None


def _approve_at_terminal(data: Path, approval_id: str) -> str:
    """The interactive approval: the service writes a code to this terminal; the person types it back."""
    from rematch_trace.live.control import Refused, decide, request_code, show

    held = show(data, approval_id)
    if held is not None:  # what is approved, in full, before the code is asked for
        click.echo("you are approving:")
        _show(held)
    click.echo(request_code(data, approval_id))
    while True:
        try:
            code = input("one-time code (as shown above): ")
        except EOFError:
            raise click.ClickException("no code was typed; nothing was approved") from None
        try:
            return decide(data, approval_id, True, code)
        except Refused as err:
            if err.error != "wrong_code" or "tries left" not in str(err):
                raise
            click.echo(str(err), err=True)


def _decide(out: str | None, approval_id: str, approve: bool) -> None:
    from rematch_trace.live.control import ControlError, decide

    data = _data(out)
    try:
        if approve and sys.stdin.isatty() and sys.stdout.isatty():
            click.echo(_approve_at_terminal(data, approval_id))
        else:
            click.echo(decide(data, approval_id, approve))
    except ControlError as err:
        raise click.ClickException(str(err)) from None


@click.command("approve")
@click.argument("approval_id")
@_OUT
def approve_cmd(approval_id: str, out: str | None) -> None:
    """Let held call APPROVAL_ID proceed (the host's own permissions still apply).

    Run it in your own terminal: the service writes a one-time code there and
    this command asks for it. Without a terminal it is refused unless the policy
    sets approve_without_code: true (docs/threat-model.md).
    """
    _decide(out, approval_id, True)


@click.command("deny")
@click.argument("approval_id")
@_OUT
def deny_cmd(approval_id: str, out: str | None) -> None:
    """Deny held call APPROVAL_ID."""
    _decide(out, approval_id, False)
