"""``rematch approvals``, ``rematch approve ID``, ``rematch deny ID``: calls held for a decision."""

from __future__ import annotations

from pathlib import Path

import click

from rematch_trace.cli.common import data_option, echo_json

_OUT = data_option


def _data(out: str | None) -> Path:
    from rematch_trace.live import paths

    return paths.data_folder(out)


@click.command("approvals")
@_OUT
@click.option("--json", "as_json", is_flag=True, help="Print the held calls as JSON.")
def approvals_cmd(out: str | None, as_json: bool) -> None:
    """List the calls the live service holds for an approval."""
    from rematch_trace.live.control import ControlError, list_approvals

    try:
        items = list_approvals(_data(out))
    except ControlError as err:
        raise click.ClickException(str(err)) from None
    if as_json:
        echo_json(items)
        return
    if not items:
        click.echo("no calls are waiting for an approval")
        return
    for a in items:
        who = a["session"] + (f"/{a['agent_sub_id']}" if a["agent_sub_id"] else "")
        click.echo(f"{a['approval_id']}  {a['tool_name']} ({a['tool_class']})  {a['rule']}  "
                   f"{a['expires_in_ms'] // 1000}s left  session {who}")
        click.echo(f"    {a['summary']}")
        if a["risk_features"]:
            click.echo(f"    risk: {', '.join(a['risk_features'])}")
        click.echo(f"    fingerprint {a['action_fingerprint']}  nonce {a['invocation_nonce']}")


def _decide(out: str | None, approval_id: str, approve: bool) -> None:
    from rematch_trace.live.control import ControlError, decide

    try:
        click.echo(decide(_data(out), approval_id, approve))
    except ControlError as err:
        raise click.ClickException(str(err)) from None


@click.command("approve")
@click.argument("approval_id")
@_OUT
def approve_cmd(approval_id: str, out: str | None) -> None:
    """Let held call APPROVAL_ID proceed (the host's own permissions still apply)."""
    _decide(out, approval_id, True)


@click.command("deny")
@click.argument("approval_id")
@_OUT
def deny_cmd(approval_id: str, out: str | None) -> None:
    """Deny held call APPROVAL_ID."""
    _decide(out, approval_id, False)
