"""Risk features: a closed list of facts about an action, each computed by a rule.

A feature says what an action *does or touches*, not whether it was wrong:
``rm -rf build/`` is a ``destructive_command`` in every session. The list is
closed (:data:`RISK_FEATURES`); each has a one-line description and a severity
(:data:`SEVERITY`, higher is worse) that ``rematch audit`` sorts by.

Rules read the action's original input in memory (it is never stored): for a
shell call the command text, for file calls the paths, for network calls the
URL and method, and for any call every string of the input (``text``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

from rematch_trace.host.casefold import lowered
from rematch_trace.security.deletion import deletion_features
from rematch_trace.security.redact import _trie_pattern
from rematch_trace.security.scan import alt, occurs
from rematch_trace.security.shell import MAX_DEPTH, read_command
from rematch_trace.security.shell_risk import reading_features
from rematch_trace.security.strings import InputStrings

#: The closed list of features, most severe first, each with what it means.
RISK_FEATURES: tuple[tuple[str, str], ...] = (
    ("root_deletion", "deletes the whole file system (rm -rf /, rm -rf /*, find / -delete)"),
    ("home_deletion", "deletes the home folder (rm -rf ~, $HOME, /home/<user>, find ~ -delete)"),
    ("repository_deletion", "deletes the repository or the working folder (rm -rf ., $PWD, the repository's top by path)"),
    ("remote_code_fetch_exec", "downloads code from the network and runs it in the same command (curl … | sh, curl -o f && sh f)"),
    ("dynamic_execution", "runs code the rules cannot read before it runs (${!V}, eval \"$X\", base64 -d | sh)"),
    ("outbound_upload", "sends local data (a file, a form, a body) to a remote host"),
    ("credential_in_args", "a credential, or a variable holding one, appears in the action's arguments"),
    ("write_outside_root", "a file or MCP tool writes a path outside the repository (or the working folder)"),
    ("privilege_escalation", "gains or grants elevated privileges (sudo, su, setuid, sudoers)"),
    ("destructive_command", "deletes or overwrites data irreversibly (rm -rf, mkfs, dd, DROP TABLE)"),
    ("git_history_rewrite", "rewrites or discards git history (force push, reset --hard, rebase, amend)"),
    ("security_bypass", "switches off a safety check (--no-verify, TLS verification off, setenforce 0)"),
    ("persistence", "installs something that runs again later (cron, shell rc files, services, authorized_keys)"),
    ("agent_config_change", "writes the agent's own instructions or settings (CLAUDE.md, AGENTS.md, .claude/, MCP config)"),
    ("sensitive_file_reference", "names a file that usually holds secrets (.env, ~/.ssh, ~/.aws/credentials, *.pem)"),
    ("permission_weakening", "opens file permissions to everyone (chmod 777, a+w)"),
    ("network_egress", "contacts a network host (a fetch, curl, wget, ssh, git push)"),
)

#: Feature names, in severity order (most severe first).
FEATURE_NAMES: tuple[str, ...] = tuple(name for name, _ in RISK_FEATURES)
#: Severity of each feature: higher is more severe.
SEVERITY: dict[str, int] = {name: len(FEATURE_NAMES) - i for i, name in enumerate(FEATURE_NAMES)}


def severity(features: Iterable[str]) -> int:
    """The severity of a set of features: that of the most severe one (0 for none)."""
    return max((SEVERITY.get(f, 0) for f in features), default=0)


def sort_features(features: Iterable[str]) -> list[str]:
    """Features deduplicated, most severe first."""
    unique = set(features)
    if len(unique) < 2:  # most actions have none or one: nothing to order
        return list(unique)
    return sorted(unique, key=_severity_key)


def _severity_key(feature: str) -> int:
    return -SEVERITY.get(feature, 0)


_I = re.I

# A name starts the text, follows a separator, or follows "@" or "<" (curl's
# -d @file, -F f=@file and -F f=<file read the file and send its contents).
_SENSITIVE = re.compile(
    r"(?:^|[\s\"'=:/\\(@<])(?:"
    r"\.env(?!\.(?:example|sample|template|dist|defaults?)(?=$|[\s\"'`;|&)/\\,:]))(?:\.[A-Za-z0-9_.-]+)?"
    r"|\.ssh(?:/[^\s\"'`;|&)]*)?|id_(?:rsa|dsa|ecdsa|ed25519)\b|authorized_keys|known_hosts"
    r"|\.aws(?:/(?:credentials|config))?|\.azure/?|\.config/gcloud|application_default_credentials\.json"
    r"|\.kube/config|kubeconfig|\.docker/config\.json|\.netrc|_netrc|\.pgpass|\.my\.cnf|\.npmrc|\.pypirc"
    r"|\.git-credentials|\.gnupg(?:/[^\s\"'`;|&)]*)?|\.password-store|keychain|\.vault-token|\.terraformrc|terraform\.tfstate"
    r"|/etc/shadow|/etc/sudoers|/etc/gshadow|/etc/master\.passwd"
    r"|[\w.-]*credentials?\.json|service[-_]?account[\w.-]*\.json|client_secrets?\.json|secrets?\.(?:ya?ml|json|toml)"
    r"|[\w.-]+\.(?:pem|key|p12|pfx|jks|keystore|ppk|kdbx|asc)"
    r"|\.bash_history|\.zsh_history|Login Data|Cookies\.binarycookies|cookies\.sqlite"
    r")(?=$|[\s\"'`;|&)/\\,:])",
    _I,
)
_FETCHERS = r"(?:curl|wget|fetch|http|xh|iwr|irm|Invoke-WebRequest|Invoke-RestMethod)"
_FETCH_WORDS = ("curl", "wget", "fetch", "http", "xh", "iwr", "irm", "invoke-")
# The unbounded stretches the rules scan: the rest of one command (up to a
# separator), a run of flags, a run of any words.
_SEG = r"[^\n;|&]*"
_FLAGS = r"(?:-\S+\s+)*"
_WORDS = r"(?:\S+\s+)*"

# Each rule is a tuple of alternatives (see rematch_trace.security.scan): a
# feature is found when any alternative matches. Patterns that backtracked over
# a run inside one match ("-[a-z]*r[a-z]*\s+", "\s*=?\s*") are written with
# lookaheads and possessive repeats that match the same texts in linear time.
_REMOTE_EXEC = (
    alt(r"\b" + _FETCHERS + r"\b", _FETCH_WORDS, flags=_I, stretch=r"[^|;&\n]*", needs="|",
        tail=r"\|\s*(?:(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+\S+\s+)*(?:ba|z|da|k|fi)?sh\b"
             r"|(?:sudo\s+)?(?:python[0-9.]*|perl|ruby|node|php|iex|pwsh|powershell)\b)"),
    alt(r"(?:ba|z)?sh\s+", ("sh",), back=2, flags=_I, stretch=r"(?:-\w+\s+)*", tail=r"<\(\s*" + _FETCHERS + r"\b",
        needs="<("),
    alt(r"(?:ba|z)?sh\s+-c\s+[\"']?\$\(\s*" + _FETCHERS + r"\b", ("sh",), back=2, flags=_I, needs="$("),
    alt(r"\b(?:eval|source|\.)\s+[\"']?\$\(\s*" + _FETCHERS + r"\b", ("eval", "source", "."), flags=_I, needs="$("),
    alt(r"\biex\s*+(?:\(\s*+)?(?:(?:\(\s*+)?New-Object\s+Net\.WebClient\)?\.DownloadString"
        r"|iwr|irm|Invoke-WebRequest|Invoke-RestMethod)", ("iex",), flags=_I),
)
_UPLOAD = (
    alt(r"\bcurl\b", ("curl",), flags=_I, stretch=_SEG,
        tail=r"(?:\s(?:-d|--data(?:-binary|-raw|-urlencode)?|-F|--form|-T|--upload-file|--json)[\s=]"
             r"|\s-X\s*(?:POST|PUT|PATCH)\b|\s--request\s+(?:POST|PUT|PATCH)\b)"),
    alt(r"\bwget\b", ("wget",), flags=_I, stretch=_SEG, tail=r"--(?:post|put|body)-(?:file|data)"),
    # scp/rsync upload when the remote (host:path) is the destination, the last argument.
    alt(r"\b(?:scp|rsync)\b", ("scp", "rsync"), flags=_I, stretch=_SEG,
        tail=r"\s(?:[\w.-]+@)?[\w.-]+:(?!//)[^\s;|&]*\s*(?:$|[;|&\n])"),
    alt(r"\b(?:nc|ncat|netcat|socat)\b", ("nc", "netcat", "socat"), flags=_I, stretch=_SEG,
        tail=r"(?:<|\s\S+\s+\d+\s*<)"),
    alt(r"\|\s*(?:nc|ncat|netcat)\s", ("|",), flags=_I),
    # bash's network redirections: > /dev/tcp/HOST/PORT sends the output to that host.
    alt(r"/dev/(?:tcp|udp)/", ("/dev/tcp/", "/dev/udp/"), flags=_I),
    alt(r"\b(?:aws\s+s3\s+(?:cp|sync|mv)|gsutil\s+(?:-m\s+)?(?:cp|rsync|mv)|gcloud\s+storage\s+cp|azcopy\s+(?:copy|sync)"
        r"|rclone\s+(?:copy|sync|move))\b", ("aws", "gsutil", "gcloud", "azcopy", "rclone"), flags=_I, stretch=_SEG,
        tail=r"\s(?:s3|gs|https?|az|\w+)://?"),
    alt(r"\bInvoke-(?:WebRequest|RestMethod)\b", ("invoke-",), flags=_I, stretch=_SEG, tail=r"-(?:InFile|Body)\b"),
    alt(r"\bgh\s+gist\s+create\b", ("gh",), flags=_I),
)
# A variable (``$GITHUB_TOKEN``, ``${API_KEY}``, ``${TOKEN:-x}``, ``"$TOKEN."``), not a template placeholder
# that reads a member of an object named so (``${token.href}``, ``${token?.value}`` in JavaScript).
_CRED_VAR = re.compile(
    r"\$\{?[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)\b"
    r"(?!\??\.[A-Za-z_$])", _I)
_DESTRUCTIVE = (
    # rm with a flag word holding r (then whitespace), -f… then -…r, --recursive, -rf, -fr.
    alt(r"\brm\s+(?:-(?=[A-Za-z]*?[rR])[A-Za-z]*+\s|-(?=[A-Za-z]*?f)[A-Za-z]*+\s+-[A-Za-z]*?[rR]"
        r"|--recursive\b|-rf\b|-fr\b)", ("rm",), flags=_I),
    alt(r"\brm\s+", ("rm",), flags=_I, stretch=_FLAGS, tail=r"(?:/|~|\*|/\*|~/\*?|\$HOME/?)(?:\s|$)"),
    alt(r"\bfind\b", ("find",), flags=_I, stretch=_SEG, tail=r"(?:\s-delete\b|-exec\s+rm\b)"),
    alt(r"\bmkfs(?:\.\w+)?\b|\bshred\b|\bwipefs\b", ("mkfs", "shred", "wipefs"), flags=_I),
    alt(r"\bdd\b", ("dd",), flags=_I, stretch=_SEG, tail=r"\bof=/dev/"),
    alt(r">\s*/dev/(?:sd|nvme|hd|disk)\w*", (">",), flags=_I),
    alt(r"\btruncate\s+", ("truncate",), flags=_I, stretch=_FLAGS, tail=r"-s\s*0\b"),
    alt(r"\bgit\s+clean\s+", ("git",), flags=_I, stretch=r"(?:-\S*\s+)*", tail=r"-\S*[fdx]"),
    alt(r"\bgit\s+reset\s+", ("git",), flags=_I, stretch=_WORDS, tail=r"--hard\b"),
    alt(r"\bgit\s+checkout\s+(?:-f\s+)?--\s+\.(?:\s|$)", ("git",), flags=_I),
    alt(r"\bgit\s+restore\s+", ("git",), flags=_I, stretch=r"(?:--\S+\s+)*", tail=r"\.(?:\s|$)"),
    alt(r"\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA)|TRUNCATE\s+TABLE)\b|\bDELETE\s+FROM\s+\w+\s*(?:;|$)",
        ("drop", "truncate", "delete"), flags=_I),
    alt(r"\bkubectl\s+delete\b|\bterraform\s+destroy\b|\bdocker\s+(?:system|volume|image)\s+prune\b|\bdropdb\b",
        ("kubectl", "terraform", "docker", "dropdb"), flags=_I),
    alt(r"\bredis-cli\b", ("redis-cli",), flags=_I, stretch=_SEG, tail=r"\bflush(?:all|db)\b"),
    alt(r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:", (":()",), flags=_I),
)
_PRIV = (
    alt(r"(?:^|[\s;&|(`]|\$\()(?:sudo|doas|pkexec|su|runas)(?:\s|$)", ("su", "doas", "pkexec", "runas"), back=2,
        flags=_I),
    alt(r"\bchmod\s+", ("chmod",), flags=_I, stretch=_FLAGS, tail=r"(?:[ugoa]*\+[rwx]*s|[2467][0-7]{3})\b"),
    alt(r"\bsetcap\b|/etc/sudoers|\bvisudo\b|--privileged\b", ("setcap", "/etc/sudoers", "visudo", "--privileged"),
        flags=_I),
    alt(r"\bchown\s+", ("chown",), flags=_I, stretch=_FLAGS, tail=r"root\b"),
    alt(r"\busermod\s+", ("usermod",), flags=_I, stretch=_FLAGS, tail=r"-a?G\s*(?:sudo|wheel|admin|docker)\b"),
)
_EGRESS = (
    alt(r"(?:^|[\s;&|(`]|\$\()(?:curl|wget|nc|ncat|netcat|socat|ssh|scp|sftp|ftp|telnet|xh|httpie|http|https"
        r"|Invoke-WebRequest|Invoke-RestMethod|iwr|irm)(?:\s|$)",
        ("curl", "wget", "nc", "netcat", "socat", "ssh", "scp", "sftp", "ftp", "telnet", "xh", "http", "invoke-",
         "iwr", "irm"), back=2, flags=_I),
    alt(r"(?:^|[\s;&|(`]|\$\()rsync\s", ("rsync",), back=2, flags=_I, stretch=_SEG, tail=r":(?:\s|$)"),
    alt(r"\bgit\s+(?:push|fetch|pull|clone|ls-remote)\b", ("git",), flags=_I),
    alt(r"\b(?:aws|gsutil|gcloud|az)\s+\w+", ("aws", "gsutil", "gcloud", "az"), flags=_I),
    alt(r"/dev/(?:tcp|udp)/", ("/dev/tcp/", "/dev/udp/"), flags=_I),
)
_HISTORY = (
    alt(r"\bgit\s+push\b", ("git",), stretch=_SEG,
        tail=r"(?:\s--force(?:-with-lease)?\b|\s-f\b|\s\+\S+|--mirror\b|--delete\b|\s:\S)"),
    alt(r"\bgit\s+reset\s+", ("git",), stretch=_WORDS, tail=r"--hard\b"),
    alt(r"\bgit\s+rebase\b|\bgit\s+filter-(?:branch|repo)\b|\bgit\s+reflog\s+(?:expire|delete)\b"
        r"|\bgit\s+update-ref\s+-d\b|\bgit\s+replace\b|\bgit\s+stash\s+(?:drop|clear)\b", ("git",)),
    alt(r"\bgit\s+commit\b", ("git",), stretch=_SEG, tail=r"--amend\b"),
    alt(r"\bgit\s+gc\b", ("git",), stretch=_SEG, tail=r"--prune"),
    alt(r"\bgit\s+branch\s+", ("git",), stretch=_WORDS, tail=r"-D\b"),
)
_BYPASS = (
    alt(r"--no-verify\b|--dangerously-skip-permissions\b|--dangerously-bypass-approvals-and-sandbox\b"
        r"|--no-check-certificate\b|--trusted-host\b",
        ("--no-verify", "--dangerously-", "--no-check-certificate", "--trusted-host"), flags=_I),
    alt(r"\bcurl\b", ("curl",), flags=_I, stretch=_SEG, tail=r"\s(?:-k|--insecure)\b"),
    alt(r"GIT_SSL_NO_VERIFY\s*=\s*(?:1|true)|NODE_TLS_REJECT_UNAUTHORIZED\s*=\s*['\"]?0|PYTHONHTTPSVERIFY\s*=\s*0"
        r"|\bsetenforce\s+0\b", ("git_ssl_no_verify", "node_tls_reject_unauthorized", "pythonhttpsverify", "setenforce"),
        flags=_I),
    alt(r"\b(?:ufw|firewall-cmd)\s+(?:disable|--state\s*=\s*off)|\bsystemctl\s+(?:stop|disable)\s+(?:firewalld|apparmor|auditd)"
        r"|\bspctl\s+--master-disable\b|\bcsrutil\s+disable\b", ("ufw", "firewall-cmd", "systemctl", "spctl", "csrutil"),
        flags=_I),
    alt(r"\bsslVerify\s*+(?:=\s*+)?false\b", ("sslverify",), flags=_I),
    alt(r"http\.sslVerify\s+false", ("http.sslverify",), flags=_I),
)
_PERSIST = (
    alt(r"\bcrontab\b(?!\s+-l\b)", ("crontab",), flags=_I),
    alt(r"/etc/cron|LaunchAgents/|LaunchDaemons/|/etc/systemd/system/|\.config/systemd/user/|/etc/rc\.local|/etc/init\.d/"
        r"|authorized_keys|\.git/hooks/",
        ("/etc/", "launchagents/", "launchdaemons/", ".config/systemd/user/", "authorized_keys", ".git/hooks/"), flags=_I),
    alt(r"\bsystemctl\s+(?:--user\s+)?enable\b|\blaunchctl\s+(?:load|bootstrap|submit)\b|\bat\s+now\b",
        ("systemctl", "launchctl", "at"), flags=_I),
    alt(r"(?:^|[\s\"'/~])\.(?:bashrc|bash_profile|zshrc|zprofile|profile|zshenv)\b", (".bash", ".zsh", ".zprofile", ".profile"),
        back=1, flags=_I),
)
_AGENT_CONFIG = (
    alt(r"(?:^|[\s\"'/\\])(?:CLAUDE(?:\.local)?\.md|AGENTS(?:\.override)?\.md|GEMINI\.md|\.cursorrules"
        r"|\.claude/(?:settings[\w.-]*\.json|commands/|agents/|hooks/|skills/)|\.mcp\.json|\.codex/(?:config\.toml|AGENTS\.md)"
        r"|\.omp/|copilot-instructions\.md)",
        ("claude", "agents", "gemini.md", ".cursorrules", ".mcp.json", ".codex/", ".omp/", "copilot-instructions.md"),
        back=2),
)
_PERMS = (
    alt(r"\bchmod\s+", ("chmod",), flags=_I, stretch=_FLAGS,
        tail=r"(?:0?[0-7]?77[0-7]|a\+[rwx]*w|o\+[rwx]*w|\+w\b)"),
)

_FILE_KEYS = ("file_path", "path", "filePath", "notebook_path", "file", "filename", "target", "target_file", "paths")
_SHELL_KEYS = ("command", "cmd", "script", "commands", "input")
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.M)
_WRITES = frozenset({"file_write", "file_edit"})
# A shell command that writes: a redirection, tee, in-place sed, a copy or move, crontab, an enable.
_WRITE_VERB = (
    alt(r">|\btee\b|\bsed\s+-i|\b(?:cp|mv|install|ln|crontab|systemctl|launchctl|at)\b",
        (">", "tee", "sed", "cp", "mv", "install", "ln", "crontab", "systemctl", "launchctl", "at")),
)


# Each rule runs only when one of its lowercase gate substrings occurs: a substring
# scan is ~100x cheaper than a case-insensitive alternation tried at every position.
_GATES: dict[str, tuple[str, ...]] = {
    "sensitive": (
        ".env", ".ssh", "id_", "authorized_keys", "known_hosts", ".aws", ".azure", "gcloud", "credential",
        ".kube", "kubeconfig", ".docker", "netrc", ".pgpass", ".my.cnf", ".npmrc", ".pypirc", ".gnupg",
        ".password-store", "keychain", ".vault-token", ".terraformrc", "tfstate", "/etc/",
        # (service[-_]?account..., spelled out: "service" alone is in many a path that names no key file)
        "serviceaccount", "service-account", "service_account",
        "secret", ".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx", ".asc", "history",
        "login data", "cookies",
    ),
    "remote_exec": ("|", "<(", "$(", "iex"),
    "upload": ("curl", "wget", "scp", "rsync", "sftp", "nc", "socat", "s3", "gsutil", "gcloud", "azcopy", "rclone",
               "invoke-", "gist", "/dev/tcp/", "/dev/udp/"),
    "destructive": ("rm", "find", "mkfs", "dd", "/dev/", "shred", "wipefs", "truncate", "git", "drop", "delete",
                    "kubectl", "terraform", "docker", "redis", "(){"),
    "priv": ("sudo", "doas", "pkexec", "su", "runas", "chmod", "setcap", "chown", "visudo", "usermod", "privileged"),
    "history": ("git",),
    "bypass": ("no-verify", "dangerously", "curl", "no-check-certificate", "ssl", "tls", "https", "setenforce",
               "ufw", "firewall", "systemctl", "spctl", "csrutil", "trusted-host"),
    "persist": ("cron", "systemctl", "launchctl", "launch", "systemd", "rc.local", "init.d", "rc", "profile",
                "authorized_keys", "at now", "hooks"),
    "perms": ("chmod",),
    "egress": ("curl", "wget", "nc", "socat", "ssh", "scp", "ftp", "telnet", "xh", "http", "rsync", "invoke-",
               "iwr", "irm", "git", "aws", "gsutil", "gcloud", "az ", "/dev/tcp/", "/dev/udp/"),
    "agent_config": ("claude", "agents", "gemini", ".cursorrules", ".mcp.json", ".codex", ".omp", "copilot"),
}


def _gate(name: str, low: str) -> bool:
    for g in _GATES[name]:  # noqa: SIM110 - a plain loop: no generator to set up per call
        if g in low:
            return True
    return False


# The same gates, tested in one pass: a prefix-tree pattern finds, at every
# position, the longest gate substring starting there (a lookahead, so matches
# may overlap); a substring found opens every gate one of whose substrings it
# contains. Exactly the gates _gate opens, several times faster on a short
# command; past _ONE_PASS_MAX characters the substring scans are faster.
_COMMAND_GATES = tuple(name for name in _GATES if name != "sensitive")
_GATE_WORDS = sorted({w for name in _COMMAND_GATES for w in _GATES[name]})
_GATE_SCAN = re.compile("(?=(" + _trie_pattern(_GATE_WORDS) + "))")
_GATE_OPENS: dict[str, frozenset[str]] = {
    w: frozenset(name for name in _COMMAND_GATES if any(g in w for g in _GATES[name])) for w in _GATE_WORDS
}
_ONE_PASS_MAX = 128
# The sensitive gate alone: one search beats 38 substring scans at any length.
_SENSITIVE_GATE = re.compile(_trie_pattern(sorted(set(_GATES["sensitive"]))))


def _open_gates(low: str) -> set[str]:
    """The names of the command gates (every gate but ``sensitive``) open for ``low``."""
    if len(low) > _ONE_PASS_MAX:
        return {name for name in _COMMAND_GATES if _gate(name, low)}
    opened: set[str] = set()
    for w in _GATE_SCAN.findall(low):
        opened |= _GATE_OPENS[w]
    return opened


def command_text(tool_input: Any) -> str:
    """The command line of a shell call's input (a string, an argv list, or a dict holding one)."""
    value = tool_input
    if isinstance(tool_input, dict):
        for k in _SHELL_KEYS:
            if k in tool_input:
                value = tool_input[k]
                break
        else:
            return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        # ["bash", "-lc", "<script>"]: the script is the command.
        if len(value) == 3 and value[1] in ("-c", "-lc", "-lic", "-ic") and value[0].rsplit("/", 1)[-1] in (
            "bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell"
        ):
            return str(value[2])
        return " ".join(value)
    return ""


