"""``rematch flagged``: the sessions worth reflecting on."""

from __future__ import annotations

import click

from rematch_trace.cli.common import data_folder, echo_json


@click.command("flagged")
@click.option("--out", "out", type=click.Path(), help="Data folder.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def flagged_cmd(out: str | None, as_json: bool) -> None:
    """List flagged sessions with their reasons."""
    from rematch_trace.store.ledger import Ledger

    data = data_folder(out)
    if not data.ledger.exists():
        raise click.ClickException(f"nothing imported into {data.root} yet; run: rematch import")
    with Ledger(data.ledger) as ledger:
        rows = ledger.sessions(flagged=True)
    if as_json:
        echo_json(
            [
                {
                    "harness": r["harness"], "session_id": r["session_id"], "agent_kind": r["agent_kind"],
                    "reasons": r["reasons"],
                    "seqs": {"redirect": r["redirect_seqs"], "error_cluster": r["error_cluster_seqs"],
                             "mark": r["mark_seqs"]},
                    "trace": r["trace_path"], "domain": r["domain"],
                }
                for r in rows
            ]
        )
        return
    if not rows:
        click.echo("no flagged sessions")
    for r in rows:
        click.echo(f"{r['harness']:<12} {r['session_id']:<44} {', '.join(r['reasons'])}")
