"""docs/ipc-v2.md: every example decodes, the first request is answered as it stands, every code is listed."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml
from live_helpers import running_service

from rematch_trace.live import client
from rematch_trace.live.ipc.codec import ERROR_CODES, decode_payload
from rematch_trace.live.ipc.messages import check_control_reply, check_reply, check_request
from rematch_trace.live.verdicts.model import decode_model_verdict
from rematch_trace.live.verdicts.policy import DEFAULT_POLICY, load_policy, parse_policy

DOC = Path(__file__).resolve().parents[2] / "docs" / "ipc-v2.md"
BLOCK = re.compile(r"^```(json|yaml) ([a-z-]+)\n(.*?)^```$", re.M | re.S)


def examples(kind: str) -> list[str]:
    found = [body for _, k, body in BLOCK.findall(DOC.read_text()) if k == kind]
    assert found, f"no {kind} example in {DOC}"
    return found


def test_every_example_is_labelled_with_a_known_kind() -> None:
    kinds = {k for _, k, _ in BLOCK.findall(DOC.read_text())}
    assert kinds == {"request", "reply", "control-reply", "model-verdict", "policy"}
    labelled = len(BLOCK.findall(DOC.read_text()))
    assert labelled == len(re.findall(r"^```(?:json|yaml)", DOC.read_text(), re.M))


@pytest.mark.parametrize("kind", ["request", "reply", "control-reply", "model-verdict"])
def test_every_json_example_decodes(kind: str) -> None:
    check = {"request": check_request, "reply": check_reply, "control-reply": check_control_reply}
    for body in examples(kind):
        if kind == "model-verdict":
            decode_model_verdict(body)
        else:
            check[kind](decode_payload(body.encode()))


def test_policy_example_is_the_built_in_policy() -> None:
    (body,) = examples("policy")
    assert body.strip() == DEFAULT_POLICY.read_text().strip()
    assert parse_policy(yaml.safe_load(body), "doc") == parse_policy(yaml.safe_load(DEFAULT_POLICY.read_text()), "doc")
    assert load_policy().rules  # the default loads


def test_every_error_code_is_documented_with_its_meaning() -> None:
    text = DOC.read_text()
    assert "nonce_reused" in ERROR_CODES  # issue 28: a replayed invocation nonce has its own code
    for code, meaning in ERROR_CODES.items():
        assert f"| `{code}` | {meaning} |" in text, code


def test_every_approval_error_is_documented_with_its_meaning() -> None:
    from rematch_trace.live.approvals import APPROVAL_ERRORS

    text = DOC.read_text()
    for code, meaning in APPROVAL_ERRORS.items():
        assert f"| `{code}` | {meaning} |" in text, code


def test_first_request_example_is_answered_as_it_stands(tmp_path: Path) -> None:
    first = check_request(decode_payload(examples("request")[0].encode()))
    data = tmp_path / "data"
    with running_service(data):
        as_is = client.exchange(client.paths.events_socket(data), dict(first), time.monotonic() + 5, data=data,
                                start=False)
        reply = check_reply(as_is)
        assert (reply["request_id"], reply["decision"], reply["reason"]) == (
            first["request_id"], "no_override", "deadline_passed")
        fresh = client.new_request(first["request_kind"], first["host_payload"], adapter=first["adapter"],
                                   adapter_version=first["adapter_version"], host_version=first["host_version"],
                                   deadline_ms=5000)
        verdict = client.send(fresh, data=data, start=False)
        assert verdict is not None
        assert (verdict["decision"], verdict["reason"]) == ("deny", "policy:credential-to-network")
