"""The one redaction component: credentials in text become typed placeholders.

Both output streams use it: the trace (``input.text``, ``after_deliverable``,
``text_head``, ``tool_result.input``) and the security events (``args_summary``,
``redaction_count``). A credential is replaced with ``[REDACTED:<kind>]``; the
kinds are :data:`KINDS`.

Why hand-written rules and not a ruleset library: detect-secrets (the
maintained candidate on PyPI) was measured at about 4.5 s per MB of transcript
text through ``scan_line`` with its default plugins, three orders of magnitude
slower than reading the file, and it reports a secret's value but not its span
(and for some rules only a prefix such as ``ghp``), so it cannot drive an
in-place replacement without a second search. The rules here are the well-known
public token formats, each compiled once and run only when one of its
*trigger* substrings occurs in the text, so text holding no trigger (most text)
costs a few substring scans.

Every rule names the part to replace: the whole match, or its ``s`` group (the
value after a label such as ``AccountKey=`` or ``Bearer``), so what stays says
which kind of thing was there without the thing itself.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import attrs

from rematch_trace.host.casefold import lowered
from rematch_trace.host.ids import register_credential_check
from rematch_trace.security.scan import Alt, alt, occurs
from rematch_trace.security.strings import input_strings

PLACEHOLDER = "[REDACTED:{}]"
_PLACEHOLDER_START = "[REDACTED:"

#: Names whose values are credentials when they look like one (``*_KEY``,
#: ``apiToken``, ``client_secret``, ``DB_PASSWORD``...). Matched on the
#: lower-cased name's end so that camelCase, snake_case and kebab-case agree.
_SECRET_NAME_ENDS: tuple[str, ...] = (
    "key",
    "keys",
    "token",
    "tokens",
    "secret",
    "secrets",
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "pass",
    "credential",
    "credentials",
    "apikey",
    "auth",
    "authorization",
    "signature",
    "private_key",
    "sas",
)
#: Of those, the names whose values are redacted without an entropy test.
_PASSWORD_NAME_ENDS: tuple[str, ...] = ("password", "passwd", "passphrase", "pwd", "pass")
#: Names that end like a secret name but never hold one.
_NOT_SECRET_NAMES = frozenset(
    {
        "max_tokens",
        "maxtokens",
        "max_output_tokens",
        "input_tokens",
        "output_tokens",
        "total_tokens",
        "num_tokens",
        "tokens",
        "sort_key",
        "primary_key",
        "foreign_key",
        "partition_key",
        "cache_key",
        "idempotency_key",
        "key",
        "keys",
        "hotkey",
        "monkey",
        "turkey",
        "bypass",
        "compass",
        "subclass",
        "class",
        "pass",
        "surpass",
        "mass",
        "first_pass",
        "second_pass",
    }
)
#: Values that name a type or a placeholder, not a credential.
_NOT_SECRET_VALUES = frozenset(
    {
        "string",
        "str",
        "none",
        "null",
        "nil",
        "true",
        "false",
        "undefined",
        "required",
        "optional",
        "password",
        "secret",
        "token",
        "bytes",
        "text",
        "number",
        "boolean",
        "redacted",
        "changeme",
        "example",
        "xxxxxx",
        "********",
    }
)

# A hex digest, a UUID or a plain number is an identifier, not a secret.
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_REFERENCE = re.compile(r"^(?:\$|%|<|\{\{|\$\{|process\.env|os\.environ|env\(|getenv|\.\.?/|~?/|\*{3,})")


def shannon_entropy(s: str) -> float:
    """Bits per character of ``s`` (0 for the empty string)."""
    if not s:
        return 0.0
    counts: dict[str, int] = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def is_secret_name(name: str) -> bool:
    """Whether a variable, key or header name says its value is a credential."""
    low = name.lower().strip("\"'\\ ")
    if not low or low in _NOT_SECRET_NAMES or len(low) > 80:
        return False
    if low.endswith(("_id", "-id", "_name", "_file", "_path", "_url", "_type", "_length", "_count", "_env")):
        return False
    return low.endswith(_SECRET_NAME_ENDS)


def looks_secret_value(name: str, value: str) -> bool:
    """Whether ``value``, assigned to the secret-like ``name``, is a credential.

    Passwords need only be a literal (not a reference, a type name or a
    placeholder) of six characters or more; keys, tokens and secrets must also
    look random: at least 16 characters, a letter and a digit, and at least
    3 bits of Shannon entropy per character. A UUID is an identifier.
    """
    v = value.strip()
    if v.startswith(_PLACEHOLDER_START) or v.lower() in _NOT_SECRET_VALUES:
        return False
    if _REFERENCE.match(v) or any(c in v for c in " \n\t(){}"):
        return False
    low = name.lower().strip("\"'\\ ")
    if low.endswith(_PASSWORD_NAME_ENDS):
        return len(v) >= 6 and len(set(v)) > 2 and shannon_entropy(v) >= 2.0
    if len(v) < 16 or _UUID.fullmatch(v):
        return False
    if not (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        return False
    return shannon_entropy(v) >= 3.0


def _mixed(s: str) -> bool:
    """A token body of random look: a digit and a letter (rules out words-with-dashes)."""
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


def _basic_ok(s: str) -> bool:
    """A Basic credential decodes to ``user:password``."""
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return ":" in text and text.isprintable()


def _bearer_ok(s: str) -> bool:
    return len(s) >= 16 and _mixed(s) and shannon_entropy(s) >= 3.0


def _userinfo_ok(s: str) -> bool:
    # ``scheme://user:${PASS}@host`` is a reference, not a password.
    return not s.startswith(_PLACEHOLDER_START) and not _REFERENCE.match(s) and s.lower() not in _NOT_SECRET_VALUES


def _always(s: str) -> bool:
    return True


@attrs.frozen
class Rule:
    """One credential format.

    :param kind: the placeholder's kind.
    :param pattern: the compiled pattern; its ``s`` group, when present, is the
        part replaced (else the whole match).
    :param triggers: substrings at least one of which every match contains;
        the pattern runs only when one occurs in the text.
    :param fold: the triggers are lower case and tested against lowered text.
    :param check: a test of the replaced part that rules out look-alikes.
    :param gate: the pattern as :func:`~rematch_trace.security.scan.occurs` scans it (tried only
        near its anchors), for a rule whose pattern the engine would try at every position of a
        long text: when it does not occur, the text is left as it is without that scan.
    """

    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]
    fold: bool = False
    check: Callable[[str], bool] = _always
    gate: tuple[Alt, ...] | None = None


def _r(kind: str, pattern: str, triggers: tuple[str, ...], *, fold: bool = False, flags: int = 0,
       check: Callable[[str], bool] = _always, at: tuple[str, ...] = (), back: int = 0) -> Rule:
    """A :class:`Rule`; ``at`` (lower case) and ``back``: the anchors of its gate (see :class:`~rematch_trace.security.scan.Alt`)."""
    gate = (alt(pattern, at, back=back, flags=flags),) if at else None
    return Rule(kind, re.compile(pattern, flags), triggers, fold, check, gate)


#: An AWS secret access key's value, alone: exactly 40 characters of [A-Za-z0-9/+].
_AWS_SECRET = r"(?<![A-Za-z0-9/+=])(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"


def _aws_secret_ok(s: str) -> bool:
    """A 40-character value that can be an AWS secret key: random base64, not a hex digest.

    A git SHA or SHA-1 (40 hex digits, either case) is never one; a secret key
    (30 random bytes in base64) has upper and lower case letters and a digit.
    """
    return (any(c.isupper() for c in s) and any(c.islower() for c in s) and any(c.isdigit() for c in s)
            and shannon_entropy(s) >= 3.5)


_B = r"(?<![A-Za-z0-9_\-])"  # a token starts at no word character or dash
_E = r"(?![A-Za-z0-9_\-])"

#: The rules, most specific first: once a span is a placeholder, later rules skip it.
RULES: tuple[Rule, ...] = (
    _r("private_key",
       r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
       ("PRIVATE KEY",)),
    _r("gcp_private_key_id", r"private_key_id\\?\"\s*:\s*\\?\"(?P<s>[0-9a-f]{40})\\?\"", ("private_key_id",)),
    # An AWS secret access key has no prefix of its own: 40 characters of [A-Za-z0-9/+]. Taken only with
    # context (see _aws_secret_ok for the value): after a name that says so, with or without "=" or ":"
    # (aws_secret_access_key, "SecretAccessKey": "...", AWS_SECRET_KEY), or within 100 characters after
    # an access key id (a CSV credentials row, "AKIA... wJalr..."); before the key id rule, whose
    # placeholder would hide the id.
    _r("aws_secret_access_key",
       r"(?:secret_?access_?key|aws_?secret_?key)\\?[\"']?[ \t]{0,3}(?:[:=,]|=>)?[ \t]{0,3}\\?[\"']?"
       + _AWS_SECRET, ("secretaccesskey", "secret_access_key", "secret_key", "secretkey"), fold=True, flags=re.I,
       check=_aws_secret_ok),
    _r("aws_secret_access_key", _B + r"(?:AKIA|ASIA)[A-Z0-9]{16}" + _E + r"[\s\S]{0,100}?" + _AWS_SECRET,
       ("AKIA", "ASIA"), check=_aws_secret_ok),
    _r("aws_access_key_id", _B + r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}" + _E,
       ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
    _r("aws_secret_access_key",
       r"aws.{0,20}?(?:secret|session).{0,20}?\\?[\"']?\s*(?:[:=]|=>)\s*\\?[\"']?(?P<s>[A-Za-z0-9/+=]{40,})(?![A-Za-z0-9/+=])",
       ("aws",), fold=True, flags=re.I, at=("aws",)),
    _r("anthropic_api_key", _B + r"sk-ant-[A-Za-z0-9_\-]{20,}", ("sk-ant-",), at=("sk-ant-",)),
    _r("openai_api_key", _B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,}", ("sk-",), check=_mixed,
       at=("sk-",)),
    _r("google_api_key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, ("AIza",)),
    _r("google_oauth_client_secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{20,}", ("GOCSPX-",)),
    _r("google_oauth_access_token", _B + r"ya29\.[A-Za-z0-9_\-]{20,}", ("ya29.",)),
    _r("azure_storage_key",
       r"(?:AccountKey|SharedAccessKey|SharedSecretValue)\s*=\s*(?P<s>[A-Za-z0-9+/]{20,}={0,2})",
       ("accountkey", "sharedaccesskey", "sharedsecretvalue"), fold=True, flags=re.I),
    _r("azure_sas_signature", r"[?&]sig=(?P<s>[A-Za-z0-9%+/=]{20,})", ("sig=",)),
    _r("azure_client_secret", _B + r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}" + _E, ("Q~",)),
    _r("github_token", _B + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}" + _E,
       ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    _r("github_token", _B + r"github_pat_[A-Za-z0-9_]{22,255}", ("github_pat_",)),
    _r("gitlab_token", _B + r"gl(?:pat|dt|rt|ptt|cbt|imt|soat|ft|oas)-[A-Za-z0-9_\-]{20,}",
       ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "glsoat-", "glft-", "gloas-")),
    _r("bitbucket_token", _B + r"ATBB[A-Za-z0-9_\-=]{28,}", ("ATBB",)),
    _r("atlassian_api_token", _B + r"ATATT[A-Za-z0-9_\-=]{20,}", ("ATATT",)),
    _r("huggingface_token", _B + r"hf_[A-Za-z0-9]{30,}" + _E, ("hf_",), check=_mixed),
    _r("slack_token", _B + r"xox[abposre]-[A-Za-z0-9\-]{10,}", ("xox",)),
    _r("slack_token", _B + r"xapp-\d-[A-Za-z0-9\-]{10,}", ("xapp-",)),
    _r("slack_webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}",
       ("hooks.slack.com",)),
    _r("stripe_key", _B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",
       ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_")),
    _r("stripe_key", _B + r"whsec_[A-Za-z0-9]{20,}", ("whsec_",)),
    _r("npm_token", _B + r"npm_[A-Za-z0-9]{36}" + _E, ("npm_",)),
    _r("pypi_token", _B + r"pypi-AgE[A-Za-z0-9_\-]{40,}", ("pypi-AgE",)),
    _r("sendgrid_api_key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}", ("SG.",)),
    _r("groq_api_key", _B + r"gsk_[A-Za-z0-9]{40,}", ("gsk_",)),
    _r("xai_api_key", _B + r"xai-[A-Za-z0-9]{40,}", ("xai-",)),
    _r("perplexity_api_key", _B + r"pplx-[A-Za-z0-9]{40,}", ("pplx-",)),
    _r("replicate_token", _B + r"r8_[A-Za-z0-9]{37,}", ("r8_",)),
    _r("digitalocean_token", _B + r"do[opr]_v1_[a-f0-9]{64}", ("_v1_",)),
    _r("shopify_token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", ("shpat_", "shpca_", "shppa_", "shpss_")),
    _r("databricks_token", _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E, ("dapi",)),
    _r("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", ("eyJ",)),
    # Credentials in URLs and connection strings: the password of scheme://user:password@host.
    _r("url_password",
       r"\b[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@\"'<>\\]{0,128}:(?P<s>[^\s@/\"'<>\\]{1,256})@",
       ("://",), check=_userinfo_ok, at=("://",), back=21),
    _r("connection_string_password",
       r"(?<![A-Za-z0-9_])(?:password|pwd)\s*=\s*(?P<s>[^\s;\"'&,]{3,})",
       ("password=", "pwd=", "password =", "pwd ="), fold=True, flags=re.I, check=_userinfo_ok,
       at=("password", "pwd")),
    _r("bearer_token", r"\bbearer\s+(?P<s>[A-Za-z0-9._~+/=\-]{16,})", ("bearer",), fold=True, flags=re.I,
       check=_bearer_ok, at=("bearer",)),
    _r("basic_auth", r"\bbasic\s+(?P<s>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", ("basic",), fold=True,
       flags=re.I, check=_basic_ok, at=("basic",)),
    # "-u" starts at most two characters after the match does (" --user").
    _r("basic_auth", r"(?:^|\s)(?:-u|--user)(?:\s+|=)[\"']?[^\s:\"']{1,64}:(?P<s>[^\s\"']{3,})",
       ("-u", "--user"), check=_userinfo_ok, at=("-u",), back=2),
)

# A name that says "credential", then an assignment: env (NAME=v), shell
# (export NAME=v), YAML (name: v), JSON ("name": "v"), code (name = "v"),
# flags (--api-key v / --token=v). Keyword hits are found with str.find (C
# speed); only around a hit is the name delimited and the value matched.
_ASSIGN_TRIGGERS = ("key", "token", "secret", "pass", "pwd", "credential", "auth", "signature", "sas")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_REST = re.compile(r"[A-Za-z0-9_.\-]*")
_VALUE = re.compile(
    r"(?P<sep>\\?[\"']?[ \t]{0,3}(?P<op>:=|=>|[:=])?[ \t]{0,3}\\?)(?P<q>[\"'`]?)"
    r"(?P<s>[^\s\"'`,;&|<>(){}\[\]\\]{3,512})"
)
_MAX_NAME = 80
# Where a secret name can end in lowered ASCII text: one of its endings closing a run
# of name characters (trailing dots and dashes are not part of a name). A name
# _assignments judges secret, or a dict key that is_secret_name accepts, ends so.
_NAME_END = re.compile(
    "(?:" + "|".join(sorted(_SECRET_NAME_ENDS, key=len, reverse=True)) + r")[.\-]*(?![a-z0-9_.\-])"
)


def _assignment_may_hold(text: str, low: str) -> bool:
    """Whether ``text`` (``low`` lowered) can hold a name that says its value is a credential.

    In ASCII text a secret name is a run of name characters whose lowered end is
    one of :data:`_SECRET_NAME_ENDS` (a dict key: the whole string, quotes and
    spaces stripped); without such an end nothing can be a secret assignment, so
    a word such as ``passes`` or ``keyboard`` costs no name scan. Other text keeps
    the plain trigger test (``low`` folds characters past ASCII that
    :func:`is_secret_name` judges as they are).
    """
    # Every ending holds a trigger: the substring scans (the cheapest test) first.
    for t in _ASSIGN_TRIGGERS:
        if t in low:
            break
    else:
        return False
    return not text.isascii() or _NAME_END.search(low) is not None


def _assignments(text: str, low: str) -> tuple[str, int]:
    """``text`` with the values of secret-named assignments replaced, and how many were.

    ``low`` is ``text`` lowered with its positions kept (:func:`~rematch_trace.host.casefold.lowered`):
    a trigger found in it is read as a name at the same place in ``text``.
    """
    names: set[tuple[int, int]] = set()
    for trig in _ASSIGN_TRIGGERS:
        i = low.find(trig)
        while i >= 0:
            m = _NAME_REST.match(text, i)
            e = m.end() if m else i + len(trig)
            while e > i and text[e - 1] in ".-":
                e -= 1
            b = i
            while b > 0 and i - b < _MAX_NAME and text[b - 1] in _NAME_CHARS:
                b -= 1
            names.add((b, e))
            i = low.find(trig, e if e > i else i + 1)
    spans: list[tuple[int, int]] = []
    for b, e in sorted(names):
        name = text[b:e]
        if not is_secret_name(name.lstrip("-.")):
            continue
        m = _VALUE.match(text, e)
        if m is None:
            continue
        sep = m.group("sep")
        # Whitespace alone joins a flag to its value (--token abc), never a prose word.
        if m.group("op") is None and not (name.startswith("-") and sep[:1] in " \t"):
            continue
        if not looks_secret_value(name, m.group("s")):
            continue
        spans.append(m.span("s"))
    if not spans:
        return text, 0
    out: list[str] = []
    pos = count = 0
    for s, e in spans:
        if s < pos:
            continue
        out.append(text[pos:s])
        out.append(PLACEHOLDER.format("secret_assignment"))
        pos = e
        count += 1
    out.append(text[pos:])
    return "".join(out), count


@attrs.define
class Redactor:
    """Replaces credentials with typed placeholders; stateless, safe to share.

    :param rules: the format rules, run in order.
    :param assignments: also redact high-entropy values assigned to secret-like names.
    """

    rules: tuple[Rule, ...] = RULES
    assignments: bool = True
    _exact: tuple[tuple[str, tuple[Rule, ...]], ...] = attrs.field(init=False)
    _folded: tuple[tuple[str, tuple[Rule, ...]], ...] = attrs.field(init=False)
    _memo: dict[int, tuple[Any, Any, int]] = attrs.field(init=False, factory=dict)
    _text_memo: dict[str, tuple[str, int]] = attrs.field(init=False, factory=dict, eq=False, repr=False)
    _exact_scan: re.Pattern[str] = attrs.field(init=False)
    _exact_rules: dict[str, frozenset[int]] = attrs.field(init=False)
    _one_line: bool = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        exact: dict[str, list[Rule]] = {}
        folded: dict[str, list[Rule]] = {}
        for rule in self.rules:
            for t in rule.triggers:
                (folded if rule.fold else exact).setdefault(t, []).append(rule)
        self._exact = tuple((t, tuple(rs)) for t, rs in exact.items())
        self._folded = tuple((t, tuple(rs)) for t, rs in folded.items())
        # One scan finds every case-sensitive trigger (longest first). A trigger
        # found also stands for the shorter triggers inside it, whose matches it hides.
        triggers = sorted(exact, key=len, reverse=True)
        self._exact_scan = re.compile(_trie_pattern(triggers) or r"(?!)")
        self._exact_rules = {
            t: frozenset(id(r) for u, rs in exact.items() if u in t for r in rs) for t in triggers
        }
        # No trigger spans lines: a scan of an input's strings joined by newlines finds, within
        # each string, what a scan of that string alone finds (see _exact_found).
        self._one_line = all("\n" not in t for t in triggers)

    def _candidates(self, text: str, low: str, found: list[str] | None = None) -> list[Rule]:
        """The rules to run on ``text``: those of the triggers in it (``found``: the exact ones, when known)."""
        hit: set[int] = set()
        if found is None:
            scan = self._exact_scan
            # Most text holds no trigger: a search, which builds nothing, tells so (findall is empty then).
            # Else the search found the first match: findall goes on from there (it found nothing before).
            first = scan.search(text)
            found = scan.findall(text, first.start()) if first is not None else []
        for t in set(found):
            hit.update(self._exact_rules[t])
        if self._folded:
            for t, rs in self._folded:
                if t in low:
                    hit.update(id(r) for r in rs)
        return [r for r in self.rules if id(r) in hit] if hit else []

    def _exact_found(self, parts: list[str], text: str, first: re.Match[str] | None) -> dict[int, list[str]] | None:
        """What the exact-trigger scan finds in each of ``parts`` (by id), from one scan of ``text``.

        ``text`` is ``parts`` joined by newlines (and maybe more lines after them), ``first``
        the scan's first match in it. No match spans a newline, and the scan reaches each part
        with no match under way, so the matches within a part are those a scan of it alone finds.
        """
        if not self._one_line:
            return None
        found: dict[int, list[str]] = {id(p): [] for p in parts}
        if first is None:
            return found
        n, i = len(parts), 0
        end = len(parts[0]) if parts else 0  # where part i ends in text (its newline)
        for m in self._exact_scan.finditer(text, first.start()):
            at = m.start()
            while i < n and at >= end:
                i += 1
                if i < n:
                    end += 1 + len(parts[i])
            if i >= n:
                break  # past the parts
            found[id(parts[i])].append(m.group())
        return found

    def _may_hold(self, text: str) -> bool:
        """Whether any rule's or secret name's trigger occurs in ``text`` at all."""
        return self._exact_scan.search(text) is not None or self._may_hold_folded(text)

    def _may_hold_folded(self, text: str) -> bool:
        """Whether a case-folded rule trigger or a secret name's trigger occurs in ``text``."""
        low = lowered(text)  # as _redact lowers it
        for t, _rules in self._folded:
            if t in low:
                return True
        return _assignment_may_hold(text, low)

    def redact(self, text: str) -> tuple[str, int]:
        """``text`` with every credential replaced, and how many were."""
        return self._redact_known(text, None)

    def _redact_known(self, text: str, found: list[str] | None) -> tuple[str, int]:
        """:meth:`redact`, the exact triggers in ``text`` given when known (see :meth:`_exact_found`)."""
        if not isinstance(text, str) or len(text) < 8:
            return text, 0
        # The trace and the events redact the same texts in turn (a prompt, a
        # command and its summary): remember the last few results.
        hit = self._text_memo.get(text)
        if hit is not None:
            return hit
        result = self._redact(text, found)
        if len(text) <= _TEXT_MEMO_CHARS:
            if len(self._text_memo) >= _TEXT_MEMO_SIZE:
                self._text_memo.clear()
            self._text_memo[text] = result
        return result

    def _redact(self, text: str, found: list[str] | None = None) -> tuple[str, int]:
        count = 0
        # One lowering for the triggers, the gates and the secret names: every trigger is ASCII, the
        # rules match case-insensitively (so the four characters folding to ASCII letters are folded
        # first, as they match), and _assignments reads names at its positions, which are text's.
        low = lowered(text)
        stale = False  # a rule replaced part of text since low was made
        for rule in self._candidates(text, low, found):
            if rule.gate is not None:
                if stale:
                    low, stale = lowered(text), False
                if not occurs(rule.gate, text, low):
                    continue  # no match anywhere: the rule would leave the text as it is
            text, n = _apply(rule, text)
            if n:
                count += n
                stale = True
        if self.assignments:
            if stale:
                low = lowered(text)
            if _assignment_may_hold(text, low):
                text, n = _assignments(text, low)
                count += n
        return text, count

    def redact_text(self, text: str) -> str:
        """``text`` with every credential replaced."""
        return self.redact(text)[0]

    def redact_value(self, value: Any) -> Any:
        """A copy of ``value`` with every string inside (dicts, lists) redacted; keys kept."""
        return self.redact_value_counted(value)[0]

    def redact_value_counted(self, value: Any) -> tuple[Any, int]:
        """:meth:`redact_value` and the number of redactions made.

        A string under a secret-like key (``"OPENAI_API_KEY": "..."``,
        ``"Authorization": "..."``) is redacted whole when it looks like a
        credential, since the key that says so is not part of the string.

        A dict, list or tuple none of whose strings or keys holds any rule's or
        secret name's trigger is returned itself (not a copy), so ``out is
        value`` tells that no string inside it, alone, has anything to redact.
        """
        # The trace and the event stream redact the same tool input one after
        # the other: remember the last few by identity (holding the object, so
        # its id cannot be reused while it is remembered).
        key = id(value)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is value:
            return hit[1], hit[2]
        counter = [0]
        out: Any  # the value itself or its redacted copy, whatever its type
        if isinstance(value, dict | list | tuple):
            strings = input_strings(value)
            text = strings.trigger_text()
            first = self._exact_scan.search(text)
            if first is None and not self._may_hold_folded(text):
                out = value  # no trigger anywhere, keys included: nothing to redact, nothing to copy
            else:
                # The scan of the joined strings tells each string's exact triggers: none is scanned again.
                out = self._value(value, None, counter, 0, self._exact_found(strings.parts, text, first))
        else:
            out = self._value(value, None, counter, 0, None)
        if len(self._memo) >= 16:
            self._memo.clear()
        self._memo[key] = (value, out, counter[0])
        return out, counter[0]

    def _value(self, value: Any, key: str | None, counter: list[int], depth: int,
               found: dict[int, list[str]] | None) -> Any:
        t = type(value)
        if t is str:
            if key is not None and is_secret_name(key) and looks_secret_value(key, value):
                counter[0] += 1
                return PLACEHOLDER.format("secret_assignment")
            # A string of the input has its triggers in found; a joined one (below) is scanned.
            red, n = self._redact_known(value, found.get(id(value)) if found is not None else None)
            counter[0] += n
            return red
        if t is dict:
            if depth > _MAX_DEPTH:  # deeper than any real input: redact its strings, joined, whole
                return self._value(_joined(value), None, counter, 0, found)
            return {k: self._value(v, k if isinstance(k, str) else None, counter, depth + 1, found)
                    for k, v in value.items()}
        if t is list or t is tuple:
            if depth > _MAX_DEPTH:
                return self._value(_joined(value), None, counter, 0, found)
            return [self._value(v, None, counter, depth + 1, found) for v in value]
        return value


