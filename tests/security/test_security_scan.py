"""The anchored rule scanner against the patterns it replaced: same answer on every text, in linear time.

The reference patterns below are the risk rules as they were before they were
split into anchored alternatives (``rematch_trace.security.scan``), verbatim;
each new rule must say "found" exactly where its old pattern's ``search`` did,
on real commands, on generated ones and on adversarial ones.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rematch_trace.host.casefold import _FOLD, ascii_lowered, lowered
from rematch_trace.security import risk
from rematch_trace.security.scan import Alt, occurs

_I = re.I

# -- the rules as they were (reference) ------------------------------------------------
_FETCHERS = r"(?:curl|wget|fetch|http|xh|iwr|irm|Invoke-WebRequest|Invoke-RestMethod)"
_REMOTE_EXEC = re.compile(
    r"\b" + _FETCHERS + r"\b[^|;&\n]*\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+\S+\s+)*"
    r"(?:ba|z|da|k|fi)?sh\b|\b" + _FETCHERS + r"\b[^|;&\n]*\|\s*(?:sudo\s+)?(?:python[0-9.]*|perl|ruby|node|php|iex|pwsh|powershell)\b"
    r"|(?:ba|z)?sh\s+(?:-\w+\s+)*<\(\s*" + _FETCHERS + r"\b"
    r"|(?:ba|z)?sh\s+-c\s+[\"']?\$\(\s*" + _FETCHERS + r"\b"
    r"|\b(?:eval|source|\.)\s+[\"']?\$\(\s*" + _FETCHERS + r"\b"
    r"|\biex\s*\(?\s*(?:\(?\s*New-Object\s+Net\.WebClient\)?\.DownloadString|iwr|irm|Invoke-WebRequest|Invoke-RestMethod)",
    _I,
)
_UPLOAD = re.compile(
    r"\bcurl\b[^\n;|&]*?(?:\s(?:-d|--data(?:-binary|-raw|-urlencode)?|-F|--form|-T|--upload-file|--json)[\s=]"
    r"|\s-X\s*(?:POST|PUT|PATCH)\b|\s--request\s+(?:POST|PUT|PATCH)\b)"
    r"|\bwget\b[^\n;|&]*--(?:post|put|body)-(?:file|data)"
    # scp/rsync upload when the remote (host:path) is the destination, the last argument.
    r"|\b(?:scp|rsync)\b[^\n;|&]*\s(?:[\w.-]+@)?[\w.-]+:(?!//)[^\s;|&]*\s*(?:$|[;|&\n])"
    r"|\b(?:nc|ncat|netcat|socat)\b[^\n;|&]*(?:<|\s\S+\s+\d+\s*<)"
    r"|\|\s*(?:nc|ncat|netcat)\s"
    r"|\b(?:aws\s+s3\s+(?:cp|sync|mv)|gsutil\s+(?:-m\s+)?(?:cp|rsync|mv)|gcloud\s+storage\s+cp|azcopy\s+(?:copy|sync)"
    r"|rclone\s+(?:copy|sync|move))\b[^\n;|&]*\s(?:s3|gs|https?|az|\w+)://?"
    r"|\bInvoke-(?:WebRequest|RestMethod)\b[^\n;|&]*-(?:InFile|Body)\b"
    r"|\bgh\s+gist\s+create\b",
    _I,
)
_CRED_VAR = re.compile(r"\$\{?[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)\b", _I)
_DESTRUCTIVE = re.compile(
    r"\brm\s+(?:-[A-Za-z]*[rR][A-Za-z]*\s+(?:-\S+\s+)*|-[A-Za-z]*f[A-Za-z]*\s+-[A-Za-z]*[rR]|--recursive\b|-rf\b|-fr\b)"
    r"|\brm\s+(?:-\S+\s+)*(?:/|~|\*|/\*|~/\*?|\$HOME/?)(?:\s|$)"
    r"|\bfind\b[^\n;|&]*\s-delete\b|\bfind\b[^\n;|&]*-exec\s+rm\b"
    r"|\bmkfs(?:\.\w+)?\b|\bdd\b[^\n;|&]*\bof=/dev/|>\s*/dev/(?:sd|nvme|hd|disk)\w*"
    r"|\bshred\b|\bwipefs\b|\btruncate\s+(?:-\S+\s+)*-s\s*0\b"
    r"|\bgit\s+clean\s+(?:-\S*\s+)*-\S*[fdx]"
    r"|\bgit\s+reset\s+(?:\S+\s+)*--hard\b|\bgit\s+checkout\s+(?:-f\s+)?--\s+\.(?:\s|$)|\bgit\s+restore\s+(?:--\S+\s+)*\.(?:\s|$)"
    r"|\b(?:DROP\s+(?:TABLE|DATABASE|SCHEMA)|TRUNCATE\s+TABLE)\b|\bDELETE\s+FROM\s+\w+\s*(?:;|$)"
    r"|\bkubectl\s+delete\b|\bterraform\s+destroy\b|\bdocker\s+(?:system|volume|image)\s+prune\b"
    r"|\bdropdb\b|\bredis-cli\b[^\n;|&]*\bflush(?:all|db)\b"
    r"|:\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",
    _I,
)
_PRIV = re.compile(
    r"(?:^|[\s;&|(`]|\$\()(?:sudo|doas|pkexec|su|runas)(?:\s|$)"
    r"|\bchmod\s+(?:-\S+\s+)*(?:[ugoa]*\+[rwx]*s|[2467][0-7]{3})\b|\bsetcap\b|\bchown\s+(?:-\S+\s+)*root\b"
    r"|/etc/sudoers|\bvisudo\b|\busermod\s+(?:-\S+\s+)*-a?G\s*(?:sudo|wheel|admin|docker)\b"
    r"|--privileged\b",
    _I,
)
_EGRESS = re.compile(
    r"(?:^|[\s;&|(`]|\$\()(?:curl|wget|nc|ncat|netcat|socat|ssh|scp|sftp|ftp|telnet|xh|httpie|http|https|rsync\s[^\n;|&]*:"
    r"|Invoke-WebRequest|Invoke-RestMethod|iwr|irm)(?:\s|$)"
    r"|\bgit\s+(?:push|fetch|pull|clone|ls-remote)\b|\b(?:aws|gsutil|gcloud|az)\s+\w+",
    _I,
)
_HISTORY = re.compile(
    r"\bgit\s+push\b[^\n;|&]*(?:\s--force(?:-with-lease)?\b|\s-f\b|\s\+\S+|--mirror\b|--delete\b|\s:\S)"
    r"|\bgit\s+reset\s+(?:\S+\s+)*--hard\b|\bgit\s+rebase\b|\bgit\s+commit\b[^\n;|&]*--amend\b"
    r"|\bgit\s+filter-(?:branch|repo)\b|\bgit\s+reflog\s+(?:expire|delete)\b|\bgit\s+gc\b[^\n;|&]*--prune"
    r"|\bgit\s+branch\s+(?:\S+\s+)*-D\b|\bgit\s+update-ref\s+-d\b|\bgit\s+replace\b|\bgit\s+stash\s+(?:drop|clear)\b",
)
_BYPASS = re.compile(
    r"--no-verify\b|--dangerously-skip-permissions\b|--dangerously-bypass-approvals-and-sandbox\b"
    r"|\bcurl\b[^\n;|&]*\s(?:-k|--insecure)\b|--no-check-certificate\b|GIT_SSL_NO_VERIFY\s*=\s*(?:1|true)"
    r"|NODE_TLS_REJECT_UNAUTHORIZED\s*=\s*['\"]?0|PYTHONHTTPSVERIFY\s*=\s*0|\bsetenforce\s+0\b"
    r"|\b(?:ufw|firewall-cmd)\s+(?:disable|--state\s*=\s*off)|\bsystemctl\s+(?:stop|disable)\s+(?:firewalld|apparmor|auditd)"
    r"|\bspctl\s+--master-disable\b|\bcsrutil\s+disable\b|--trusted-host\b|\bsslVerify\s*=?\s*false\b"
    r"|http\.sslVerify\s+false",
    _I,
)
_PERSIST = re.compile(
    r"\bcrontab\b(?!\s+-l\b)|/etc/cron|\bsystemctl\s+(?:--user\s+)?enable\b|\blaunchctl\s+(?:load|bootstrap|submit)\b"
    r"|LaunchAgents/|LaunchDaemons/|/etc/systemd/system/|\.config/systemd/user/|/etc/rc\.local|/etc/init\.d/"
    r"|(?:^|[\s\"'/~])\.(?:bashrc|bash_profile|zshrc|zprofile|profile|zshenv)\b|authorized_keys|\bat\s+now\b"
    r"|\.git/hooks/",
    _I,
)
_AGENT_CONFIG = re.compile(
    r"(?:^|[\s\"'/\\])(?:CLAUDE(?:\.local)?\.md|AGENTS(?:\.override)?\.md|GEMINI\.md|\.cursorrules"
    r"|\.claude/(?:settings[\w.-]*\.json|commands/|agents/|hooks/|skills/)|\.mcp\.json|\.codex/(?:config\.toml|AGENTS\.md)"
    r"|\.omp/|copilot-instructions\.md)",
)
_PERMS = re.compile(r"\bchmod\s+(?:-\S+\s+)*(?:0?[0-7]?77[0-7]|a\+[rwx]*w|o\+[rwx]*w|\+w\b)", _I)
_WRITE_VERB = re.compile(r">|\btee\b|\bsed\s+-i|\b(?:cp|mv|install|ln|crontab|systemctl|launchctl|at)\b")

# -- old and new side by side ------------------------------------------------------------

PAIRS: dict[str, tuple[re.Pattern[str], tuple[Alt, ...]]] = {
    "remote_exec": (_REMOTE_EXEC, risk._REMOTE_EXEC),
    "upload": (_UPLOAD, risk._UPLOAD),
    "destructive": (_DESTRUCTIVE, risk._DESTRUCTIVE),
    "priv": (_PRIV, risk._PRIV),
    "egress": (_EGRESS, risk._EGRESS),
    "history": (_HISTORY, risk._HISTORY),
    "bypass": (_BYPASS, risk._BYPASS),
    "persist": (_PERSIST, risk._PERSIST),
    "agent_config": (_AGENT_CONFIG, risk._AGENT_CONFIG),
    "perms": (_PERMS, risk._PERMS),
    "write_verb": (_WRITE_VERB, risk._WRITE_VERB),
}
_OLD_COMMAND_RULES = (
    ("remote_exec", _REMOTE_EXEC, "remote_code_fetch_exec"),
    ("upload", _UPLOAD, "outbound_upload"),
    ("destructive", _DESTRUCTIVE, "destructive_command"),
    ("priv", _PRIV, "privilege_escalation"),
    ("history", _HISTORY, "git_history_rewrite"),
    ("bypass", _BYPASS, "security_bypass"),
    ("perms", _PERMS, "permission_weakening"),
    ("egress", _EGRESS, "network_egress"),
)
_OLD_WRITE_RULES = (("persist", _PERSIST, "persistence"), ("agent_config", _AGENT_CONFIG, "agent_config_change"))


def old_command_features(command: str) -> set[str]:
    """``_command_features`` as it was: the same gates, then each old pattern's search."""
    gates = risk._open_gates(command.lower())
    if not gates:
        return set()
    found = {feature for gate, pattern, feature in _OLD_COMMAND_RULES if gate in gates and pattern.search(command)}
    write_rules = [rule for rule in _OLD_WRITE_RULES if rule[0] in gates]
    if write_rules and _WRITE_VERB.search(command) is not None:
        found.update(feature for _, pattern, feature in write_rules if pattern.search(command))
    return found