def file_paths(tool_input: Any) -> list[str]:
    """The file paths a file call names (its path keys, or the files of an apply_patch text)."""
    out: list[str] = []
    if isinstance(tool_input, dict):
        for k in _FILE_KEYS:
            v = tool_input.get(k)
            if isinstance(v, str) and v:
                out.append(v)
            elif isinstance(v, list):
                out.extend(x for x in v if isinstance(x, str))
        edits = tool_input.get("edits") or tool_input.get("changes")
        if isinstance(edits, dict):
            out.extend(k for k in edits if isinstance(k, str))
        patch = tool_input.get("input") or tool_input.get("patch")
        if isinstance(patch, str) and "*** " in patch:
            out.extend(_patch_files(patch))
    elif isinstance(tool_input, str) and "*** " in tool_input:
        out.extend(_patch_files(tool_input))
    return out


def _patch_files(patch: str) -> list[str]:
    return [(m.group(1) or m.group(2) or "").strip() for m in _PATCH_FILE.finditer(patch[:1 << 20])]


def strings_of(value: Any, limit: int = 64 * 1024) -> str:
    """Every string (and key) of a JSON value joined by newlines, cut at ``limit`` characters.

    Depth first, a dict's keys before its values; the walk stops once the text
    reaches ``limit``. The event sink takes the same text from the walk that
    redaction already made of the input (:func:`rematch_trace.security.strings.input_strings`).
    """
    return InputStrings(value, limit).text()


