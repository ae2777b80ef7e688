"""``rematch show``: one trace, readably; ``--conversation``: what was said and done, from its source."""

from __future__ import annotations

import click

from rematch_trace.cli.common import data_option, echo_json, find_trace, readable


@click.command("show")
@click.argument("session")
@data_option
@click.option("--json", "as_json", is_flag=True, help="Print the raw trace lines.")
@click.option("--conversation", is_flag=True,
              help="Show the conversation (prompts, assistant text, tool calls with their output) from the "
                   "session's source transcript, redacted.")
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default=None,
              help="With --conversation: text (the default), or export it as Markdown or JSON.")
@click.option("--full", is_flag=True, help="With --conversation: do not fold long texts and outputs.")
def show_cmd(session: str, out: str | None, as_json: bool, conversation: bool, fmt: str | None,
             full: bool) -> None:
    """Print one session's trace readably (SESSION may be an id prefix); --conversation: what was said."""
    data = readable(out)
    path = find_trace(data, session)
    if fmt is not None or full:
        conversation = True
    if conversation:
        from rematch_trace.conversation.text import render_markdown, render_text
        from rematch_trace.conversation.view import read_conversation

        conv = read_conversation(data, path.name[:-6])
        if fmt == "json" or as_json:
            echo_json(conv.as_json())
        elif fmt == "markdown":
            for line in render_markdown(conv, full=True):
                click.echo(line)
        else:
            for line in render_text(conv, full=full):
                click.echo(line)
        return
    from rematch_trace.cli.show import render

    if as_json:
        with open(path, "rb") as f:
            for raw in f:
                click.echo(raw.rstrip(b"\n").decode())
        return
    for line in render(path, data.events / path.name):
        click.echo(line)