def assert_same(text: str) -> None:
    low = lowered(text)
    for name, (old, new) in PAIRS.items():
        assert bool(old.search(text)) == occurs(new, text, low), (name, text)
    assert risk._pattern_features(text) == old_command_features(text), text


# -- real commands ---------------------------------------------------------------------------

def _inputs(value: Any, out: list[Any]) -> None:
    if isinstance(value, dict):
        if value.get("type") == "tool_use" and isinstance(value.get("input"), dict):
            out.append(value["input"])
        elif value.get("type") == "toolCall" and isinstance(value.get("arguments"), dict):
            out.append(value["arguments"])
        elif value.get("type") == "function_call" and isinstance(value.get("arguments"), str):
            try:
                out.append(orjson.loads(value["arguments"]))
            except orjson.JSONDecodeError:
                pass
        for v in value.values():
            _inputs(v, out)
    elif isinstance(value, list):
        for v in value:
            _inputs(v, out)


def corpus_texts(corpus: Path) -> list[str]:
    """Every tool call's command and strings in the shared corpus of real transcripts."""
    inputs: list[Any] = []
    for path in sorted(corpus.rglob("*.jsonl")):
        with path.open("rb") as f:
            for line in f:
                try:
                    _inputs(orjson.loads(line), inputs)
                except orjson.JSONDecodeError:
                    continue
    texts = {risk.command_text(i) for i in inputs} | {risk.strings_of(i) for i in inputs}
    return sorted(t for t in texts if t)