#: Each command rule: the gate that must be open, its alternatives, the feature it finds.
_COMMAND_RULES = (
    ("remote_exec", _REMOTE_EXEC, "remote_code_fetch_exec"),
    ("upload", _UPLOAD, "outbound_upload"),
    ("destructive", _DESTRUCTIVE, "destructive_command"),
    ("priv", _PRIV, "privilege_escalation"),
    ("history", _HISTORY, "git_history_rewrite"),
    ("bypass", _BYPASS, "security_bypass"),
    ("perms", _PERMS, "permission_weakening"),
    ("egress", _EGRESS, "network_egress"),
)
#: The rules that also need a writing command.
_WRITE_RULES = (
    ("persist", _PERSIST, "persistence"),
    ("agent_config", _AGENT_CONFIG, "agent_config_change"),
)


def _pattern_features(command: str) -> set[str]:
    """The features the pattern rules find in a command's text (deletion targets aside)."""
    low = command.lower()
    gates = _open_gates(low)
    if not gates:
        return set()
    scan_low = low if command.isascii() else lowered(command)
    found = {feature for gate, rule, feature in _COMMAND_RULES if gate in gates and occurs(rule, command, scan_low)}
    # Look for a writing verb only when one of its rules' gates is open.
    write_rules = [rule for rule in _WRITE_RULES if rule[0] in gates]
    if write_rules and occurs(_WRITE_VERB, command, scan_low):
        found.update(feature for _, rule, feature in write_rules if occurs(rule, command, scan_low))
    return found


