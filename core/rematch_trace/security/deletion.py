"""What a deleting command deletes: the whole file system, the home folder, the repository.

:func:`deletion_features` reads a shell command as the shell would split it
(quotes, ``;``, ``&&``, ``||``, ``|``, lines, ``sh -c '...'``) and looks at
every ``rm`` that deletes recursively and every ``find`` that deletes all it
finds (``-delete`` or ``-exec rm`` with no test narrowing it), behind the
usual wrappers (``sudo``, ``env``, ``command``, ``nohup``, ``time``, variable
assignments, ``/bin/rm``, ``\\rm``). Each target is then judged:

* ``root_deletion``: ``/``, ``/*``, ``//``, ``/.``;
* ``home_deletion``: ``~``, ``~user``, ``$HOME``, ``${HOME}`` (with or without
  ``/``, ``/*``, ``/.``), ``/home``, ``/home/<user>``, ``/Users/<user>``, ``/root``;
* ``repository_deletion``: ``.``, ``..``, ``*``, ``$PWD``, ``$(pwd)`` (and
  ``./``, ``./*``), unless a ``cd`` came before it in the command (the folder
  is then unknown); and an absolute path that is the repository's top or the
  working folder, or one of their parents (``roots``).

A path below those (``~/project/build``, ``node_modules``, ``/home/u/x``) is
none of them. This reads the command text only: a path built at run time
(``rm -rf "$DIR"``) is not resolved.

The risk rules read a command through the shell reader
(:mod:`rematch_trace.security.shell_risk`, with the folder each command runs
in) and use the judges here; :func:`deletion_features` is their fallback
when that reading stops at a bound.
"""

from __future__ import annotations

import os
import re
import shlex

_SHELLS = frozenset(("sh", "bash", "zsh", "dash", "ksh", "fish"))
_WRAPPERS = frozenset(("sudo", "doas", "command", "builtin", "exec", "nohup", "time", "env", "nice", "ionice",
                       "stdbuf", "busybox"))
#: Options of a wrapper that take a value (``sudo -u root rm ...``).
_WRAPPER_VALUE_OPTS = frozenset(("-u", "-g", "-C", "-D", "-n", "-c", "-p", "-U", "-h", "-r", "-t"))
_SEPARATORS = frozenset((";", "&&", "||", "|", "&", "(", ")", ";;", "|&", "{", "}", "!"))
#: ``find`` primaries that narrow what it deletes: with one, it does not delete everything it walks.
_FIND_TESTS = frozenset((
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-type", "-xtype",
    "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-newer", "-size", "-user", "-group", "-uid", "-gid",
    "-perm", "-empty", "-links", "-prune", "-not", "!", "-o", "-or", "-lname", "-ilname", "-inum", "-samefile",
    "-nouser", "-nogroup", "-readable", "-writable", "-executable", "-fstype", "-used", "-context",
))
_PWD = re.compile(r"\$\(\s*pwd\s*\)|`\s*pwd\s*`|\$\{PWD\}")
_HOME_WORD = re.compile(r"~[A-Za-z0-9._-]*|\$HOME|\$\{HOME\}")
_HOME_PATH = re.compile(r"/home(?:/[^/]+)?|/Users(?:/[^/]+)?|/root")
_MAX_DEPTH = 3


def _words(command: str) -> list[str]:
    """The shell words of ``command``, separators as words of their own (a rough split when unbalanced)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # an unbalanced quote: split on blanks and separators
        return re.findall(r"&&|\|\||[;&|()]|[^\s;&|()]+", command)


def _bare(target: str) -> str:
    """``target`` without what names the same folder or all of its content (``/``, ``/*``, ``/.``)."""
    t = target
    while True:
        for tail in ("/*", "/.", "/"):
            if t.endswith(tail) and len(t) > len(tail) - 1:
                t = t[: -len(tail)]
                break
        else:
            return t


def judge_target(target: str, roots: tuple[str, ...], moved: bool) -> str | None:
    """The deletion feature of deleting ``target`` whole (``moved``: relative names do not name the session's folder)."""
    if not target:
        return None
    t = _bare(_PWD.sub("$PWD", target))
    if target.startswith("/") and t.strip("/") == "":
        return "root_deletion"
    if _HOME_WORD.fullmatch(t) or _HOME_PATH.fullmatch(t):
        return "home_deletion"
    if not moved and t in ("", ".", "..", "*", "$PWD", "$PWD/..", "../*"):
        return "repository_deletion"
    if t.startswith("/"):
        path = os.path.normpath(t)
        if path == "/":
            return "root_deletion"
        for root in roots:
            if root and (root == path or root.startswith(path.rstrip("/") + "/")):
                return "repository_deletion"
    return None


def rm_targets(args: list[str]) -> list[str]:
    """The operands of an ``rm`` that deletes recursively (none when it does not)."""
    recursive = False
    targets: list[str] = []
    options = True
    for a in args:
        if options and a == "--":
            options = False
        elif options and a.startswith("--"):
            recursive = recursive or a == "--recursive"
        elif options and a.startswith("-") and len(a) > 1:
            recursive = recursive or "r" in a[1:] or "R" in a[1:]
        else:
            targets.append(a)
    return targets if recursive else []


def find_targets(args: list[str]) -> list[str]:
    """The start folders of a ``find`` that deletes all it walks (none when a test narrows it)."""
    starts: list[str] = []
    i = 0
    while i < len(args) and args[i] in ("-H", "-L", "-P"):
        i += 1
    while i < len(args) and not args[i].startswith("-") and args[i] not in ("(", "!"):
        starts.append(args[i])
        i += 1
    expr = args[i:]
    if any(e in _FIND_TESTS for e in expr):
        return []
    deletes = "-delete" in expr or any(
        e in ("-exec", "-execdir", "-ok", "-okdir") and k + 1 < len(expr) and os.path.basename(expr[k + 1]) == "rm"
        for k, e in enumerate(expr)
    )
    return (starts or ["."]) if deletes else []


def _command_of(words: list[str]) -> tuple[str, list[str]]:
    """The program a simple command runs (past wrappers and assignments) and its arguments."""
    i = 0
    while i < len(words):
        w = words[i]
        name = os.path.basename(w.lstrip("\\"))
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", w, re.S):
            i += 1
        elif name in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 2 if words[i] in _WRAPPER_VALUE_OPTS else 1
        else:
            return name, words[i + 1:]
    return "", []


def deletion_features(command: str, roots: tuple[str, ...] = (), depth: int = 0) -> set[str]:
    """The deletion features of shell ``command`` (see the module docstring).

    :param roots: absolute, normalized folders whose deletion is the repository's
        (its top and the working folder).
    """
    found: set[str] = set()
    moved = False
    for line in _PWD.sub("$PWD", command).splitlines():
        simple: list[str] = []
        for w in [*_words(line), ";"]:
            if w not in _SEPARATORS:
                simple.append(w)
                continue
            name, args = _command_of(simple)
            simple = []
            if name in ("cd", "pushd", "popd"):
                moved = True
            elif name == "rm":
                targets = rm_targets(args)
            elif name == "find":
                targets = find_targets(args)
            elif name in _SHELLS and "-c" in args and depth < _MAX_DEPTH:
                k = args.index("-c")
                if k + 1 < len(args):
                    found |= deletion_features(args[k + 1], roots, depth + 1)
                continue
            else:
                continue
            if name in ("cd", "pushd", "popd"):
                continue
            for t in targets:
                feature = judge_target(t, roots, moved)
                if feature is not None:
                    found.add(feature)
    return found


__all__ = ["deletion_features", "find_targets", "judge_target", "rm_targets"]