def test_real_commands_give_the_same_answers(corpus_dir: Path) -> None:
    texts = corpus_texts(corpus_dir)
    assert len(texts) > 500
    for text in texts:
        assert_same(text)


# -- generated commands ------------------------------------------------------------------------

# Words of every rule, their near misses, separators, and the characters the
# case-insensitive patterns fold (ſ is s, K is k, ı and İ are i).
WORDS = [
    "rm", "RM", "-rf", "-fr", "-r", "-R", "-f", "-Rf", "-xrz", "--recursive", "-i", "/", "~", "~/", "*", "/*", "$HOME",
    "$HOME/", "find", "-delete", "-exec", "mkfs", "mkfs.ext4", "dd", "of=/dev/sda", "if=x", ">", ">>", "/dev/sda",
    "/dev/nvme0", "shred", "wipefs", "truncate", "-s", "0", "-s0", "git", "clean", "-fdx", "-n", "reset", "--hard",
    "checkout", "--", ".", "restore", "--staged", "DROP", "TABLE", "drop", "database", "TRUNCATE", "DELETE", "FROM",
    "users", "kubectl", "delete", "terraform", "destroy", "docker", "system", "prune", "volume", "dropdb",
    "redis-cli", "flushall", "FLUSHDB", ":(){", ":()", "{", ":", "&", "};", "curl", "wget", "fetch", "http", "https",
    "xh", "iwr", "irm", "Invoke-WebRequest", "Invoke-RestMethod", "-InFile", "-Body", "sh", "bash", "zsh", "dash",
    "ksh", "fish", "python3", "perl", "node", "iex", "pwsh", "sudo", "-E", "env", "A=1", "<(", "$(", "-c", "eval",
    "source", "(New-Object", "Net.WebClient)", ".DownloadString", "New-Object", "-d", "--data", "--data-binary",
    "-F", "--form", "-T", "--upload-file", "--json", "-X", "POST", "put", "--request", "--post-file", "--body-data",
    "scp", "rsync", "user@host:/tmp/", "host:", "http://x", "nc", "ncat", "netcat", "socat", "4444", "<", "aws",
    "s3", "cp", "s3://b/", "gsutil", "-m", "rsync", "gs://b", "gcloud", "storage", "azcopy", "copy", "rclone",
    "remote://", "gh", "gist", "create", "doas", "pkexec", "su", "runas", "chmod", "u+s", "4755", "+x", "777",
    "a+w", "o+rw", "+w", "setcap", "chown", "root", "-R", "/etc/sudoers", "visudo", "usermod", "-aG", "-G",
    "docker", "--privileged", "push", "--force", "--force-with-lease", "+main", ":main", "--mirror", "--delete",
    "rebase", "commit", "--amend", "filter-branch", "filter-repo", "reflog", "expire", "gc", "--prune", "branch",
    "-D", "update-ref", "-d", "replace", "stash", "clear", "--no-verify", "--dangerously-skip-permissions",
    "-k", "--insecure", "--no-check-certificate", "GIT_SSL_NO_VERIFY=1", "GIT_SSL_NO_VERIFY", "=", "true",
    "NODE_TLS_REJECT_UNAUTHORIZED=0", "PYTHONHTTPSVERIFY=0", "setenforce", "ufw", "disable", "firewall-cmd",
    "--state=off", "systemctl", "stop", "firewalld", "spctl", "--master-disable", "csrutil", "--trusted-host",
    "sslVerify", "false", "http.sslVerify", "crontab", "-l", "-e", "/etc/cron.d/x", "enable", "--user",
    "launchctl", "load", "LaunchAgents/", "/etc/systemd/system/", ".config/systemd/user/", "/etc/rc.local",
    "/etc/init.d/", ".bashrc", "~/.zshrc", ".profile", ".bash_profile", "authorized_keys", "at", "now",
    ".git/hooks/", "CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "GEMINI.md", ".cursorrules", ".claude/settings.json",
    ".claude/commands/", ".mcp.json", ".codex/config.toml", ".omp/", "copilot-instructions.md", "tee", "sed", "-i",
    "mv", "install", "ln", "ssh", "sftp", "ftp", "telnet", "httpie", "az", "vm", "fetch", "pull", "clone",
    "ls-remote", "ſ", "K", "ı", "İ", "SUDO", "Curl", "ſh", "ſudo", "rſync", "-", "--", "'", '"', "`", "\\", "@",
]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", ";", "|", "&", "&&", "||", "| ", " | ", "; ", "\n  ", "\x0b", "\xa0"]
_piece = st.one_of(st.sampled_from(WORDS), st.sampled_from(SEPARATORS), st.text(max_size=3))
commands = st.lists(_piece, max_size=40).map("".join)


