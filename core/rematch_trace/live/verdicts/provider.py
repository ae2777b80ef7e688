"""Analysis providers: who judges a live call, each with availability and a deadline.

Three modes, as the security seed names them:

- ``localRulesOnly`` (:class:`LocalRulesProvider`): the policy file over the
  normalized event, in-process, in well under a millisecond.
- ``traceRookCloudDemo`` (:class:`DemoProvider`): answers only demo-origin
  requests (adapter ``demo``); for any real session it says it cannot analyse
  it and overrides nothing. Its "analysis" is a canned model answer built from
  the event's risk features and passed through the model-verdict decoder, so
  the decoder is on the live path.
- ``anthropicBYOK`` (:class:`AnthropicBYOKProvider`): an extension point only.
  It would send the *redacted* event (never the original input) to a model with
  the user's own key and decode the answer with
  :func:`~rematch_trace.live.verdicts.model.decode_model_verdict`; this build
  has no network path, so it reports itself unavailable and the service will
  not start with it.

A provider that misses its deadline or raises gives no verdict: the service
answers ``no_override`` with the reason, never a silent pass.
"""

from __future__ import annotations

import json
from typing import Literal, Protocol

import attrs

from rematch_trace.live.ipc.messages import Request
from rematch_trace.live.verdicts.action import LiveAction
from rematch_trace.live.verdicts.model import ModelVerdict, decode_model_verdict
from rematch_trace.live.verdicts.policy import Policy
from rematch_trace.security.risk import severity

VerdictDecision = Literal["no_override", "deny", "hold"]
#: The modes a provider can run in.
MODES: tuple[str, ...] = ("localRulesOnly", "traceRookCloudDemo", "anthropicBYOK")


@attrs.frozen
class Availability:
    """Whether a provider can answer now, and if not, why."""

    available: bool
    reason: str = ""


@attrs.frozen
class Verdict:
    """A provider's answer: ``hold`` asks the service to wait for an approval.

    :param reason: a short code (``policy:<rule id>``, ``no_rule_matched``...).
    :param source: the reply's ``decision_source``.
    """

    decision: VerdictDecision
    reason: str
    explanation: str
    source: str
    approval_timeout_s: float = 0.0


class ProviderUnavailable(RuntimeError):
    """The provider cannot analyse anything in this build or right now."""


class AnalysisProvider(Protocol):
    """What the service asks of a provider."""

    mode: str

    def availability(self) -> Availability:
        """Whether :meth:`analyze` can answer."""

    def analyze(self, action: LiveAction, request: Request, deadline: float) -> Verdict:
        """The verdict on ``action`` before ``deadline`` (monotonic seconds)."""


class LocalRulesProvider:
    """``localRulesOnly``: the first matching rule of a :class:`Policy` decides."""

    mode = "localRulesOnly"

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def availability(self) -> Availability:
        """Always available: it needs nothing outside this process."""
        return Availability(True)

    def analyze(self, action: LiveAction, request: Request, deadline: float) -> Verdict:
        """The first matching rule's decision, else the policy's default."""
        rule = self.policy.first_match(action)
        if rule is None:
            return Verdict(self.policy.default, "no_rule_matched",
                           f"No rule of {self.policy.source} matched.", "local_rules")
        return Verdict(rule.decision, f"policy:{rule.id}", rule.explanation or f"Rule {rule.id} matched.",
                       "local_rules", self.policy.approval_timeout_s)


class DemoProvider:
    """``traceRookCloudDemo``: canned analysis for demo-origin requests only."""

    mode = "traceRookCloudDemo"
    #: The adapter name that marks a demo-origin request.
    DEMO_ADAPTER = "demo"

    def availability(self) -> Availability:
        """Available (it answers from fixtures), for demo-origin requests only."""
        return Availability(True, "demo-origin requests only")

    def canned_answer(self, action: LiveAction) -> str:
        """The fixture "model answer" for ``action``: deny past a severity, from its features."""
        feats = action.risk_features
        high = severity(feats) >= severity(["credential_in_args"])
        return json.dumps({
            "schema_version": 1,
            "category": "data_exfiltration" if high else "benign",
            "severity": "high" if high else "none",
            "confidence": 0.5,
            "suspicious": high,
            "rationale": "Demo analysis from the event's risk features: " + (", ".join(feats) or "none"),
            "evidence": feats[:8],
            "recommended_action": "deny" if high else "no_override",
            "drift": "unknown",
            "limitations": ["Demo provider: canned answer, no model was consulted."],
        })

    def analyze(self, action: LiveAction, request: Request, deadline: float) -> Verdict:
        """A verdict for a demo request; for a real session, a plain statement that it cannot judge it."""
        if request["adapter"] != self.DEMO_ADAPTER:
            return Verdict("no_override", "demo_provider_real_session",
                           "The demo provider cannot analyse a real session; nothing was judged.", "demo_provider")
        verdict = decode_model_verdict(self.canned_answer(action))
        return from_model(verdict, "demo_provider")


class AnthropicBYOKProvider:
    """``anthropicBYOK``: documented extension point, unavailable in this build (no network path)."""

    mode = "anthropicBYOK"

    def availability(self) -> Availability:
        """Never available here: this build makes no network requests."""
        return Availability(False, "anthropicBYOK is an extension point; this build makes no network requests")

    def analyze(self, action: LiveAction, request: Request, deadline: float) -> Verdict:
        """Always raises :class:`ProviderUnavailable`."""
        raise ProviderUnavailable(self.availability().reason)


def from_model(v: ModelVerdict, source: str) -> Verdict:
    """A service verdict from a decoded model verdict (its recommended action, its rationale)."""
    decision: VerdictDecision = {"deny": "deny", "hold_for_approval": "hold"}.get(v.recommended_action, "no_override")  # type: ignore[assignment]
    return Verdict(decision, f"model:{v.category}", f"{v.severity} ({v.confidence:.2f}): {v.rationale}", source)


def make_provider(mode: str, policy: Policy) -> AnalysisProvider:
    """The provider of ``mode`` (one of :data:`MODES`)."""
    if mode == "localRulesOnly":
        return LocalRulesProvider(policy)
    if mode == "traceRookCloudDemo":
        return DemoProvider()
    if mode == "anthropicBYOK":
        return AnthropicBYOKProvider()
    raise ValueError(f"unknown provider mode {mode!r} (known: {', '.join(MODES)})")


__all__ = [
    "MODES",
    "AnalysisProvider",
    "AnthropicBYOKProvider",
    "Availability",
    "DemoProvider",
    "LocalRulesProvider",
    "ProviderUnavailable",
    "Verdict",
    "from_model",
    "make_provider",
]
