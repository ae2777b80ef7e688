"""The risk features a shell reading shows that the command's text alone does not.

:func:`reading_features` takes a :class:`~rematch_trace.security.shell.Reading`
and finds:

* ``dynamic_execution``: code the reading could not know before it runs
  (``${!V}``, ``eval "$X"``, ``base64 -d | sh``), or a reading that stopped
  at a bound (failing closed);
* ``remote_code_fetch_exec``: a download run later in the command
  (``curl -o f URL && sh f``), a fetcher piped into an interpreter;
* the deletion features, each target judged from the folder the command runs
  in (``cd ~ && rm -rf .``), for ``rm -r``, ``find … -delete`` and ``rsync
  --delete`` onto a folder (it deletes what the source lacks), and the
  one-liners' recursive deletes;
* ``credential_in_args``: the environment (``env``, ``printenv``,
  ``/proc/self/environ``) piped into a command that reaches the network;
* ``outbound_upload``: ``git push`` in a command that stages a file that
  usually holds secrets (``git add .env && git push``), and a pipe into a
  connection (``… | ssh host 'cat > f'``, ``… | nc host port``);
* what the one-liners do (:mod:`rematch_trace.security.oneliners`), their
  shell strings read again through ``nested``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from rematch_trace.security.deletion import find_targets, judge_target, rm_targets
from rematch_trace.security.oneliners import perl_features, python_features
from rematch_trace.security.shell import FETCHERS, Cmd, Reading

#: Commands that reach the network (a pipe into one sends its input out).
NETWORK = FETCHERS | frozenset(("nc", "ncat", "netcat", "socat", "ssh", "scp", "sftp", "ftp", "telnet", "openssl",
                                "rsync", "aws", "gsutil", "gcloud", "az", "rclone", "gh"))
#: Commands that send what is piped into them to another host.
_PIPE_SENDERS = frozenset(("ssh", "nc", "ncat", "netcat", "socat", "telnet", "openssl"))
_ENV_DUMPS = frozenset(("env", "printenv", "set", "export", "declare", "typeset"))
_ENVIRON_FILES = ("/proc/self/environ", "/proc/1/environ")


def _rsync_target(args: list[str]) -> str | None:
    """The destination of an ``rsync`` that deletes (``--delete``, ``--delete-*``), else ``None``."""
    if not any(a.startswith("--delete") or a == "--remove-source-files" for a in args):
        return None
    operands = [a for a in args if not a.startswith("-")]
    return operands[-1] if len(operands) >= 2 else None


def _deletions(cmd: Cmd, roots: tuple[str, ...]) -> tuple[bool, set[str]]:
    """Whether ``cmd`` deletes recursively, and what it deletes the whole of."""
    if cmd.name == "rm":
        targets = rm_targets(cmd.args)
        deletes = bool(targets)
    elif cmd.name == "find":
        targets = find_targets(cmd.args)
        deletes = bool(targets)
    elif cmd.name == "rsync":
        t = _rsync_target(cmd.args)
        targets = [t] if t is not None else []
        deletes = bool(targets)
    else:
        return False, set()
    found: set[str] = set()
    for target in targets:
        feature = judge_at(target, cmd.cwd, roots)
        if feature:
            found.add(feature)
    return deletes, found


def judge_at(target: str, cwd: str | None, roots: tuple[str, ...]) -> str | None:
    """The deletion feature of deleting ``target`` from folder ``cwd`` (see :class:`~rematch_trace.security.shell.Cmd`)."""
    if not target:
        return None
    if target.startswith(("/", "~", "$HOME", "${HOME}")) or cwd is None:
        return judge_target(target, roots, moved=False)
    if cwd == "":
        return None  # a folder known only at run time
    joined = os.path.normpath(os.path.join(cwd, target.rstrip("/") or "."))
    if target.endswith(("/*", "*")) and not joined.endswith("*"):
        joined += "/*"
    # A relative folder is known relative to the session's: `cd .. && rm -rf *` deletes the repository's parent.
    return judge_target(joined, roots, moved=False)


def _sensitive_staged(reading: Reading, sensitive: Callable[[str], bool]) -> bool:
    for c in reading.commands:
        if c.name == "git" and c.args[:1] in (["add"], ["stage"]) and any(
                sensitive(a) for a in c.args[1:] if not a.startswith("-")):
            return True
    return False


def reading_features(reading: Reading, roots: tuple[str, ...], sensitive: Callable[[str], bool],
                     nested: Callable[[str], set[str]]) -> set[str]:
    """The features of ``reading`` (see the module docstring).

    :param sensitive: whether a path names a file that usually holds secrets.
    :param nested: the features of a shell command a one-liner runs (one level deeper).
    """
    found: set[str] = set()
    if reading.dynamic or reading.failed:
        found.add("dynamic_execution")
    if reading.fetch_exec:
        found |= {"remote_code_fetch_exec", "network_egress"}
    pushes = False
    for c in reading.commands:
        deletes, what = _deletions(c, roots)
        if deletes:
            found.add("destructive_command")
            found |= what
        if c.name == "git" and c.args[:1] == ["push"]:
            pushes = True
        if c.name in _PIPE_SENDERS and c.prev is not None:
            # `tar cz ~/.ssh | ssh host 'cat > k'`: what is piped into a connection goes out.
            found |= {"outbound_upload", "network_egress"}
        if c.name in NETWORK and c.prev is not None:
            p: Cmd | None = c.prev
            hops = 0
            while p is not None and hops < 16:
                if (p.name in _ENV_DUMPS and not [a for a in p.args if not a.startswith("-")]) or (
                        p.name in ("cat", "tr", "strings", "xxd", "base64") and any(
                            (a.startswith("/proc/") and a.endswith("/environ")) or a in _ENVIRON_FILES
                            for a in p.args)):
                    found |= {"credential_in_args", "network_egress"}
                    break
                p = p.prev
                hops += 1
    if pushes and _sensitive_staged(reading, sensitive):
        found.add("outbound_upload")
    for language, code, cwd in reading.scripts:
        def judge(target: str, cwd: str | None = cwd) -> str | None:
            return judge_at(target, cwd, roots)
        if language == "python":
            found |= python_features(code, nested, judge)
        else:
            found |= perl_features(code, nested, judge, node=language == "node")
    return found


__all__ = ["NETWORK", "judge_at", "reading_features"]