# A few pieces per example, repeated and run together: pairs such as "$(" then
# "sudo", or "-" then "rm", come up often enough to be tried.
_few = st.lists(_piece, min_size=1, max_size=5).flatmap(lambda few: st.lists(st.sampled_from(few), max_size=30))
dense_commands = _few.map("".join)


# Texts each old pattern matches (Hypothesis writes them from the pattern), run
# together with noise, then cut at a random place: matches and near misses.
def branches(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern's source."""
    out, depth, start, i, in_class = [], 0, 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
        i += 1
    return [*out, pattern[start:]]


# One strategy per alternative of every old pattern, so that each is drawn often.
_matches = st.one_of(
    [st.from_regex(re.compile(b, old.flags)) for old, _ in PAIRS.values() for b in branches(old.pattern)]
)


@st.composite
def near_matches(draw: st.DrawFn) -> str:
    text = "".join(draw(st.lists(st.one_of(_matches, st.sampled_from(SEPARATORS), _piece), min_size=1, max_size=5)))
    if text and draw(st.booleans()):
        i = draw(st.integers(0, len(text) - 1))
        j = draw(st.integers(i, min(len(text), i + 3)))
        text = text[:i] + draw(st.sampled_from(["", " ", "-", "x", "\n"])) + text[j:]
    return text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(near_matches())
def test_pattern_written_texts_give_the_same_answers(text: str) -> None:
    assert_same(text)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands)
