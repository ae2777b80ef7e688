"""The ``rematch`` command.

Each command lives in a module of its own and is imported only when it runs,
so ``rematch --help`` and a rerun that finds nothing to do start fast. A new
command is one module and one line in :data:`COMMANDS`.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

#: Command name -> ``module:attribute`` of its click command.
COMMANDS: dict[str, str] = {
    "import": "rematch_trace.cli.import_cmd:import_cmd",
    "plugins": "rematch_trace.cli.plugins_cmd:plugins_cmd",
    "flagged": "rematch_trace.cli.flagged:flagged_cmd",
    "show": "rematch_trace.cli.show_cmd:show_cmd",
    "audit": "rematch_trace.cli.audit_cmd:audit_cmd",
    "lake": "rematch_trace.cli.lake:lake",
    "forget": "rematch_trace.cli.forget_cmd:forget_cmd",
    "doctor": "rematch_trace.cli.doctor_cmd:doctor_cmd",
    "report": "rematch_trace.cli.report_cmd:report_cmd",
    "stats": "rematch_trace.cli.stats:stats_cmd",
    "sessions": "rematch_trace.cli.sessions_cmd:sessions_cmd",
    "search": "rematch_trace.cli.search_cmd:search_cmd",
    "export": "rematch_trace.cli.export_cmd:export_group",
    "watch": "rematch_trace.cli.watch_cmd:watch_cmd",
    "hooks": "rematch_trace.cli.hooks_cmd:hooks_cmd",

    "serve": "rematch_trace.cli.serve_cmd:serve_cmd",
    "policy": "rematch_trace.cli.policy_cmd:policy_cmd",
    "approvals": "rematch_trace.cli.approvals_cmd:approvals_cmd",
    "approve": "rematch_trace.cli.approvals_cmd:approve_cmd",
    "deny": "rematch_trace.cli.approvals_cmd:deny_cmd",
}


#: Commands that answer from the data folder alone (the ledger and its stored summaries): they call no
#: plugin hook, so they load no plugin. Loading them (pluggy, attrs, each plugin's modules) was about a
#: tenth of ``rematch sessions`` on 3,300 sessions (bench/listing.py); a plugin that fails to load is said
#: by the commands that use plugins (``import``, ``watch``, ``plugins``, ``doctor``, ``show``, ...).
DATA_ONLY = frozenset({"sessions", "stats", "flagged"})
#: Commands that load the plugins only when they call a hook (``search``: when its index must read a source
#: transcript the import did not hand it, through ``importing.claimed.worker_host``). A query answered from
#: the index loads none: the plugins' imports were most of the command's start-up (bench/search_latency.py).
ON_USE = frozenset({"search"})


class LazyGroup(click.Group):
    """A click group that imports a command's module only when it is used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The data folder, the environment and the exit statuses, after the command list."""
        from rematch_trace.store.location import default_data_dir

        home = os.environ.get("REMATCH_HOME")
        rows = [
            ("--data DIR", "the data folder of every command (--out too, but for report: its site); "
                           "else $REMATCH_HOME, else the default below"),
            ("where plugins look", "rematch plugins (rematch import with no PATHS reads those folders)"),
        ]
        env = [
            ("REMATCH_HOME", "the data folder when --data is not given"),
            ("REMATCH_LOAD_PLUGINS", "a,b: load only these plugins"),
            ("REMATCH_MAX_LINE_MB", "the longest transcript line read (64)"),
            ("REMATCH_CONFIG", "the config file (domains); default ~/.config/rematch/config.yml"),
            ("REMATCH_DEBUG", "1: print the traceback of an internal error"),
        ]
        codes = [
            ("0", "done: every file imported or unchanged; a reading command printed what was asked"),
            ("1", "something not imported (a file or line skipped, a file failed) or nothing found "
                  "(no transcripts, no data folder, no such session, nothing matches the filters)"),
            ("2", "a usage error (an unknown --harness, ...), or a fatal one (another import holds the "
                  "lock, a read-only data folder, a file with mistakes, an internal error)"),
            ("128+N", "an import stopped by signal N (130: Ctrl-C, 143: SIGTERM); finished files are kept"),
        ]
        for title, items in (("Data folder", rows), ("Environment", env), ("Exit status", codes)):
            with formatter.section(title):
                formatter.write_dl(items)
                if title == "Data folder":
                    # Written whole: a path wrapped mid-name cannot be copied.
                    formatter.write(f"{'':{formatter.current_indent}}default: {default_data_dir()}\n")
                    if home:
                        formatter.write(f"{'':{formatter.current_indent}}REMATCH_HOME (set now): {home}\n")

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; its one-line error reaches the terminal with hidden characters escaped.

        Errors name paths and ids a transcript or a user chose: a newline or an escape sequence in one
        must not forge a line or drive the terminal (:func:`~rematch_trace.host.text.one_line`).
        """
        try:
            return super().invoke(ctx)
        except click.ClickException as err:
            from rematch_trace.host.text import one_line

            # click types the message Final; the exception is still ours to show, escaped. Lines given as
            # details (a file's mistakes) are escaped one by one and kept as lines.
            details = getattr(err, "details", ())
            vars(err)["message"] = "\n  ".join(one_line(line) for line in (err.message, *details))
            raise

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        """The command named first in ``args``; a misspelt one is a usage error naming the close ones."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib

            from rematch_trace.host.text import one_line

            close = difflib.get_close_matches(name, sorted(COMMANDS), n=3, cutoff=0.6)
            hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            ctx.fail(f"No such command {one_line(name)!r}.{hint}")
        return super().resolve_command(ctx, args)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rematch-trace", prog_name="rematch")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Import coding-agent transcripts into one trace schema and flag sessions worth reflecting on."""
    if ctx.invoked_subcommand in DATA_ONLY or ctx.invoked_subcommand in ON_USE:
        return
    # Every other command says, once, which installed plugin failed to load: its answer may be
    # missing what that plugin would have imported or read.
    from rematch_trace.host.loading import load_plugins

    load_plugins()


def main() -> None:
    """Entry point of the ``rematch`` console script.

    Whatever escapes the commands' own handling is still one line, not a
    traceback (``REMATCH_DEBUG=1`` shows it).
    """
    try:
        cli(prog_name="rematch")
    except Exception as err:
        if os.environ.get("REMATCH_DEBUG"):
            raise
        from rematch_trace.host.text import one_line

        click.echo(f"rematch: internal error: {type(err).__name__}: {one_line(err)} (REMATCH_DEBUG=1 shows where)",
                   err=True)
        sys.exit(2)