def is_sensitive(path: str) -> bool:
    """Whether ``path`` names a file that usually holds secrets (``sensitive_file_reference``'s names)."""
    return bool(_SENSITIVE_GATE.search(lowered(path))) and _SENSITIVE.search(path) is not None


def _command_features(command: str, roots: tuple[str, ...] = (), depth: int = 0) -> set[str]:
    """A shell command's features: the patterns over its text and over the shell's reading of it.

    The reading (:func:`~rematch_trace.security.shell.read_command`) undoes what
    hides a command from the patterns (quotes, escapes, ``eval``, variables...);
    the patterns then run again over the commands it found, and the reading adds
    what only it sees (:func:`~rematch_trace.security.shell_risk.reading_features`).
    A reading that stops at a bound fails closed: ``dynamic_execution``, and the
    deletion targets as the text splits them.
    """
    found = _pattern_features(command)
    if depth > MAX_DEPTH:
        return found | {"dynamic_execution"}
    reading = read_command(command)
    if reading.failed:
        if "destructive_command" in found:
            found |= deletion_features(command, roots)
    elif reading.text and reading.text != command:
        found |= _pattern_features(reading.text)
    found |= reading_features(reading, roots, is_sensitive, lambda text: _command_features(text, roots, depth + 1))
    return found