def test_generated_commands_give_the_same_answers(text: str) -> None:
    assert_same(text)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dense_commands)
def test_dense_generated_commands_give_the_same_answers(text: str) -> None:
    assert_same(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_random_text_gives_the_same_answers(text: str) -> None:
    assert_same(text)


def test_the_fold_list_is_every_character_re_folds_into_ascii() -> None:
    """Every non-ASCII character a case-insensitive pattern matches with an ASCII letter is folded first."""
    letter = re.compile(r"[a-z]", re.I)
    for c in range(128, sys.maxunicode + 1):
        ch = chr(c)
        if letter.fullmatch(ch) or any(x.isascii() for x in ch.lower()):
            assert ch in dict((chr(k), v) for k, v in _FOLD.items()), hex(c)
        assert len(lowered(ch)) == 1, hex(c)


# -- adversarial texts: linear time, same answers ------------------------------------------------

N = 20_000


@pytest.mark.parametrize(
    ("text", "rule", "expected"),
    [
        ("find " * N, "destructive", False),
        ("find " * N + "-delete", "destructive", True),
        ("rm -rm " * N, "destructive", True),
        ("rm -xm " * N, "destructive", False),
        ("rm -" + "x" * N + "!", "destructive", False),
        ("rm -" + "r" * N + "!", "destructive", False),
        ("rm -" + "f" * N + " !", "destructive", False),
        ("git reset " * N, "destructive", False),
        ("git reset " * N + "--hard", "destructive", True),
        ("git clean -git clean " * N, "destructive", False),
        ("truncate -truncate " * N, "destructive", False),
        ("redis-cli " * N, "destructive", False),
        ("dd " * N, "destructive", False),
        ("curl " * N, "remote_exec", False),
        ("curl " * N + "| sh", "remote_exec", True),
        ("sh -sh " * N, "remote_exec", False),
        ("iex" + " " * N + "x", "remote_exec", False),
        ("iex (" + " " * N + "(" + " " * N + "x", "remote_exec", False),
        ("curl " * N, "upload", False),
        ("scp " * N, "upload", False),
        ("nc " * N, "upload", False),
        ("wget " * N, "upload", False),
        ("aws s3 cp " * N, "upload", False),
        ("Invoke-WebRequest " * N, "upload", False),
        ("chmod -chmod " * N, "priv", False),
        ("chown -chown " * N, "priv", False),
        ("usermod -usermod " * N, "priv", False),
        ("git push " * N, "history", False),
        ("git commit " * N, "history", False),
        ("git gc " * N, "history", False),
        ("git branch " * N, "history", False),
        ("curl " * N, "bypass", False),
        ("sslVerify" + " " * N + "x", "bypass", False),
        (" rsync " * N, "egress", False),
        ("chmod -chmod " * N, "perms", False),
    ],
    ids=lambda v: v[:24] if isinstance(v, str) else str(v),
)
def test_adversarial_texts_are_scanned_in_linear_time(text: str, rule: str, expected: bool) -> None:
    """Texts that make a backtracking scan quadratic (or worse): the same answer, in one pass.

    At this size a quadratic scan would take minutes; the old patterns are
    compared on a cut of each text short enough for them.
    """
    assert occurs(PAIRS[rule][1], text, lowered(text)) is expected
    short = text[:1500] if not expected else text[:750] + text[-750:]
    assert_same(short)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["a", "K", "\u212a", "\u0130", "\u0131", "\u017f", "é", "Ω", "ß", " "]) | st.text(max_size=3),
                max_size=10).map("".join))
