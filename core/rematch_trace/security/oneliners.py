"""What an interpreter's one-liner does: Python read with :mod:`ast`, Perl and Node by their tokens.

``python -c``, ``perl -e``, ``node -e`` (and code piped or here-doc'd into
them, :mod:`rematch_trace.security.shell`) are programs of their own. Their
features are the shell's: ``network_egress`` for a network call,
``outbound_upload`` when it sends data, ``credential_in_args`` when what it
reads from the environment is a credential (or the whole environment) and it
reaches the network, ``remote_code_fetch_exec`` for code fetched and run
(``exec(urlopen(…).read())``), ``destructive_command`` and the deletion
features for a recursive delete (``shutil.rmtree``, Perl's ``rmtree``,
Node's ``rmSync(…, {recursive})``) judged like ``rm -rf``'s target, and
``dynamic_execution`` for code built at run time (``exec(b64decode(…))``).
A command string handed to a shell (``os.system``, ``subprocess`` with a
literal, Perl's ``system``/backticks, Node's ``execSync``) is read as a shell
command again through ``shell``.

Python is parsed (a program that does not parse does not run; one this
Python cannot parse but that names a risky call is taken as dynamic
execution). Perl and Node are judged by a conservative token check: a risky
word present is enough.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

#: The largest one-liner parsed.
MAX_CODE = 64 * 1024

ShellReader = Callable[[str], set[str]]
Judge = Callable[[str], str | None]

_CRED_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|AUTH", re.I)
_NETWORK_MODULES = ("urllib", "requests", "httpx", "http.client", "socket", "aiohttp", "urllib3", "ftplib",
                    "smtplib", "paramiko", "pycurl", "websocket")
_UPLOAD_METHODS = frozenset(("post", "put", "patch", "send", "sendall", "sendto", "sendfile", "storbinary",
                             "storlines", "sendmail", "send_message", "upload_file", "put_object"))
_SHELL_CALLS = frozenset(("os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
                          "subprocess.check_output", "subprocess.Popen", "subprocess.getoutput",
                          "subprocess.getstatusoutput", "pty.spawn", "commands.getoutput"))
_EXEC_CALLS = frozenset(("exec", "eval", "compile", "builtins.exec", "builtins.eval", "runpy.run_path"))
_RMTREE = frozenset(("shutil.rmtree", "os.removedirs", "distutils.dir_util.remove_tree"))
_RISKY_WORDS = re.compile(r"urlopen|requests|httpx|socket|http\.client|rmtree|system|subprocess|popen|exec|eval|"
                          r"remove|unlink|environ|getenv|b64decode|marshal|pickle|__import__", re.I)


class _Python:
    """One walk of a parsed program."""

    def __init__(self, tree: ast.AST, shell: ShellReader, judge: Judge) -> None:
        self.shell = shell
        self.judge = judge
        self.found: set[str] = set()
        self.aliases: dict[str, str] = {}
        self.env_secret = False
        self.network = False
        nodes = list(ast.walk(tree))
        for n in nodes:
            if isinstance(n, ast.Import):
                for a in n.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(n, ast.ImportFrom) and n.module:
                for a in n.names:
                    self.aliases[a.asname or a.name] = f"{n.module}.{a.name}"
        for n in nodes:
            if isinstance(n, ast.Call):
                self.call(n)
            elif isinstance(n, ast.Subscript) and self.environ(n):
                self.env_secret = True
        if self.network:
            self.found.add("network_egress")
            if self.env_secret:
                self.found.add("credential_in_args")

    def name(self, node: ast.AST) -> str:
        """The dotted name of an expression (``u.urlopen`` with ``import urllib.request as u``), aliases resolved."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call):  # __import__("os").system, Path("x").rmdir
            inner = self.name(node.func)
            if inner == "__import__" and node.args and isinstance(node.args[0], ast.Constant):
                parts.append(str(node.args[0].value))
                return ".".join(reversed(parts))
            parts.append(inner + "()")
            return ".".join(reversed(parts))
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
        return ".".join(reversed(parts))

    def environ(self, node: ast.AST) -> bool:
        """Whether ``node`` reads a credential from the environment (``os.environ["GITHUB_TOKEN"]``)."""
        if isinstance(node, ast.Subscript) and self.name(node.value).endswith("os.environ"):
            key = node.slice
            return not isinstance(key, ast.Constant) or bool(_CRED_NAME.search(str(key.value)))
        return False

    def literal(self, node: ast.AST) -> str | None:
        """A string an expression is known to be (``"~"``, ``os.path.expanduser("~")``, ``Path.home()``...)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return None
        if isinstance(node, ast.Call):
            f = self.name(node.func)
            args = [self.literal(a) for a in node.args]
            if f in ("os.path.expanduser", "pathlib.Path", "Path", "os.path.abspath", "os.path.realpath", "str",
                     "os.path.normpath") and len(args) == 1 and args[0] is not None:
                return args[0]
            if f in ("pathlib.Path.home", "Path.home", "os.path.expanduser") and not args:
                return "~"
            if f in ("os.getcwd", "pathlib.Path.cwd", "Path.cwd"):
                return "."
            if f in ("os.getenv", "os.environ.get") and args and args[0] == "HOME":
                return "~"
            if f in ("os.path.join",) and args and all(a is not None for a in args):
                import os.path

                return os.path.join(*[a for a in args if a is not None])
        if isinstance(node, ast.Subscript) and self.name(node.value).endswith("os.environ") and isinstance(
                node.slice, ast.Constant) and node.slice.value == "HOME":
            return "~"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # Path.home() / ".ssh"
            left, right = self.literal(node.left), self.literal(node.right)
            if left is not None and right is not None:
                return left.rstrip("/") + "/" + right
        return None

    def _fetches(self, n: ast.Call) -> bool:
        """Whether call ``n`` reads from the network (a network module's function, ``urlopen``)."""
        f = self.name(n.func)
        return f.startswith(_NETWORK_MODULES) or "urlopen" in f or f.endswith("urlretrieve")

    def call(self, n: ast.Call) -> None:
        f = self.name(n.func)
        short = f.rsplit(".", 1)[-1]
        if f in ("os.getenv", "os.environ.get", "os.environ.__getitem__") and n.args and (
                not isinstance(n.args[0], ast.Constant) or _CRED_NAME.search(str(n.args[0].value))):
            self.env_secret = True
        if f.startswith(_NETWORK_MODULES) or short in ("urlopen", "urlretrieve", "create_connection"):
            self.network = True
            data = any(k.arg in ("data", "json", "files", "body") for k in n.keywords)
            if short in _UPLOAD_METHODS or data or (short == "urlopen" and len(n.args) > 1):
                self.found.add("outbound_upload")
            if short in ("request", "Request") and n.args and isinstance(n.args[0], ast.Constant) and str(
                    n.args[0].value).upper() in ("POST", "PUT", "PATCH"):
                self.found.add("outbound_upload")
            for a in [*n.args, *(k.value for k in n.keywords)]:
                if self.name(a).endswith("os.environ") or any(
                        isinstance(x, ast.Attribute | ast.Name) and self.name(x).endswith("os.environ")
                        for x in ast.walk(a)):
                    self.env_secret = True
        elif short in _UPLOAD_METHODS and isinstance(n.func, ast.Attribute) and (
                self.network or any(m in f for m in ("sock", "conn", "client", "session"))):
            # conn.request(...), sock.sendall(...): a method of an object the program made from a network module.
            self.found.add("outbound_upload")
        if (f in _EXEC_CALLS or short in ("exec", "eval")) and n.args:  # model.eval() runs no code
            arg = n.args[0]
            text = self.literal(arg)
            if text is not None:
                self.found |= python_features(text, self.shell, self.judge)
            elif any(isinstance(x, ast.Call) and self._fetches(x) for x in ast.walk(arg)):
                self.found |= {"remote_code_fetch_exec", "network_egress"}
            else:
                self.found.add("dynamic_execution")
        if f in _SHELL_CALLS or f.startswith("os.exec") or f.startswith("os.spawn"):
            command: ast.expr | None = n.args[0] if n.args else next(
                (k.value for k in n.keywords if k.arg == "args"), None)
            if isinstance(command, ast.List | ast.Tuple):
                words = [self.literal(e) for e in command.elts]
                if all(w is not None for w in words):
                    import shlex

                    self.found |= self.shell(shlex.join([w for w in words if w is not None]))
                else:
                    self.found.add("dynamic_execution")
            elif command is not None:
                text = self.literal(command)
                if text is None:
                    self.found.add("dynamic_execution")
                else:
                    self.found |= self.shell(text)
        if f in _RMTREE or (short in ("rmtree", "remove_tree")):
            self.found.add("destructive_command")
            target = self.literal(n.args[0]) if n.args else None
            if target is not None:
                feature = self.judge(target)
                if feature:
                    self.found.add(feature)


def python_features(code: str, shell: ShellReader, judge: Judge) -> set[str]:
    """The risk features of a Python program (see the module docstring)."""
    if len(code) > MAX_CODE:
        return {"dynamic_execution"}
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return {"dynamic_execution"} if _RISKY_WORDS.search(code) else set()
    except (RecursionError, MemoryError, ValueError):
        return {"dynamic_execution"}
    try:
        return _Python(tree, shell, judge).found
    except RecursionError:
        return {"dynamic_execution"}


# -- Perl, Node: tokens ---------------------------------------------------------------------------

_PERL_NET = re.compile(r"LWP|HTTP::Tiny|IO::Socket|Net::(?:HTTP|FTP|SMTP)|Mojo::UserAgent|\bgetstore\b|\bget\s*\(")
_PERL_UPLOAD = re.compile(r"->\s*(?:post|put|request|print|send|syswrite)\b|\bPOST\b|\bprint\s+\$\w*sock", re.I)
_PERL_ENV = re.compile(r"\$ENV\s*\{\s*['\"]?\w*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|CREDENTIAL)|%ENV",
                       re.I)
_PERL_SHELL = re.compile(r"\b(?:system|exec)\s*\(?\s*(['\"])((?:(?!\1).)*)\1|`([^`]*)`|\bqx\s*[({/]([^)}/]*)[)}/]",
                         re.S)
_PERL_DYN = re.compile(r"\b(?:system|exec)\b|`|\bqx\b|\beval\b|decode_base64|\bpack\s*\(", re.I)
_PERL_RMTREE = re.compile(r"\b(?:rmtree|remove_tree)\b")
_HOME_TOKEN = re.compile(r"\$ENV\s*\{\s*['\"]?HOME\b|['\"]~/?['\"]|\bglob\s*\(\s*['\"]~|\bhomedir\s*\(|"
                         r"process\.env\.HOME\b|os\.homedir\s*\(|['\"]\$HOME/?['\"]")
_ROOT_TOKEN = re.compile(r"\(\s*['\"]/\*?['\"]|,\s*['\"]/['\"]|\[\s*['\"]/['\"]")
_NODE_NET = re.compile(r"\bfetch\s*\(|\bhttps?\.(?:request|get)\b|\baxios\b|\bXMLHttpRequest\b|\bnet\.connect\b|"
                       r"require\(\s*['\"](?:https?|net|node-fetch|axios|undici)['\"]\s*\)")
_NODE_UPLOAD = re.compile(r"method\s*:\s*['\"](?:POST|PUT|PATCH)|\bbody\s*:|\.write\s*\(|\.post\s*\(|\.put\s*\(|"
                          r"\.send\s*\(", re.I)
_NODE_ENV = re.compile(r"process\.env(?:\.\w*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|CREDENTIAL)"
                       r"|\s*\[|\s*\)|\s*,|\s*$)", re.I)
_NODE_SHELL = re.compile(r"\b(?:execSync|exec|spawnSync|spawn|execFileSync)\s*\(\s*(['\"`])((?:(?!\1).)*)\1", re.S)
_NODE_DYN = re.compile(r"\b(?:execSync|exec|spawnSync|spawn|execFileSync|eval|Function)\s*\(|child_process|"
                       r"Buffer\.from\([^)]*base64|\batob\s*\(")
_NODE_RMTREE = re.compile(r"\b(?:rmSync|rmdirSync|rm|rmdir)\s*\((?=[^;\n]{0,400}?recursive)|\brimraf\b"
                          r"|\bremove(?:Sync)?\s*\(")


def perl_features(code: str, shell: ShellReader, judge: Judge, node: bool = False) -> set[str]:
    """The risk features of a Perl (``node=False``) or Node one-liner, by a conservative token check."""
    if len(code) > MAX_CODE:
        return {"dynamic_execution"}
    found: set[str] = set()
    net, upload, env, shell_re, dyn, rm = (
        (_NODE_NET, _NODE_UPLOAD, _NODE_ENV, _NODE_SHELL, _NODE_DYN, _NODE_RMTREE) if node else
        (_PERL_NET, _PERL_UPLOAD, _PERL_ENV, _PERL_SHELL, _PERL_DYN, _PERL_RMTREE))
    if net.search(code):
        found.add("network_egress")
        if upload.search(code):
            found.add("outbound_upload")
        if env.search(code):
            found.add("credential_in_args")
        if re.search(r"\beval\b|new\s+Function|\bFunction\s*\(", code):
            found.add("remote_code_fetch_exec")
    literal_commands = [next(g for g in m.groups()[1:] if g is not None) if any(m.groups()[1:]) else ""
                        for m in shell_re.finditer(code)]
    for text in literal_commands:
        if text:
            found |= shell(text)
    # Code run that is not a literal command: a shell, eval or decoder fed with something built at run time.
    calls = len(dyn.findall(code))
    if calls > len([t for t in literal_commands if t]) and "remote_code_fetch_exec" not in found:
        found.add("dynamic_execution")
    if rm.search(code):
        found.add("destructive_command")
        if _HOME_TOKEN.search(code):
            found.add("home_deletion")
        elif _ROOT_TOKEN.search(code):
            found.add("root_deletion")
    return found


__all__ = ["MAX_CODE", "perl_features", "python_features"]