_WINDOWS = re.compile(r"[A-Za-z]:[\\/]|\\\\")
_WRITE_TOOL = re.compile(r"(?:^|[_.-])(?:write|edit|create|save|put|upload|append|move|rename|copy|mkdir|patch"
                         r"|replace|insert|delete|remove|update|set)(?:$|[_.-]|[A-Z])", re.I)
_PATH_KEY = re.compile(r"path|file|dir|dest|target|output|location|folder", re.I)


def _mcp_paths(tool_input: Any) -> list[str]:
    """The paths an MCP tool's arguments name: path-like keys' strings, and absolute or ``~`` strings."""
    out: list[str] = []
    if isinstance(tool_input, dict):
        for k, v in list(tool_input.items())[:256]:
            vals = v if isinstance(v, list) else [v]
            for x in vals[:256]:
                if isinstance(x, str) and x and "\n" not in x and len(x) < 4096 and (
                        (isinstance(k, str) and _PATH_KEY.search(k)) or x.startswith(("/", "~/"))):
                    out.append(x)
    return out


def _outside(paths: list[str], cwd: str, root: str) -> bool:
    for p in paths:
        if "\x00" in p:
            continue
        full = os.path.normpath(p if os.path.isabs(p) or p.startswith("~") else os.path.join(cwd, p))
        if full.startswith("~") or not (full == root or full.startswith(root.rstrip("/") + "/")):
            return True
    return False