_MAX_DEPTH = 200
_TEXT_MEMO_SIZE = 32
_TEXT_MEMO_CHARS = 32 * 1024


def _joined(value: Any) -> str:
    """Every string (and key) under ``value``, newline-joined, without recursion."""
    parts: list[str] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            parts.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                parts.append(str(k))
                stack.append(x)
        elif isinstance(v, list | tuple):
            stack.extend(reversed(v))
        else:
            parts.append(repr(v))
    return "\n".join(parts)


def _trie_pattern(words: list[str]) -> str:
    """A pattern matching any of ``words``, the longest one where several start at one place.

    It finds what ``"|".join(longest first)`` finds, match for match, but as a
    prefix tree: at each position the engine follows one branch per character
    instead of trying every word in turn, several times faster on text that
    holds none of them (most text).
    """
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here

    def emit(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        # A greedy optional tail prefers the longer word, as the longest-first alternation does.
        return f"(?:{body})?" if "" in node else body

    return emit(root)


def _apply(rule: Rule, text: str) -> tuple[str, int]:
    count = 0
    placeholder = PLACEHOLDER.format(rule.kind)
    has_group = "s" in rule.pattern.groupindex

    def sub(m: re.Match[str]) -> str:
        nonlocal count
        whole = m.group(0)
        if has_group:
            part = m.group("s")
            if part.startswith(_PLACEHOLDER_START) or not rule.check(part):
                return whole
            count += 1
            start, end = m.span("s")
            base = m.start()
            return whole[: start - base] + placeholder + whole[end - base :]
        if whole.startswith(_PLACEHOLDER_START) or not rule.check(whole):
            return whole
        count += 1
        return placeholder

    return rule.pattern.sub(sub, text), count


@cache
def default_redactor() -> Redactor:
    """The shared redactor with every rule (built once)."""
    return Redactor()


#: Every placeholder kind a redactor may write.
KINDS: tuple[str, ...] = tuple(dict.fromkeys([r.kind for r in RULES] + ["secret_assignment"]))

def _holds_credential(text: str) -> bool:
    """Whether the redactor finds a credential in ``text`` (an id, say)."""
    return len(text) >= 8 and default_redactor().redact(text)[1] > 0


# The host checks every id a plugin fills with this (host/ids.py): an id that holds a credential is not kept.
register_credential_check(_holds_credential)

__all__ = [
    "KINDS",
    "PLACEHOLDER",
    "RULES",
    "Redactor",
    "Rule",
    "default_redactor",
    "is_secret_name",
    "looks_secret_value",
    "shannon_entropy",
]
