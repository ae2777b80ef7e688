"""Deleting the whole file system, the home folder or the repository: every common spelling, both ways.

The features come from the core's risk rules, so an import flags them as the live policy does.
"""

from __future__ import annotations

from typing import Any

import pytest

import rematch_claude_code
from rematch_trace.security.risk import risk_features, strings_of
from rematch_trace.testing import make_host

REPO = "/work/project"

#: (command, the deletion feature it must carry, or None for none of them).
TABLE: list[tuple[str, str | None]] = [
    ("rm -rf /", "root_deletion"),
    ("rm -rf /*", "root_deletion"),
    ("rm -rf --no-preserve-root /", "root_deletion"),
    ("sudo rm -rf /", "root_deletion"),
    ("sudo -u root rm -fr //", "root_deletion"),
    ("find / -delete", "root_deletion"),
    ("find / -exec rm -rf {} +", "root_deletion"),
    ("rm -rf ~", "home_deletion"),
    ("rm -fr ~/", "home_deletion"),
    ("rm -rf ~/*", "home_deletion"),
    ("rm -rf $HOME", "home_deletion"),
    ('rm -rf "$HOME"', "home_deletion"),
    ("rm -Rf ${HOME}/", "home_deletion"),
    ("rm -rf /home/alice", "home_deletion"),
    ('rm -rf "/home/alice/"', "home_deletion"),
    ("rm -rf /Users/alice", "home_deletion"),
    ("rm -rf /root", "home_deletion"),
    ("rm -r -f ~", "home_deletion"),
    ("rm --recursive --force ~", "home_deletion"),
    ("rm -rf -- ~", "home_deletion"),
    ("/bin/rm -rf ~", "home_deletion"),
    ("\\rm -rf ~", "home_deletion"),
    ("FOO=1 rm -rf ~", "home_deletion"),
    ("rm -rf /tmp/x ~", "home_deletion"),
    ("find ~ -delete", "home_deletion"),
    ('bash -c "rm -rf ~"', "home_deletion"),
    ("echo start; rm -rf ~ && echo done", "home_deletion"),
    ("rm -rf .", "repository_deletion"),
    ("rm -rf ./", "repository_deletion"),
    ("rm -rf ./*", "repository_deletion"),
    ("rm -rf *", "repository_deletion"),
    ("rm -rf ..", "repository_deletion"),
    ('rm -rf "$PWD"', "repository_deletion"),
    ("rm -rf $(pwd)", "repository_deletion"),
    ("rm -rf `pwd`", "repository_deletion"),
    (f"rm -rf {REPO}", "repository_deletion"),
    (f"rm -rf {REPO}/", "repository_deletion"),
    ("rm -rf /work", "repository_deletion"),
    ("find . -delete", "repository_deletion"),
    # Not the whole of anything.
    ("rm -rf ~/project/build", None),
    ("rm -rf node_modules", None),
    ("rm -rf ./build", None),
    ("rm -rf /tmp/build", None),
    (f"rm -rf {REPO}/build", None),
    ("rm -rf /home/alice/.cache", None),
    ("rm ~/notes.txt", None),
    ("rm -f .", None),
    ("echo rm -rf ~", None),
    ("git rm -r .", None),
    ("find . -name '*.pyc' -delete", None),
    ("find ~ -type f -name '*.tmp' -delete", None),
    ("cd build && rm -rf *", None),
    ('rm -rf "$DIR"', None),
    ("ls ~ && du -sh .", None),
]
DELETIONS = ("root_deletion", "home_deletion", "repository_deletion")


def _deletions(command: Any, roots: tuple[str, ...] = (REPO,)) -> list[str]:
    tool_input = {"command": command}
    found = risk_features("shell_exec", "Bash", tool_input, strings_of(tool_input), roots=roots)
    return [f for f in found if f in DELETIONS]


@pytest.mark.parametrize(("command", "feature"), TABLE)
def test_deletion_table(command: str, feature: str | None) -> None:
    assert _deletions(command) == ([feature] if feature else [])


def test_an_argv_command_is_read_as_its_script() -> None:
    assert _deletions(["bash", "-lc", "rm -rf $HOME"]) == ["home_deletion"]


def test_the_event_stream_names_the_repository_deletion_by_its_path() -> None:
    """Through the event sink (import and live alike): the session's working folder is a root."""
    from rematch_trace.live.client import new_request
    from rematch_trace.live.verdicts.action import build_action
    from rematch_trace.live.verdicts.policy import DEFAULT_POLICY, load_policy
    from rematch_trace.live.verdicts.provider import LocalRulesProvider

    host = make_host([rematch_claude_code])
    policy = LocalRulesProvider(load_policy(DEFAULT_POLICY))
    for command, reason in ((f"rm -rf {REPO}", "policy:delete-repository"), ("rm -rf ~", "policy:delete-home"),
                            ("rm -rf /*", "policy:delete-root"), ("rm -rf ~/project/build", "no_rule_matched")):
        payload = {"session_id": "s-1", "cwd": REPO, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                   "tool_use_id": "toolu_1", "tool_input": {"command": command}}
        req = new_request("pre_tool_use", payload, adapter="claude_code", adapter_version="1", host_version="1",
                          deadline_ms=1000)
        action = build_action(host, req)
        assert policy.analyze(action, req, 0.0).reason == reason, command