def test_lowered_translates_only_text_that_has_a_folded_character(text: str) -> None:
    # lowered skips translate() when no character of FOLDED is there: the same text as translating always.
    assert lowered(text) == text.translate(_FOLD).lower()


def _ascii_only(text: str) -> str:
    return text.encode("ascii", "replace").decode("ascii")


def test_only_two_characters_past_ascii_lower_to_ascii_or_to_more_than_one() -> None:
    """What ascii_lowered relies on, checked against every code point."""
    odd = [c for c in range(128, sys.maxunicode + 1)
           if len(chr(c).lower()) != 1 or chr(c).lower().isascii()]
    assert odd == [0x130, 0x212A]


_lowering_texts = st.lists(
    st.sampled_from(["Aws", "KEY", "\u212a", "\u0130", "\u0131", "\u017f", "ß", "Σ", "ΣA ", "é", "?", "\ud800", " "])
    | st.text(max_size=3), max_size=10).map("".join)


@settings(max_examples=800, deadline=None)
@given(_lowering_texts | st.text(st.characters(exclude_categories=())))
def test_ascii_lowered_keeps_the_ascii_of_lower_in_place(text: str) -> None:
    got, low = ascii_lowered(text), text.lower()
    assert got.isascii() and len(got) == len(low)
    assert got == _ascii_only(low)  # the same ASCII characters at the same places, "?" elsewhere
