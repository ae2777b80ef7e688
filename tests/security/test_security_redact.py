"""The shared redactor: every supported kind fires, look-alikes do not."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rematch_trace.security import redact as _redact_mod
from rematch_trace.security.redact import KINDS, default_redactor

R = default_redactor()

#: The characters Unicode case folding lets match an ASCII letter, folded (the reference lowering).
_FOLD_TABLE = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})

# (kind, text holding the secret, the secret itself)
SECRETS: list[tuple[str, str, str]] = [
    ("aws_access_key_id", "key id AKIAQ3EGRTYU7ZXCVBNM here", "AKIAQ3EGRTYU7ZXCVBNM"),
    ("aws_secret_access_key", "aws_secret_access_key = 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", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lw3Tk9p"),
    # Without "=": a command's argument, a CSV credentials row after its key id, JSON from ``aws sts``.
    ("aws_secret_access_key", "aws configure set aws_secret_access_key Hq3vN8rT1zK5wM0pB7xC2jF9gL4sD6aE/yU+iO1e",
     "Hq3vN8rT1zK5wM0pB7xC2jF9gL4sD6aE/yU+iO1e"),
    ("aws_secret_access_key", "ci-bot,,AKIAW7EXAMPLE2QRSTUV,Zr8pQ2mX7vL9nT4kW1yB6cH3dF5gJ0sA/uE+oI2q,https://x.signin",
     "Zr8pQ2mX7vL9nT4kW1yB6cH3dF5gJ0sA/uE+oI2q"),
    ("aws_secret_access_key", '{"AccessKeyId": "ASIAW7EXAMPLE2QRSTUV", "SecretAccessKey": "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"}',
     "Pm4Kx9Tq2Lw7Rz1Vb8Nc3Hd6Fg0Js5Ya+Eu/Io2r"),
    ("google_api_key", "key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ("gcp_private_key_id", '"private_key_id": "0123456789abcdef0123456789abcdef01234567"', "0123456789abcdef0123456789abcdef01234567"),
    ("private_key", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"),
    ("azure_storage_key", "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4MTIzNA==;", "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4MTIzNA=="),
    ("azure_sas_signature", "https://acct.blob.core.windows.net/c/b?sv=2022&sig=aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1v%3D", "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1v%3D"),
    ("azure_client_secret", "secret abc8Q~dEfGhIjKlMnOpQrStUvWxYz012345678_x end", "abc8Q~dEfGhIjKlMnOpQrStUvWxYz012345678_x"),
    ("github_token", "token ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    ("github_token", "github_pat_11ABCDEFG0aB3dE5fG7hI9_jK1lM3nO5pQ7rS9tU1vW3xY5zA7", "github_pat_11ABCDEFG0aB3dE5fG7hI9_jK1lM3nO5pQ7rS9tU1vW3xY5zA7"),
    ("gitlab_token", "glpat-aB3dE5fG7hI9jK1lM3nO", "glpat-aB3dE5fG7hI9jK1lM3nO"),
    ("bitbucket_token", "ATBBaB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3", "ATBBaB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3"),
    ("openai_api_key", "sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "sk-proj-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    ("anthropic_api_key", "sk-ant-api03-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "sk-ant-api03-aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    ("huggingface_token", "hf_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3x", "hf_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3x"),
    ("slack_token", "xoxb-1234567890-0987654321-aB3dE5fG7hI9", "xoxb-1234567890-0987654321-aB3dE5fG7hI9"),
    ("slack_webhook", "https://hooks.slack.com/services/T00000000/B00000000/aB3dE5fG7hI9jK1lM3nO5pQ7", "T00000000/B00000000/aB3dE5fG7hI9jK1lM3nO5pQ7"),
    ("stripe_key", "sk_live_aB3dE5fG7hI9jK1lM3nO5pQ7", "sk_live_aB3dE5fG7hI9jK1lM3nO5pQ7"),
    ("npm_token", "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", "npm_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ("bearer_token", "Authorization: Bearer aB3dE5fG7hI9jK1lM3nO5pQ7", "aB3dE5fG7hI9jK1lM3nO5pQ7"),
    ("basic_auth", 'curl -H "Authorization: Basic dXNlcjpzM2NyM3RQYXNz"', "dXNlcjpzM2NyM3RQYXNz"),
    ("basic_auth", "curl -u admin:s3cr3tPass https://x", "s3cr3tPass"),
    ("url_password", "git clone https://bob:Tr0ub4dor3xyz@git.example.com/r.git", "Tr0ub4dor3xyz"),
    ("url_password", "mongodb+srv://app:Pa55w0rdQz@cluster0.example.net/db", "Pa55w0rdQz"),
    ("url_password", "redis://:R3disPassw0rd@cache:6379/0", "R3disPassw0rd"),
    ("connection_string_password", "host=db user=app password=Qz9xLw2p dbname=prod", "Qz9xLw2p"),
    ("secret_assignment", "export SERVICE_TOKEN=q8Zk2LmN4pR7sT1vX3yB6cD9", "q8Zk2LmN4pR7sT1vX3yB6cD9"),
    ("secret_assignment", 'client_secret: "q8Zk2LmN4pR7sT1vX3yB6cD9"', "q8Zk2LmN4pR7sT1vX3yB6cD9"),
    ("secret_assignment", '{"webhookSecret": "q8Zk2LmN4pR7sT1vX3yB6cD9"}', "q8Zk2LmN4pR7sT1vX3yB6cD9"),
    ("secret_assignment", "DB_PASSWORD=hunter22x", "hunter22x"),
    ("secret_assignment", "mytool --api-key q8Zk2LmN4pR7sT1vX3yB6cD9", "q8Zk2LmN4pR7sT1vX3yB6cD9"),
]

NOT_SECRETS = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "session 123e4567-e89b-12d3-a456-426614174000",
    "request_id = 123e4567-e89b-12d3-a456-426614174000",
    "the key is to use sk-learn for this",
    "Basic configuration options are documented",
    "password: str",
    "max_tokens=4096",
    "api_key = os.environ['API_KEY']",
    "OPENAI_API_KEY=${OPENAI_API_KEY}",
    "postgres://user@localhost:5432/db",
    "http://localhost:8080/path",
    "sort_key = 'a_rather_long_identifier_name'",
    "Bearer tokens are documented in RFC 6750",
]


@pytest.mark.parametrize(("kind", "text", "secret"), SECRETS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRETS)])
def test_each_kind_is_redacted(kind: str, text: str, secret: str) -> None:
    out, n = R.redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert n >= 1


def test_every_kind_has_a_case() -> None:
    covered = {k for k, _, _ in SECRETS}
    # Provider formats without a dedicated case above share the token mechanics tested there.
    untested = set(KINDS) - covered
    assert untested <= {
        "google_oauth_client_secret", "google_oauth_access_token", "atlassian_api_token", "pypi_token",
        "sendgrid_api_key", "groq_api_key", "xai_api_key", "perplexity_api_key", "replicate_token",
        "digitalocean_token", "shopify_token", "databricks_token",
    }


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_are_kept(text: str) -> None:
    assert R.redact(text) == (text, 0)


@pytest.mark.parametrize("text", [
    "AKIAQ3EGRTYU7ZXCVBNM at commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "AKIAQ3EGRTYU7ZXCVBNM sha1 3F786850E387550FDAB836ED7E6DC881DE23001B",
    "AKIAQ3EGRTYU7ZXCVBNM in /usr/local/lib/python3.11/site-packages/x",
    "aws_secret_access_key 3f786850e387550fdab836ed7e6dc881de23001b",
])
def test_an_aws_secret_is_not_a_hex_digest_or_a_path_near_a_key_id(text: str) -> None:
    """Near a key id or after the name, a git SHA (40 hex digits) or a path is not a secret access key."""
    out, _ = R.redact(text)
    assert "[REDACTED:aws_secret_access_key]" not in out
    assert text.split()[-1] in out


def test_context_is_kept_around_the_placeholder() -> None:
    out, _ = R.redact("Authorization: Bearer aB3dE5fG7hI9jK1lM3nO5pQ7 ok")
    assert out == "Authorization: Bearer [REDACTED:bearer_token] ok"


def test_counts_every_redaction() -> None:
    text = "a AKIAQ3EGRTYU7ZXCVBNM b ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5 c AKIAQ3EGRTYU7ZXCVBNZ"
    out, n = R.redact(text)
    assert n == 3
    assert out.count("[REDACTED:") == 3


def test_redact_value_copies_and_keeps_keys() -> None:
    value = {
        "command": "curl -H 'Authorization: Bearer aB3dE5fG7hI9jK1lM3nO5pQ7' x",
        "env": {"OPENAI_API_KEY": "q8Zk2LmN4pR7sT1vX3yB6cD9", "HOME": "/home/u"},
        "list": ["ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5", 3, None],
    }
    out, n = R.redact_value_counted(value)
    assert n == 3
    assert set(out) == set(value) and set(out["env"]) == {"OPENAI_API_KEY", "HOME"}
    assert out["env"]["HOME"] == "/home/u"
    assert out["list"][1:] == [3, None]
    assert "q8Zk2LmN4pR7sT1vX3yB6cD9" not in str(out)
    assert value["env"]["OPENAI_API_KEY"] == "q8Zk2LmN4pR7sT1vX3yB6cD9"  # the original is untouched
    assert R.redact_value(value) == out


def test_redaction_is_idempotent() -> None:
    for _, text, _ in SECRETS:
        once = R.redact_text(text)
        assert R.redact(once) == (once, 0)


def test_deep_values_do_not_crash() -> None:
    value: object = "AKIAQ3EGRTYU7ZXCVBNM"
    for _ in range(2000):
        value = [value]
    out = R.redact_value(value)
    assert "AKIAQ3EGRTYU7ZXCVBNM" not in str(out)


# The secret-name pre-check (_assignment_may_hold) skips only what cannot hold a secret
# assignment: with it replaced by "always scan", every text and input redacts alike.

_NAME_PARTS = ["API", "_key", "KEY", "keys", "Token", "tokens", "secret", "PASSWORD", "passwd", "passphrase", "pwd",
               "pass", "passes", "credential", "auth", "author", "Authorization", "signature", "sas", "private_key",
               "apikey", "monkey", "max_tokens", "db", "x", "-", ".", "_", "--"]
_GLUE = [" ", "=", ": ", ":=", "=>", '"', "'", '": "', "\\", "\n", "\t", ",", ";", "(", "export ", "-", ".", "İ", "K",
         "é", "ß"]
_VALUES = ["hunter22", "s3cr3tPassw0rd", "aB3dE5fG7hI9jK1lM3nO5pQ7", "${TOKEN}", "xyz", "changeme", "0123456789"]
_texts = st.lists(st.sampled_from(_NAME_PARTS + _GLUE + _VALUES), max_size=14).map("".join)
_inputs = st.dictionaries(_texts, _texts | st.lists(_texts, max_size=3), max_size=4)


@settings(max_examples=400)
@given(_texts, _inputs)
def test_the_secret_name_precheck_changes_nothing(text: str, tool_input: dict[str, Any]) -> None:
    checked = _redact_mod.Redactor()
    got_text, got_value = checked.redact(text), checked.redact_value_counted(tool_input)
    original = _redact_mod._assignment_may_hold
    _redact_mod._assignment_may_hold = lambda text, low: True
    try:
        scanning = _redact_mod.Redactor()
        assert got_text == scanning.redact(text)
        assert got_value == scanning.redact_value_counted(tool_input)
    finally:
        _redact_mod._assignment_may_hold = original


def test_the_secret_name_precheck_skips_words_that_only_contain_a_trigger() -> None:
    from rematch_trace.security.redact import _assignment_may_hold

    assert not _assignment_may_hold("it passes the keyboard author", "it passes the keyboard author")
    assert _assignment_may_hold("DB_PASS=x", "db_pass=x") and _assignment_may_hold("api-key.-", "api-key.-")
    assert _assignment_may_hold("İpasses", "i̇passes")  # not ASCII: the plain trigger test


# A rule's gate (its pattern tried only near its anchors) finds a match exactly when the
# pattern's own search does: texts the pattern matches, run together with near misses.
_GATED = [r for r in _redact_mod.RULES if r.gate is not None]
_NOISE = st.sampled_from([" ", "  ", "\t", "\n", "-", "--", "=", ":", "://", "@", "'", '"', "u", "-u", "--user", "x",
                          "sk-", "aws", "AWS", "Basic", "bearer", "PASSWORD", "pwd", "http", "ſ", "K", "İ", "ı", "é"])


@st.composite
def _gate_texts(draw: st.DrawFn) -> tuple[Any, str]:
    rule = draw(st.sampled_from(_GATED))
    piece = st.one_of(st.from_regex(rule.pattern), _NOISE, st.text(max_size=4))
    text = "".join(draw(st.lists(piece, min_size=1, max_size=5)))
    if text and draw(st.booleans()):  # a near miss: one place cut or changed
        i = draw(st.integers(0, len(text) - 1))
        text = text[:i] + draw(st.sampled_from(["", " ", "-", "x", "\n", ":"])) + text[i + draw(st.integers(0, 3)):]
    return rule, text


def test_the_gated_rules_are_those_with_common_triggers() -> None:
    assert {r.kind for r in _GATED} >= {"basic_auth", "url_password", "openai_api_key", "bearer_token"}


@settings(max_examples=1500, deadline=None)
@given(_gate_texts())
def test_a_rule_gate_finds_a_match_exactly_when_its_pattern_does(case: tuple[Any, str]) -> None:
    from rematch_trace.host.casefold import lowered
    from rematch_trace.security.scan import occurs

    rule, text = case
    assert occurs(rule.gate, text, lowered(text)) == (rule.pattern.search(text) is not None)
    ungated = _redact_mod.Redactor(rules=tuple(attrs.evolve(r, gate=None) for r in _redact_mod.RULES))
    assert _redact_mod.Redactor().redact(text) == ungated.redact(text)


@pytest.mark.parametrize(
    "text",
    ["x" + "a" * 20 + "://user:hunter22@host", " --user=bob:hunter22", "--user bob:hunter22", "-u bob:pw1", "\t-u=a:bcd"],
)
def test_a_rule_gate_reaches_back_to_the_longest_start(text: str) -> None:
    from rematch_trace.host.casefold import lowered
    from rematch_trace.security.scan import occurs

    rule = next(r for r in _GATED if r.pattern.search(text))
    assert rule.gate is not None and occurs(rule.gate, text, lowered(text))
    assert "[REDACTED:" in _redact_mod.Redactor().redact(text)[0]


_TRIGGER_PIECES = st.sampled_from([t for r in _redact_mod.RULES for t in r.triggers] + ["-", "_", "A", "s", "k", " "])


@settings(max_examples=500, deadline=None)
@given(st.lists(_TRIGGER_PIECES | st.text(max_size=3), max_size=12).map("".join))
def test_candidate_rules_are_those_of_every_trigger_found(text: str) -> None:
    # The rules tried are those of every trigger the scan finds in the text (and of the folded ones).
    r = _redact_mod.Redactor()
    low = text.lower()
    hit = {i for t in r._exact_scan.findall(text) for i in r._exact_rules[t]}
    hit |= {id(rule) for t, rs in r._folded if t in low for rule in rs}
    assert r._candidates(text, low) == [rule for rule in r.rules if id(rule) in hit]


@settings(max_examples=400, deadline=None)
@given(st.lists(_TRIGGER_PIECES | st.sampled_from(_NAME_PARTS + _GLUE + _VALUES) | st.text(max_size=3), max_size=14)
       .map("".join), _inputs)
def test_redaction_finds_the_ascii_triggers_as_in_the_lowered_text(text: str, tool_input: dict[str, Any]) -> None:
    # Redaction looks for its triggers in lowered text (short cuts for ASCII text and text with nothing
    # to fold): the same as looking in the text with the four folding characters folded, then lowered.
    got_text, got_value = _redact_mod.Redactor().redact(text), _redact_mod.Redactor().redact_value_counted(tool_input)
    original = _redact_mod.lowered
    _redact_mod.lowered = lambda t: t.translate(_FOLD_TABLE).lower()
    try:
        assert got_text == _redact_mod.Redactor().redact(text)
        assert got_value == _redact_mod.Redactor().redact_value_counted(tool_input)
    finally:
        _redact_mod.lowered = original


_leaf = st.lists(_TRIGGER_PIECES | st.sampled_from(_NAME_PARTS + _GLUE + _VALUES + ["\n", "://u:pw@h", "-u a:bcd"])
                 | st.text(max_size=3), max_size=8).map("".join)
_nested = st.recursive(
    _leaf | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_leaf | st.integers(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=600, deadline=None)
@given(st.lists(_nested, min_size=1, max_size=3) | st.dictionaries(_leaf, _nested, max_size=4))
def test_one_scan_of_an_input_s_joined_strings_finds_each_string_s_triggers(tool_input: Any) -> None:
    # Each string of an input redacted with the triggers the scan of the joined strings found in it,
    # against each string scanned on its own.
    if isinstance(tool_input, list) and tool_input and isinstance(tool_input[0], str):
        tool_input.append(tool_input[0])  # the same string object twice
    got = _redact_mod.Redactor().redact_value_counted(tool_input)
    scanning = _redact_mod.Redactor()
    scanning._one_line = False  # no hints: every string scanned alone
    assert got == scanning.redact_value_counted(tool_input)


@pytest.mark.parametrize("text", ["İİİİ_key", "İİİİİİİİ password", "xİİ_token=abcdef1234567890XYZ"])
def test_text_that_lowers_longer_than_it_is_is_redacted_without_a_crash(text: str) -> None:
    # "İ" lowers to two characters: a trigger found near the end of the lowered text lies past the text's end.
    out, n = _redact_mod.Redactor().redact(text)
    assert isinstance(out, str) and n >= 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Names read at the lowered text's positions: "İ" lowers to two characters, which shifted every
        # name after it (ten of them moved the name off its value, and the credential stayed).
        ("İİİİİİİİİİ API_TOKEN=Zq8vLm2Rt6Yp1Wx4Kd9s trailing",
         "İİİİİİİİİİ API_TOKEN=[REDACTED:secret_assignment] trailing"),
        ("İ" * 30 + " db_password: Zq8vLm2Rt6Yp1Wx4Kd9s", "İ" * 30 + " db_password: [REDACTED:secret_assignment]"),
        # A case-insensitive rule matches a long s as "s": its trigger is looked for where it is folded so.
        ('curl -H "Authorization: Baſic dXNlcjpwYXNzd29yZA==" x', 'curl -H "Authorization: Baſic [REDACTED:basic_auth]" x'),
    ],
)
def test_credentials_after_characters_that_lower_or_fold_unevenly_are_redacted(text: str, expected: str) -> None:
    assert _redact_mod.Redactor().redact(text) == (expected, 1)
    assert _redact_mod.Redactor().redact_value_counted({"command": text}) == ({"command": expected}, 1)
