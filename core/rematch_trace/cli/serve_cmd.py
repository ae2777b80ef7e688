"""``rematch serve``: the resident live service (verdicts before a tool runs, approvals)."""

from __future__ import annotations

import sys

import click

from rematch_trace.cli.common import data_option


@click.command("serve")
@data_option
@click.option("--policy", type=click.Path(), help="Policy file (default: $REMATCH_POLICY, ~/.config/rematch/policy.yml, the built-in one).")
@click.option("--provider", default="localRulesOnly", show_default=True,
              type=click.Choice(["localRulesOnly", "traceRookCloudDemo", "anthropicBYOK"]), help="Analysis provider.")
@click.option("--idle-seconds", default=600.0, show_default=True, type=click.FloatRange(min=0.1),
              help="Exit after this long with nothing to serve.")
@click.option("--where", is_flag=True, help="Print the socket paths and exit.")
@click.option("--export-otlp", "export_otlp", metavar="URL", default=None,
              help="Send each live session's spans to this OTLP/HTTP endpoint as they are written ('' for "
                   "$OTEL_EXPORTER_OTLP_ENDPOINT; docs/otel.md); off the verdict path.")
def serve_cmd(out: str | None, policy: str | None, provider: str, idle_seconds: float, where: bool,
              export_otlp: str | None) -> None:
    """Serve live verdicts on a Unix socket until SIGTERM or an idle period (docs/ipc-v2.md)."""
    from rematch_trace.live import paths
    from rematch_trace.live.service import Service, serve

    data = paths.data_folder(out)
    if where:
        click.echo(f"events  {paths.events_socket(data)}")
        click.echo(f"control {paths.control_socket(data)}")
        click.echo(f"log     {paths.log_file(data)}")
        return
    ready = None
    if export_otlp is not None:  # docs/otel.md, "Live": spans sent from a thread, off the verdict path
        from rematch_trace.cli.common import require
        from rematch_trace.export.live import attach

        require("otlp", "rematch serve --export-otlp")

        def ready(service: Service) -> None:
            attach(service, service.data, export_otlp or None)

    sys.exit(serve(data, policy=policy, mode=provider, idle_s=idle_seconds, ready=ready))
