"""Reading a shell command as the shell would, before the risk rules match it.

The rules of :mod:`rematch_trace.security.risk` are patterns over a command's
text; a shell walks around them (``c\\url x | s\\h``, ``eval 'rm -rf ~'``,
``cd ~ && rm -rf .``, ``${!V}``). :func:`read_command` parses the command with
tree-sitter's bash grammar (a C parser with error recovery: it never raises on
odd input) and reads it the way bash would run it:

* words with quotes and backslashes removed, ``$'\\x63'`` decoded, ``~`` and
  ``$HOME`` (``${HOME%/}``, ``${HOME:-x}``...) as the home folder, variables
  assigned earlier in the same command (``a=cu; b=rl; $a$b``), ``$(pwd)``,
  ``$(echo …)`` and ``$(printf …)`` computed;
* the commands a command runs: ``eval``, ``sh -c``/``bash -c`` strings, a
  here-doc or here-string fed to a shell, ``echo … | sh``, ``xargs``,
  ``trap``, function bodies, command and process substitutions, each read
  again, at most :data:`MAX_DEPTH` levels deep;
* the folder each command runs in (``cd``, ``pushd``), so that ``cd ~ && rm
  -rf .`` deletes the home folder;
* files downloaded earlier in the command (``curl -o f``, ``wget URL``) and
  run later (``sh f``, ``./f``, ``python f``, ``source f``).

What cannot be known before it runs is **dynamic execution**: a command name
or an ``eval``/``sh -c`` text built at run time (``${!V}``, ``$CMD``, ``$(cat
f)``), code decoded and piped into an interpreter (``base64 -d | sh``). The
reading says so (:attr:`Reading.dynamic`), and the risk feature
``dynamic_execution`` follows.

Bounded: the text parsed is at most :data:`MAX_BYTES`; tree-sitter's work is
cut after :data:`MAX_PARSE_STEPS` progress calls (a count of the parser's
operations, not a clock, so the reading of a command is the same on any
machine); the nodes walked, the words built and the commands read have caps
of their own. A reading that hits a bound, or a parser that fails, is
:attr:`Reading.failed`: the caller then fails closed (see
:func:`rematch_trace.security.risk.risk_features`). The original command is
never logged.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)
# Nothing on stderr by default (a hook prints nothing unless it denies): a program that keeps a
# log of its own says where these lines go (report_limits_to).
log.addHandler(logging.NullHandler())
_REPORTER: list[Callable[[str], None]] = []


def report_limits_to(reporter: Callable[[str], None] | None) -> None:
    """Send each reading stopped at a bound (its reason, never the command) to ``reporter`` (``None``: the logger)."""
    _REPORTER[:] = [reporter] if reporter is not None else []

#: The largest command parsed, in UTF-8 bytes.
MAX_BYTES = 1024 * 1024
#: tree-sitter calls its progress callback about every hundred parser operations; past this many calls
#: the parse is cut (about a million operations: tens of milliseconds on a loaded core).
MAX_PARSE_STEPS = 2_000
#: How many levels of ``eval``, ``sh -c``, piped scripts and one-liners are read inside one another.
MAX_DEPTH = 4
#: The most syntax nodes walked, and simple commands recorded, for one command (all levels).
MAX_NODES = 200_000
MAX_COMMANDS = 5_000
#: The longest word built (a variable expanded into itself doubles each time), and all words together.
MAX_WORD = 64 * 1024
MAX_WORDS_TOTAL = 1024 * 1024
#: All the text parsed for one command, nested readings (``eval "$X"`` a thousand times) included.
MAX_PARSED_TOTAL = 2 * MAX_BYTES

SHELLS = frozenset(("sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "ash", "busybox"))
#: Programs that run the rest of their arguments as a command.
_WRAPPERS = frozenset(("sudo", "doas", "command", "builtin", "exec", "nohup", "time", "env", "nice", "ionice",
                       "stdbuf", "setsid", "chronic", "caffeinate", "unbuffer", "pkexec", "chroot", "flock",
                       "timeout", "strace", "ltrace", "firejail", "proxychains", "proxychains4", "torsocks"))
#: Options of a wrapper that take a value (``sudo -u root rm ...``).
_WRAPPER_VALUE_OPTS = frozenset(("-u", "-g", "-C", "-D", "-n", "-c", "-p", "-U", "-h", "-r", "-t", "--user",
                                 "--group", "--signal", "--kill-after", "--chdir"))
#: Wrappers whose first operand is not the command (``timeout 5 cmd``, ``flock file cmd``, ``chroot dir cmd``).
_WRAPPER_OPERANDS = {"timeout": 1, "flock": 1, "chroot": 1}
FETCHERS = frozenset(("curl", "wget", "fetch", "http", "https", "xh", "aria2c", "lynx", "links", "w3m"))
_PYTHON = re.compile(r"(?:python|pypy)[0-9.]*")
_NODE = frozenset(("node", "nodejs", "deno", "bun"))
_PERL = frozenset(("perl", "ruby", "php"))
#: Producers whose output piped into a shell is still literal text.
_LITERAL_PRODUCERS = frozenset(("echo", "printf"))
#: Commands whose output, piped into an interpreter, is local code run as it is (not built at run time).
_FILE_PRODUCERS = frozenset(("cat", "less", "more", "head", "tail"))
#: An unknown command name that is plainly an expansion: ``$X``, ``${X}``, ``${!V}``, or one that starts ``$(``, a backquote.
_PLAIN_EXPANSION = re.compile(r"\$\{?!?[A-Za-z_][A-Za-z0-9_]*\}?$|\$\(|`|\$\{!")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
#: Words that need quoting when a reading is written back as text for the pattern rules.
_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./~*-]+")


class ReadLimit(Exception):
    """A bound of the reading was reached: the reading fails closed."""


class Cmd:
    """One simple command as it would run.

    :ivar words: every word, expanded (wrappers included: ``sudo rm -rf ~``).
    :ivar exact: whether each word's value is known (not built at run time).
    :ivar name: the program run, past wrappers and assignments (base name), ``""`` when unknown.
    :ivar path: that program's word as written (``./f``, ``/bin/rm``).
    :ivar args: its arguments; :ivar args_exact: whether each is known.
    :ivar cwd: the folder it runs in: ``None`` for the session's, ``""`` unknown, else a path
        (absolute, ``~`` or ``~/…``, or relative to the session's folder).
    :ivar redirects: ``(operator, target)`` of each redirection.
    :ivar stdin: the text fed on standard input (a here-doc or here-string), when known.
    :ivar prev: the command whose output is piped into this one.
    :ivar pipeline: the id of the pipeline it is a stage of.
    """

    __slots__ = ("args", "args_exact", "cwd", "exact", "line", "name", "path", "pipeline", "prev", "redirects",
                 "stdin", "words")

    def __init__(self, words: list[str], exact: list[bool], cwd: str | None, pipeline: int) -> None:
        self.words = words
        self.exact = exact
        self.name = ""
        self.path = ""
        self.args: list[str] = []
        self.args_exact: list[bool] = []
        self.cwd = cwd
        self.redirects: list[tuple[str, str]] = []
        self.stdin: str | None = None
        self.prev: Cmd | None = None
        self.pipeline = pipeline
        self.line: list[Cmd] = []


class Reading:
    """What a command runs, as :func:`read_command` read it.

    :ivar commands: every simple command, nested ones included, in the order read.
    :ivar dynamic: why some code cannot be known before it runs (empty when all can).
    :ivar fetch_exec: why downloaded code would run (a download run later in the command).
    :ivar failed: why the reading stopped (a bound, a parser failure); ``""`` when it did not.
    :ivar scripts: one-liner programs handed to an interpreter: ``(language, code, cwd)``.
    :ivar text: the commands written back as text, one pipeline a line, for the pattern rules.
    """

    __slots__ = ("commands", "dynamic", "failed", "fetch_exec", "scripts", "text")

    def __init__(self) -> None:
        self.commands: list[Cmd] = []
        self.dynamic: list[str] = []
        self.fetch_exec: list[str] = []
        self.failed = ""
        self.scripts: list[tuple[str, str, str | None]] = []
        self.text = ""


# One parser per thread: a parser holds the state of the parse it is doing (the service judges
# calls on several threads).
_LOCAL = threading.local()


def _parser() -> Any:
    parser = getattr(_LOCAL, "parser", None)
    if parser is None:
        import tree_sitter
        import tree_sitter_bash

        parser = _LOCAL.parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return parser


def parse(source: bytes) -> Any:
    """The tree-sitter tree of ``source``; :class:`ReadLimit` past the size or work bound."""
    if len(source) > MAX_BYTES:
        raise ReadLimit(f"command longer than {MAX_BYTES} bytes")
    steps = 0

    def progress(_offset: int, _has_error: bool) -> bool:
        nonlocal steps
        steps += 1
        return steps > MAX_PARSE_STEPS

    def read(offset: int, _point: Any) -> bytes:
        return source[offset:offset + 65536]

    parser = _parser()
    try:
        return parser.parse(read, progress_callback=progress)
    except ValueError:  # tree-sitter's "Parsing failed": the progress bound cut it
        # A cut parse is kept to be resumed by the next call: start that one afresh.
        parser.reset()
        raise ReadLimit("parse cut at its work bound") from None


def _quote(word: str) -> str:
    return word if word and _PLAIN.fullmatch(word) else shlex.quote(word)


def _decode_ansi_c(body: str) -> str:
    """The value of ``$'…'``'s body: its backslash escapes decoded."""
    out: list[str] = []
    i, n = 0, len(body)
    simple = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f",
              "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
    while i < n:
        c = body[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        d = body[i + 1]
        if d in simple:
            out.append(simple[d])
            i += 2
        elif d == "x":
            m = re.match(r"[0-9A-Fa-f]{1,2}", body[i + 2:i + 4])
            if m:
                out.append(chr(int(m.group(), 16)))
                i += 2 + len(m.group())
            else:
                out.append("\\x")
                i += 2
        elif d in "uU":
            m = re.match(r"[0-9A-Fa-f]{1,8}" if d == "U" else r"[0-9A-Fa-f]{1,4}", body[i + 2:i + 10])
            if m and int(m.group(), 16) < 0x110000:
                out.append(chr(int(m.group(), 16)))
                i += 2 + len(m.group())
            else:
                out.append("\\" + d)
                i += 2
        elif d in "01234567":
            m = re.match(r"[0-7]{1,3}", body[i + 1:i + 4])
            assert m is not None
            out.append(chr(int(m.group(), 8) & 0xFF))
            i += 1 + len(m.group())
        elif d == "c" and i + 2 < n:
            out.append(chr(ord(body[i + 2]) & 0x1F))
            i += 3
        else:
            out.append("\\" + d)
            i += 2
    return "".join(out)


def _unescape_bare(text: str) -> str:
    """An unquoted word's text with its backslashes removed (``c\\url`` is ``curl``)."""
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _unescape_double(text: str) -> str:
    """A double-quoted stretch with bash's escapes there (``\\$ \\` \\" \\\\`` and line joins) removed."""
    if "\\" not in text:
        return text
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def printf_output(args: list[str]) -> str:
    """What ``printf FORMAT ARGS…`` writes, for the ``%s``/``%b``/``%c``/``%%`` formats (others kept as written)."""
    if not args:
        return ""
    fmt, rest = _decode_ansi_c(args[0]), list(args[1:])
    out: list[str] = []
    first = True
    while first or rest:
        first = False
        used = False
        i = 0
        while i < len(fmt):
            c = fmt[i]
            if c == "%" and i + 1 < len(fmt):
                k = fmt[i + 1]
                if k == "%":
                    out.append("%")
                elif k in "sbdc":
                    v = rest.pop(0) if rest else ""
                    used = True
                    out.append(_decode_ansi_c(v) if k == "b" else v[:1] if k == "c" else v)
                else:
                    out.append(fmt[i:i + 2])
                i += 2
            else:
                out.append(c)
                i += 1
            if sum(len(x) for x in out) > MAX_WORD:
                raise ReadLimit("word past its bound")
        if not used:
            break
    return "".join(out)


def _join(base: str | None, path: str) -> str:
    """``path`` seen from folder ``base`` (``None``: the session's folder; ``""``: unknown, and so is the result)."""
    if path.startswith(("/", "~")) or base is None:
        return os.path.normpath(path)
    if base == "":
        return ""
    return os.path.normpath(os.path.join(base, path))


class _Reader:
    """One reading (see :func:`read_command`); the state a shell keeps while it runs the command."""

    def __init__(self, reading: Reading) -> None:
        self.r = reading
        self.vars: dict[str, tuple[str, bool]] = {"HOME": ("~", True)}
        self.cwd: str | None = None
        self.nodes = 0
        self.pipelines = 0
        self.downloads: set[str] = set()
        self.lines: list[list[Cmd]] = []
        self.functions: set[str] = set()
        self.in_error = 0
        self.chars = 0
        self.parsed = 0

    # -- bounds ---------------------------------------------------------------------------------

    def tick(self) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ReadLimit("too many syntax nodes")

    # -- words ----------------------------------------------------------------------------------

    def text(self, node: Any) -> str:
        return str(node.text.decode("utf-8", "surrogateescape"))

    def word(self, node: Any, depth: int) -> tuple[str, bool]:
        """The value of one word node, and whether it is known."""
        self.tick()
        t = node.type
        if t in ("word", "number", "special_variable_name", "variable_name", "extglob_pattern", "regex",
                 "heredoc_start", "file_descriptor"):
            return _unescape_bare(self.text(node)), True
        if t == "raw_string":
            return self.text(node)[1:-1], True
        if t == "ansi_c_string":
            return _decode_ansi_c(self.text(node)[2:-1]), True
        if t in ("string", "translated_string"):
            parts: list[str] = []
            exact = True
            for c in node.children:
                if c.type in ('"', '$"'):
                    continue
                if c.type == "string_content":
                    parts.append(_unescape_double(self.text(c)))
                else:
                    v, e = self.word(c, depth)
                    parts.append(v)
                    exact = exact and e
            return self._bounded("".join(parts)), exact
        if t == "concatenation":
            parts, exact = [], True
            for c in node.children:
                v, e = self.word(c, depth)
                parts.append(v)
                exact = exact and e
            return self._bounded("".join(parts)), exact
        if t == "simple_expansion":
            names = [c for c in node.children if c.type in ("variable_name", "special_variable_name")]
            if len(names) == 1 and names[0].type == "variable_name":
                return self.lookup(self.text(names[0]), self.text(node))
            return self.text(node), False
        if t == "expansion":
            return self.expansion(node)
        if t == "command_substitution":
            return self.substitution(node, depth)
        if t == "process_substitution":
            self.statements(node.children, depth)
            return "/dev/fd/63", False
        if t == "string_content":
            return _unescape_double(self.text(node)), True
        # arithmetic, brace expressions, globs built at run time...: not known.
        for c in node.children:
            if c.type in ("command_substitution", "process_substitution"):
                self.word(c, depth)
        return self.text(node), False

    def _bounded(self, s: str) -> str:
        if len(s) > MAX_WORD:
            raise ReadLimit("word past its bound")
        return s

    def lookup(self, name: str, raw: str) -> tuple[str, bool]:
        if name == "PWD":
            return (self.cwd if self.cwd else "$PWD"), self.cwd != ""
        v = self.vars.get(name)
        return v if v is not None else (raw, False)

    def expansion(self, node: Any) -> tuple[str, bool]:
        raw = self.text(node)
        kids = [c for c in node.children if c.type not in ("${", "}")]
        if kids and kids[0].type == "!":
            return raw, False  # ${!V}: indirection, known only at run time
        if not kids or kids[0].type != "variable_name":
            return raw, False
        value, exact = self.lookup(self.text(kids[0]), raw)
        rest = kids[1:]
        if not rest:
            return value, exact
        op = self.text(rest[0])
        arg = "".join(self.word(c, 0)[0] for c in rest[1:])
        if op in (":-", "-", ":=", "="):
            return (value, exact) if exact and (value or op in ("-", "=")) else (arg, True)
        if not exact:
            return raw, False
        if op in ("%", "%%", "#", "##") and not any(ch in arg for ch in "*?["):
            if op.startswith("%") and value.endswith(arg):
                return (value[: len(value) - len(arg)] if arg else value) or ("~" if value == "~" else ""), True
            if op.startswith("#") and value.startswith(arg):
                return value[len(arg):], True
            return value, True
        if op in (":+", "+"):
            return (arg if value else ""), True
        return raw, False

    def substitution(self, node: Any, depth: int) -> tuple[str, bool]:
        """``$(…)``: its commands are read (they run); its output when it is known."""
        start = len(self.r.commands)
        self.statements(node.children, depth)
        inner = self.r.commands[start:]
        if len(inner) == 1:
            c = inner[0]
            if c.name == "pwd" and not c.args:
                return (c.cwd if c.cwd else "$PWD"), c.cwd != ""
            if c.name == "echo" and all(c.args_exact):
                args = [a for a in c.args if a not in ("-n", "-e", "-E")]
                return " ".join(args), True
            if c.name == "printf" and c.args and all(c.args_exact):
                return printf_output(c.args).rstrip("\n"), True
        return self.text(node), False

    # -- statements -----------------------------------------------------------------------------

    def statements(self, nodes: Any, depth: int) -> None:
        for n in nodes:
            self.statement(n, depth)

    def statement(self, node: Any, depth: int, prev: Cmd | None = None, line: list[Cmd] | None = None) -> Cmd | None:
        """Read one statement; the last simple command it ran (what a following ``|`` reads from)."""
        self.tick()
        t = node.type
        if t == "command":
            return self.command(node, depth, prev, line)
        if t == "pipeline":
            stage_line: list[Cmd] = []
            self.lines.append(stage_line)
            last = prev
            for c in node.children:
                if c.type in ("|", "|&"):
                    continue
                last = self.statement(c, depth, last, stage_line)
            return last
        if t == "redirected_statement":
            return self.redirected(node, depth, prev, line)
        if t == "variable_assignment":
            self.assign(node, depth)
            return None
        if t == "declaration_command":
            for c in node.children:
                if c.type == "variable_assignment":
                    self.assign(c, depth)
            return None
        if t == "function_definition":
            for c in node.children:
                if c.type == "word":
                    self.functions.add(self.text(c))
            # Its body may run whenever the function is called: read it as if it ran here.
            self.statements([c for c in node.children if c.type not in ("word", "(", ")", "function")], depth)
            return None
        if t == "list":
            # a && b, a || b: each side runs in order; a cd on the left applies on the right.
            self.statements(node.children, depth)
            return None
        if t in ("comment", ";", "&", "&&", "||", "\n", ";;", "&;", ";&", ";;&"):
            return None
        if t in ("for_statement", "c_style_for_statement", "select_statement"):
            for c in node.children:
                if c.type == "variable_name":
                    self.vars[self.text(c)] = ("$" + self.text(c), False)
        # subshell, compound statement, if, while, case, test, negation, ERROR...: every statement inside.
        if t == "ERROR":
            self.in_error += 1
            try:
                return self._inside(node, depth, prev, line)
            finally:
                self.in_error -= 1
        return self._inside(node, depth, prev, line)

    def _inside(self, node: Any, depth: int, prev: Cmd | None, line: list[Cmd] | None) -> Cmd | None:
        last = None
        for c in node.children:
            if c.type in _WORD_TYPES:
                self.word(c, depth)  # a substitution inside a test or a for list still runs
            else:
                r = self.statement(c, depth, prev, line)
                last = r or last
        return last

    def assign(self, node: Any, depth: int) -> None:
        name = None
        value: tuple[str, bool] = ("", True)
        for c in node.children:
            if c.type == "variable_name" and name is None:
                name = self.text(c)
            elif c.type not in ("=", "+=", "variable_name", "subscript"):
                value = self.word(c, depth)
        if name is not None:
            self.vars[name] = value

    def redirected(self, node: Any, depth: int, prev: Cmd | None, line: list[Cmd] | None) -> Cmd | None:
        kids = node.children
        body = kids[0] if kids and kids[0].type not in _REDIRECTS else None
        last = self.statement(body, depth, prev, line) if body is not None else None
        target = last
        for r in kids[1:] if body is not None else kids:
            if r.type == "heredoc_redirect":
                last = self.heredoc(r, depth, target, line) or last
            elif r.type in _REDIRECTS:
                self.redirect(r, depth, target)
            else:
                last = self.statement(r, depth, last, line) or last
        return last

    def redirect(self, node: Any, depth: int, cmd: Cmd | None) -> None:
        op, target = "", ""
        for c in node.children:
            if c.type in ("file_descriptor",):
                continue
            if not c.is_named:
                op += c.type
            else:
                target = self.word(c, depth)[0]
        if node.type == "herestring_redirect":
            if cmd is not None:
                cmd.stdin = target
            return
        if cmd is not None:
            cmd.redirects.append((op, target))
            if op in (">", ">>", ">|", "&>") and cmd.name in FETCHERS:
                self.downloads.add(_join(cmd.cwd, target))

    def heredoc(self, node: Any, depth: int, cmd: Cmd | None, line: list[Cmd] | None) -> Cmd | None:
        body = "".join(self.text(c) for c in node.children if c.type == "heredoc_body")
        if cmd is not None:
            cmd.stdin = body
            self.stdin_code(cmd, depth)
        # What follows the here-doc's word on its line (tree-sitter puts it inside the redirect).
        last = cmd
        after = [c for c in node.children if c.type not in ("<<", "<<-", "heredoc_start", "heredoc_body",
                                                              "heredoc_end", "heredoc_content")]
        piped = False
        for c in after:
            if c.type in _REDIRECTS:
                self.redirect(c, depth, cmd)
            elif c.type in ("|", "|&"):
                piped = True
            elif c.type in ("&&", "||", ";", "&"):
                piped = False
            elif c.type == "pipeline":
                stage_line = line if line is not None else cmd.line if cmd is not None else []
                lp: Cmd | None = last
                for s in c.children:
                    if s.type in ("|", "|&"):
                        continue
                    lp = self.statement(s, depth, lp, stage_line)
                last = lp
            else:
                last = self.statement(c, depth, last if piped else None, line) or last
        return last

    # -- simple commands ------------------------------------------------------------------------

    def command(self, node: Any, depth: int, prev: Cmd | None, line: list[Cmd] | None) -> Cmd | None:
        words: list[str] = []
        exact: list[bool] = []
        env: dict[str, tuple[str, bool]] = {}
        redirects: list[Any] = []
        seen_name = False
        for c in node.children:
            t = c.type
            if t == "variable_assignment" and not seen_name:
                name = next((self.text(k) for k in c.children if k.type == "variable_name"), None)
                vals = [self.word(k, depth) for k in c.children if k.type not in ("variable_name", "=", "+=")]
                if name is not None:
                    env[name] = vals[0] if vals else ("", True)
                continue
            if t in _REDIRECTS:
                redirects.append(c)
                continue
            if t == "command_name":
                seen_name = True
                for k in c.children:
                    self.add_word(k, depth, words, exact)
                continue
            if t in _WORD_TYPES:
                self.add_word(c, depth, words, exact)
        if not words:
            for k, v in env.items():  # A=1 with nothing else: an assignment that lasts
                self.vars[k] = v
            return None
        if len(self.r.commands) >= MAX_COMMANDS:
            raise ReadLimit("too many commands")
        if line is None:
            line = []
            self.lines.append(line)
        cmd = Cmd(words, exact, self.cwd, self.pipelines)
        cmd.prev = prev
        cmd.line = line
        line.append(cmd)
        self.r.commands.append(cmd)
        for r in redirects:
            if r.type == "heredoc_redirect":
                self.heredoc(r, depth, cmd, line)
            else:
                self.redirect(r, depth, cmd)
        self.run(cmd, words, exact, depth)
        return cmd

    def add_word(self, node: Any, depth: int, words: list[str], exact: list[bool]) -> None:
        value, known = self.word(node, depth)
        self.chars += len(value)
        if self.chars > MAX_WORDS_TOTAL:
            raise ReadLimit("words past their bound")
        # An unquoted expansion is split on blanks: X="rm -rf ~"; $X runs rm.
        if known and node.type in ("simple_expansion", "expansion", "command_substitution", "concatenation") \
                and any(ch in value for ch in " \t\n"):
            for w in value.split():
                words.append(w)
                exact.append(True)
            return
        words.append(value)
        exact.append(known)

    def run(self, cmd: Cmd, words: list[str], exact: list[bool], depth: int) -> None:
        """What running ``words`` does: its program, and the code it runs in turn."""
        i, n = 0, len(words)
        in_env = False
        while i < n:
            if not exact[i]:
                # In a text the parser could not read whole (often not bash at all: code of another
                # language a tool takes as its input), only a name that is plainly an expansion counts.
                if not self.in_error or _PLAIN_EXPANSION.match(words[i]):
                    self.dynamic(f"a command name built at run time ({words[i][:40]})")
                return
            w = words[i]
            base = os.path.basename(w) if "/" in w else w
            if in_env and _ASSIGN.fullmatch(w):
                i += 1
                continue
            if base in _WRAPPERS:
                start = i
                in_env = base == "env"
                i += 1
                while i < n and words[i].startswith("-") and len(words[i]) > 1:
                    i += 2 if words[i] in _WRAPPER_VALUE_OPTS and i + 1 < n else 1
                while in_env and i < n and _ASSIGN.fullmatch(words[i]):
                    i += 1
                i += _WRAPPER_OPERANDS.get(base, 0)
                if i >= n:  # `env`, `sudo -l`: the wrapper runs nothing else, it is the program
                    cmd.name, cmd.path = base, w
                    cmd.args, cmd.args_exact = words[start + 1:], exact[start + 1:]
                    return
                continue
            cmd.name = base
            cmd.path = w
            cmd.args = words[i + 1:]
            cmd.args_exact = exact[i + 1:]
            self.program(cmd, depth)
            return

    def dynamic(self, why: str) -> None:
        if why not in self.r.dynamic:
            self.r.dynamic.append(why)

    def program(self, cmd: Cmd, depth: int) -> None:
        name, args, known = cmd.name, cmd.args, cmd.args_exact
        if name in ("cd", "pushd"):
            target = next((a for a in args if not a.startswith("-") or a == "-"), None)
            k = args.index(target) if target is not None else -1
            if target is None:
                self.cwd = "~"
            elif target == "-" or not known[k]:
                self.cwd = ""
            else:
                self.cwd = _join(self.cwd, target)
            return
        if name == "popd":
            self.cwd = ""
            return
        if name in ("eval", "trap", "alias", "watch"):
            if name == "trap":
                args = args[:1]
            elif name == "alias":
                args = [a.partition("=")[2] for a in args if "=" in a]
                known = [True] * len(args)
            elif name == "watch":
                args = [a for a in args if not a.startswith("-")]
            if not args:
                return
            if not all(known[: len(args)]):
                self.dynamic(f"{name} of a text built at run time")
                return
            self.reread(" ".join(args), depth, cmd)
            return
        if name in SHELLS:
            self.shell(cmd, depth)
            return
        if name in ("source", "."):
            if args:
                self.exec_file(cmd, args[0], known[0])
            return
        if _PYTHON.fullmatch(name) or name in _NODE or name in _PERL:
            self.interpreter(cmd, depth)
            return
        if name == "xargs":
            self.xargs(cmd, depth)
            return
        if name in FETCHERS:
            self.download(cmd)
            return
        if "/" in cmd.path:
            self.exec_file(cmd, cmd.path, True)

    def reread(self, text: str, depth: int, cmd: Cmd) -> None:
        """Read ``text`` as commands run inside ``cmd`` (one level deeper)."""
        if depth + 1 > MAX_DEPTH:
            raise ReadLimit("nested past the depth bound")
        source = text.encode("utf-8", "surrogateescape")
        self.parsed += len(source)
        if self.parsed > MAX_PARSED_TOTAL:
            raise ReadLimit("nested text past its bound")
        tree = parse(source)
        saved = self.cwd
        self.cwd = cmd.cwd
        self.statements(tree.root_node.children, depth + 1)
        if cmd.name in ("eval", "source", "."):
            return  # the same shell: its cd lasts
        self.cwd = saved

    def shell(self, cmd: Cmd, depth: int) -> None:
        args, known = cmd.args, cmd.args_exact
        i = 0
        while i < len(args):
            a = args[i]
            if a == "--":
                i += 1
                break
            if a.startswith("-") and len(a) > 1 and not a.startswith("--") and "c" in a[1:]:
                if i + 1 >= len(args):
                    return
                if not known[i + 1]:
                    self.dynamic(f"{cmd.name} -c of a text built at run time")
                    return
                self.reread(args[i + 1], depth, cmd)
                return
            if a.startswith(("-", "+")) and a not in ("-", "-s"):
                i += 2 if a in ("-o", "+o", "-O", "+O") else 1
                continue
            break
        rest = args[i:]
        if rest and rest[0] not in ("-", "-s"):
            self.exec_file(cmd, rest[0], known[i])
            return
        self.stdin_code(cmd, depth)

    def stdin_code(self, cmd: Cmd, depth: int) -> None:
        """The code an interpreter reading standard input runs: a here-doc, or what is piped in."""
        language = "sh" if cmd.name in SHELLS else "python" if _PYTHON.fullmatch(cmd.name) else (
            "node" if cmd.name in _NODE else "perl" if cmd.name in _PERL else "")
        if not language:
            return
        if language != "sh" and any(not a.startswith("-") for a in cmd.args if a != "-"):
            return  # it runs a file; its input is data
        if cmd.stdin is not None:
            self.code(language, cmd.stdin, depth, cmd)
            return
        p = cmd.prev
        if p is None:
            return
        if p.name in _LITERAL_PRODUCERS and all(p.args_exact):
            text = printf_output(p.args) if p.name == "printf" else " ".join(
                a for a in p.args if a not in ("-n", "-e", "-E"))
            self.code(language, text, depth, cmd)
        elif p.name in FETCHERS:
            self.r.fetch_exec.append(f"{p.name} piped into {cmd.name}")
        elif p.name in _FILE_PRODUCERS and p.args:
            for a in p.args:
                if _join(p.cwd, a) in self.downloads:
                    self.r.fetch_exec.append(f"a downloaded file piped into {cmd.name}")
        elif p.stdin is not None and p.name in _FILE_PRODUCERS:
            self.code(language, p.stdin, depth, cmd)
        else:
            self.dynamic(f"the output of {p.name or 'a command built at run time'} piped into {cmd.name}")

    def code(self, language: str, text: str, depth: int, cmd: Cmd) -> None:
        if language == "sh":
            self.reread(text, depth, cmd)
        else:
            self.r.scripts.append((language, text, cmd.cwd))

    def interpreter(self, cmd: Cmd, depth: int) -> None:
        args, known = cmd.args, cmd.args_exact
        language = "python" if _PYTHON.fullmatch(cmd.name) else "node" if cmd.name in _NODE else "perl"
        flags = {"python": ("-c",), "node": ("-e", "--eval", "-p", "--print"), "perl": ("-e", "-E", "-r")}[language]
        i = 0
        while i < len(args):
            a = args[i]
            takes = a in flags or (language == "perl" and re.fullmatch(r"-[a-zA-Z]*[eE]", a) is not None) or (
                language == "python" and re.fullmatch(r"-[a-zA-Z]*c", a) is not None)
            if takes:
                if i + 1 >= len(args):
                    return
                if not known[i + 1]:
                    self.dynamic(f"{cmd.name} code built at run time")
                    return
                self.r.scripts.append((language, args[i + 1], cmd.cwd))
                return
            if a in ("-m", "-W", "-X", "-I", "-M", "-r", "--require", "-x") and language != "perl" and i + 1 < len(args):
                if a == "-m":
                    return  # a module: a file of its own, not code from the command line
                i += 2
                continue
            if a.startswith("-") and a != "-":
                i += 1
                continue
            if a == "-":
                break
            self.exec_file(cmd, a, known[i])
            return
        self.stdin_code(cmd, depth)

    def xargs(self, cmd: Cmd, depth: int) -> None:
        args, known = cmd.args, cmd.args_exact
        i = 0
        value_opts = ("-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--delimiter", "--max-args", "--max-procs")
        while i < len(args) and args[i].startswith("-"):
            i += 2 if args[i] in value_opts else 1
        words, exact = list(args[i:]) or ["echo"], list(known[i:]) or [True]
        p = cmd.prev
        if p is not None and p.name == "echo" and all(p.args_exact):
            words += [a for a in p.args if a not in ("-n", "-e", "-E")]
            exact += [True] * (len(words) - len(exact))
        elif p is not None and p.name == "printf" and all(p.args_exact):
            more = printf_output(p.args).split()
            words += more
            exact += [True] * len(more)
        else:
            words.append("$XARGS_INPUT")
            exact.append(False)
        inner = Cmd(words, exact, cmd.cwd, cmd.pipeline)
        self.r.commands.append(inner)
        self.lines.append([inner])
        self.run(inner, words, exact, depth)

    def download(self, cmd: Cmd) -> None:
        args = cmd.args
        urls = [a for a in args if re.match(r"(?:https?|ftp)://", a)]
        out: str | None = None
        remote_name = False
        for k, a in enumerate(args):
            nxt = args[k + 1] if k + 1 < len(args) else None
            if (cmd.name == "curl" and a in ("-o", "--output")) or (cmd.name == "wget" and a in ("-O", "--output-document")):
                out = nxt
            elif cmd.name == "curl" and a.startswith("-o") and len(a) > 2 and not a.startswith("--"):
                out = a[2:]
            elif cmd.name == "wget" and a.startswith("--output-document="):
                out = a.partition("=")[2]
            elif cmd.name == "curl" and (a in ("-O", "--remote-name", "--remote-name-all") or
                                         re.fullmatch(r"-[a-zA-Z]*O[a-zA-Z]*", a)):
                remote_name = True
        if cmd.name == "wget" and out is None:
            remote_name = True
        if out and out != "-":
            self.downloads.add(_join(cmd.cwd, out))
        if remote_name:
            for u in urls:
                name = u.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
                if name:
                    self.downloads.add(_join(cmd.cwd, name))

    def exec_file(self, cmd: Cmd, path: str, known: bool) -> None:
        if not known:
            return
        if _join(cmd.cwd, path) in self.downloads:
            self.r.fetch_exec.append(f"{cmd.name} runs a file downloaded earlier in the command")


_REDIRECTS = frozenset(("file_redirect", "heredoc_redirect", "herestring_redirect"))
_WORD_TYPES = frozenset(("word", "string", "raw_string", "ansi_c_string", "translated_string", "concatenation",
                         "simple_expansion", "expansion", "command_substitution", "process_substitution", "number",
                         "arithmetic_expansion", "brace_expression"))


def read_command(command: str, on_limit: Callable[[str], None] | None = None) -> Reading:
    """Read ``command`` as a shell would (see the module docstring); never raises.

    :param on_limit: called with the reason when the reading stops at a bound
        (defaults to :func:`report_limits_to`'s reporter, else the module's logger;
        never with the command's text).
    """
    reading = Reading()
    reader = _Reader(reading)
    try:
        tree = parse(command.encode("utf-8", "surrogateescape"))
        # A text that is not all bash (a parse error anywhere): see _Reader.run.
        reader.in_error = int(tree.root_node.has_error)
        reader.statements(tree.root_node.children, 0)
    except ReadLimit as err:
        reading.failed = str(err)
    except (RecursionError, MemoryError, ValueError, UnicodeError) as err:
        reading.failed = f"the reader failed ({type(err).__name__})"
    if reading.failed:
        (on_limit or _log_limit)(reading.failed)
    reading.text = "\n".join(
        " | ".join(" ".join(_quote(w) for w in c.words) + "".join(f" {op}{_quote(t)}" for op, t in c.redirects)
                   for c in line)
        for line in reader.lines if line)
    return reading


def _log_limit(reason: str) -> None:
    line = f"shell reading stopped ({reason}): the command is judged as dynamic execution"
    for reporter in _REPORTER:
        reporter(line)
        return
    log.warning(line)


__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_PARSE_STEPS", "SHELLS", "Cmd", "ReadLimit", "Reading", "parse",
           "printf_output", "read_command", "report_limits_to"]
