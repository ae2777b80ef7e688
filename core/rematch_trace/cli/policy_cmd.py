"""``rematch policy show``: the live policy in force, each rule with where it comes from."""

from __future__ import annotations

from typing import Any

import click

from rematch_trace.cli.common import Fatal, echo_json


@click.group("policy")
def policy_cmd() -> None:
    """The live service's policy (docs/ipc-v2.md, "The policy file")."""


def _condition(rule: Any) -> dict[str, Any]:
    """The rule's conditions as the file spells them (only those given)."""
    out: dict[str, Any] = {}
    for key in ("tools", "action_types", "any_features", "all_features", "path_globs"):
        v = getattr(rule.when, key)
        if v is not None:
            out[key] = sorted(v)
    for key in ("paths_outside_root", "harness_state_paths"):
        v = getattr(rule.when, key)
        if v is not None:
            out[key] = v
    return out


@policy_cmd.command("show")
@click.option("--policy", type=click.Path(), help="Policy file (default: $REMATCH_POLICY, ~/.config/rematch/policy.yml, the built-in one).")
@click.option("--json", "as_json", is_flag=True, help="Print the policy as JSON.")
def show_cmd(policy: str | None, as_json: bool) -> None:
    """Print the effective policy: its rules in the order they are tried, and where each comes from."""
    from rematch_trace.live.verdicts.policy import BUILT_IN, PolicyError, load_policy

    try:
        p = load_policy(policy)
    except PolicyError as err:
        # A policy file missing or with mistakes is a configuration file with mistakes: exit 2, as `serve` refuses it.
        if len(err.problems) > 1:  # every mistake, each on its line
            raise Fatal("the policy file has mistakes (rematch serve refuses it):", err.problems) from None
        raise Fatal(str(err)) from None
    rules: list[dict[str, Any]] = [
        {
            "id": r.id,
            "decision": r.decision,
            "origin": r.origin,
            "overrides_built_in": r.overrides,
            "explanation": r.explanation,
            "when": _condition(r),
        }
        for r in p.rules
    ]
    if as_json:
        echo_json({
            "source": p.source,
            "default": p.default,
            "approval_timeout_s": p.approval_timeout_s,
            "settings_origin": p.settings_origin,
            "overridden": list(p.overridden),
            "disabled": list(p.disabled),
            "rules": rules,
        })
        return
    click.echo(f"policy: {p.describe()}")
    click.echo(f"default: {p.default}; approval_timeout_s: {p.approval_timeout_s:g} (from {p.settings_origin})")
    click.echo("rules, first match decides:")
    for i, r in enumerate(rules, 1):
        origin = r["origin"] + (" (overrides the built-in rule)" if r["overrides_built_in"] else "")
        click.echo(f"{i:3}. {r['id']}  {r['decision']}  from {origin}")
        if r["explanation"]:
            click.echo(f"     {r['explanation']}")
        when = "; ".join(f"{k}: {', '.join(v) if isinstance(v, list) else str(v).lower()}" for k, v in r["when"].items())
        click.echo(f"     when {when or 'always'}")
    for rid in p.disabled:
        click.echo(f"  -  {rid}  disabled by {p.source} (a {BUILT_IN} rule)")