def risk_features(
    action_type: str,
    tool: str,
    tool_input: Any,
    text: str,
    *,
    redactions: int | None = None,
    command: str | None = None,
    paths: list[str] | None = None,
    roots: tuple[str, ...] = (),
    cwd: str = "",
    root: str = "",
) -> list[str]:
    """The risk features of one action, most severe first.

    :param action_type: the action type (``shell_exec``, ``file_read``...).
    :param tool: the tool's name.
    :param tool_input: the original input.
    :param text: the action's text to scan: its strings (:func:`strings_of`),
        or the prompt for a non-tool event; the command of a shell call is
        always scanned too.
    :param redactions: credentials the redactor found in the input; counted
        here with the shared redactor when not given.
    :param command: :func:`command_text` of the input, when the caller has it
        (read only for the action types that have a command).
    :param paths: :func:`file_paths` of the input, when the caller has it.
    :param roots: the repository's top and the working folder (absolute): deleting
        one of them, or a parent, is ``repository_deletion``.
    :param cwd: the working folder (relative paths are joined to it).
    :param root: the repository's top, or the working folder outside one (absolute): a
        file or MCP tool that writes outside it has ``write_outside_root``.
    """
    found: set[str] = set()
    if action_type in ("shell_exec", "other", "mcp"):
        command = command_text(tool_input) if command is None else command
    else:
        command = ""
    scan = f"{command}\n{text}" if command and command not in text else (text or command)
    if redactions is None:
        from rematch_trace.security.redact import default_redactor

        redactions = default_redactor().redact(scan)[1]
    if redactions > 0 or _CRED_VAR.search(scan):
        found.add("credential_in_args")
    if action_type not in ("shell_exec", "network"):
        joined = "\n".join(file_paths(tool_input) if paths is None else paths)
    else:
        joined = ""
    # A file call is judged by the paths it touches, not by the text it writes.
    target = joined if action_type.startswith("file_") else scan
    # (lowered: _SENSITIVE matches case-insensitively, so a dotless i or a long s can spell an ASCII name)
    if target and _SENSITIVE_GATE.search(lowered(target)) and _SENSITIVE.search(target):
        found.add("sensitive_file_reference")
    if action_type == "network":
        found.add("network_egress")
        if isinstance(tool_input, dict):
            method = str(tool_input.get("method", "")).upper()
            if method in ("POST", "PUT", "PATCH") or tool_input.get("body") or tool_input.get("data"):
                found.add("outbound_upload")
    if joined and action_type in _WRITES:
        low = joined.lower()
        scan_low = low if joined.isascii() else lowered(joined)
        if _gate("agent_config", low) and occurs(_AGENT_CONFIG, joined, scan_low):
            found.add("agent_config_change")
        if _gate("persist", low) and occurs(_PERSIST, joined, scan_low):
            found.add("persistence")
    if root and os.path.isabs(root) and (action_type in _WRITES or action_type == "mcp"):
        if action_type in _WRITES:
            written = file_paths(tool_input) if paths is None else paths
        else:
            written = _mcp_paths(tool_input) if _WRITE_TOOL.search(tool.rsplit("__", 1)[-1]) else []
        if written and _outside(written, cwd or root, os.path.normpath(root)):
            found.add("write_outside_root")
    if command:
        # The shell reader reads bash: a shell call's command, or an MCP tool's. Not another
        # language's code that a tool takes as its "input" (Codex's code mode), nor a
        # session on Windows, whose commands are PowerShell's or cmd's.
        if action_type == "other" or _WINDOWS.match(cwd):
            found.update(_pattern_features(command))
            if "destructive_command" in found:
                found |= deletion_features(command, roots)
        else:
            found.update(_command_features(command, roots))
    return sort_features(found)


__all__ = [
    "FEATURE_NAMES",
    "RISK_FEATURES",
    "SEVERITY",
    "command_text",
    "file_paths",
    "is_sensitive",
    "risk_features",
    "severity",
    "sort_features",
    "strings_of",
]
