"""The ``localRulesOnly`` policy: a YAML file of rules over the normalized event.

Which file: ``rematch serve --policy FILE``, else ``$REMATCH_POLICY``, else
``~/.config/rematch/policy.yml`` when it exists, else the built-in
``default_policy.yml`` beside this module (``docs/ipc-v2.md`` shows it and
describes every key). The file is checked whole when loaded: an unknown key, a
feature or action type not in the closed lists, a bad decision, each is a
:class:`PolicyError` naming where, and the service does not start on it.

A user's file **extends** the built-in policy (:func:`merge`): a rule whose id
is a built-in rule's replaces it in place (an override, said in the listing and
in ``rematch serve``'s start line); ``disabled: [ids]`` drops built-in rules;
every other rule of the file comes first, in the file's order, before the
built-in ones. ``default`` and ``approval_timeout_s`` of the file, when given,
replace the built-in values.

A rule's conditions are all optional and all must hold; the first matching
rule decides ``deny``, ``no_override`` or ``hold`` (wait for an approval).
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import Any, Literal, cast

import attrs
import yaml

from rematch_trace.errors import yaml_mistake
from rematch_trace.host.facade import ACTION_TYPES
from rematch_trace.live.verdicts.action import LiveAction, outside
from rematch_trace.live.verdicts.harness_state import in_state_folder, state_roots
from rematch_trace.security.risk import FEATURE_NAMES

RuleDecision = Literal["deny", "no_override", "hold"]
DEFAULT_POLICY = Path(__file__).with_name("default_policy.yml")
_RULE_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,47}")
_WHEN_KEYS = ("tools", "action_types", "any_features", "all_features", "paths_outside_root", "path_globs",
              "harness_state_paths")
#: The origin of a rule of the built-in policy.
BUILT_IN = "built-in"


class PolicyError(ValueError):
    """A policy file that does not follow the format; the message names the file, the line and the key.

    ``problems`` holds every mistake found, one ``file:line: key: reason`` each (the message is the first,
    with how many more: one line for a log); the commands print them all.
    """

    def __init__(self, message: str, problems: list[str] | tuple[str, ...] = ()) -> None:
        self.problems = tuple(problems) or (message,)
        more = len(self.problems) - 1
        super().__init__(message + (f" (and {more} more mistake{'s' if more != 1 else ''})" if more else ""))


class _Lined(dict[str, Any]):
    """A mapping read from the file, with the line of each of its keys (1-based) and of itself."""

    line = 0
    lines: dict[str, int]


def _at(source: str, m: Any, key: str | None = None) -> str:
    """``file:line`` of ``m``'s ``key`` (else of ``m``), or the file alone for a mapping not read from one."""
    if isinstance(m, _Lined):
        return f"{source}:{m.lines.get(key, m.line) if key is not None else m.line}"
    return source


def _loader() -> type[yaml.SafeLoader]:
    """A safe loader whose mappings keep the lines of their keys (for mistakes named with their line)."""

    class Lined(yaml.SafeLoader):
        pass

    def mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> _Lined:
        m = _Lined(cast(dict[str, Any], loader.construct_mapping(node, deep=True)))
        m.line = node.start_mark.line + 1
        m.lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}
        return m

    Lined.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    return Lined


@attrs.frozen
class Condition:
    """What a rule requires (every given part must hold; an empty condition always holds)."""

    tools: frozenset[str] | None = None
    action_types: frozenset[str] | None = None
    any_features: frozenset[str] | None = None
    all_features: frozenset[str] | None = None
    paths_outside_root: bool | None = None
    path_globs: tuple[str, ...] | None = None
    harness_state_paths: bool | None = None

    def holds(self, action: LiveAction) -> bool:
        """Whether ``action`` meets every part of the condition."""
        ev = action.event
        feats = set(ev["risk_features"])
        if self.tools is not None and ev["tool_name"] not in self.tools:
            return False
        if self.action_types is not None and ev["action_type"] not in self.action_types:
            return False
        if self.any_features is not None and not feats & self.any_features:
            return False
        if self.all_features is not None and not self.all_features <= feats:
            return False
        if self.paths_outside_root is not None:
            out = any(outside(p, action.root) for p in action.paths)
            if out != self.paths_outside_root:
                return False
        if self.harness_state_paths is not None:
            roots = state_roots(str(ev["agent"]))
            inside = bool(action.paths) and all(in_state_folder(p, roots) for p in action.paths)
            if inside != self.harness_state_paths:
                return False
        if self.path_globs is not None:
            return any(fnmatch.fnmatchcase(p, g) for p in action.paths for g in self.path_globs)
        return True


@attrs.frozen
class Rule:
    """One rule: an id (the reply's reason is ``policy:<id>``), a decision, why, and when."""

    id: str
    decision: RuleDecision
    explanation: str
    when: Condition
    #: Where the rule comes from: ``built-in`` or the file's path.
    origin: str = BUILT_IN
    #: Whether it replaces the built-in rule of the same id.
    overrides: bool = False


@attrs.frozen
class Policy:
    """A loaded policy: its rules in order, the default decision, the approval timeout, its file."""

    rules: tuple[Rule, ...]
    default: Literal["deny", "no_override"] = "no_override"
    approval_timeout_s: float = 120.0
    source: str = "built-in"
    #: Built-in rules the user's file dropped (``disabled``), and their ids in built-in order.
    disabled: tuple[str, ...] = ()
    #: Where ``default`` and ``approval_timeout_s`` come from.
    settings_origin: str = BUILT_IN

    @property
    def overridden(self) -> tuple[str, ...]:
        """The ids of the built-in rules a user's rule replaces."""
        return tuple(r.id for r in self.rules if r.overrides)

    def describe(self) -> str:
        """One line: the built-in policy, or the user's file over it, with its overrides and disabled rules."""
        if self.source == BUILT_IN:
            return BUILT_IN
        parts = [f"{self.source} over the built-in rules"]
        if self.overridden:
            parts.append(f"overrides {', '.join(self.overridden)}")
        if self.disabled:
            parts.append(f"disables {', '.join(self.disabled)}")
        return "; ".join(parts)
    #: Approvals accepted without the one-time code a person reads on a terminal (docs/threat-model.md).
    approve_without_code: bool = False

    def first_match(self, action: LiveAction) -> Rule | None:
        """The first rule whose condition holds for ``action``, or ``None``."""
        for rule in self.rules:
            if rule.when.holds(action):
                return rule
        return None


def _names(where: str, v: Any, allowed: tuple[str, ...] | None) -> frozenset[str]:
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise PolicyError(f"{where}: a non-empty list of names")
    if allowed is not None:
        for x in v:
            if x not in allowed:
                raise PolicyError(f"{where}: {x!r} is not one of {', '.join(allowed)}")
    return frozenset(v)


def _condition(where: str, when: Any) -> Condition:
    if when is None:
        return Condition()
    if not isinstance(when, dict):
        raise PolicyError(f"{where}: a mapping of conditions")
    for k in when:
        if k not in _WHEN_KEYS:
            raise PolicyError(f"{where}.{k}: unknown condition (known: {', '.join(_WHEN_KEYS)})")
    outside_root = when.get("paths_outside_root")
    if outside_root is not None and not isinstance(outside_root, bool):
        raise PolicyError(f"{where}.paths_outside_root: true or false")
    state = when.get("harness_state_paths")
    if state is not None and not isinstance(state, bool):
        raise PolicyError(f"{where}.harness_state_paths: true or false")
    globs = when.get("path_globs")
    return Condition(
        tools=_names(f"{where}.tools", when["tools"], None) if "tools" in when else None,
        action_types=_names(f"{where}.action_types", when["action_types"], ACTION_TYPES) if "action_types" in when else None,
        any_features=_names(f"{where}.any_features", when["any_features"], FEATURE_NAMES) if "any_features" in when else None,
        all_features=_names(f"{where}.all_features", when["all_features"], FEATURE_NAMES) if "all_features" in when else None,
        paths_outside_root=outside_root,
        path_globs=tuple(sorted(_names(f"{where}.path_globs", globs, None))) if globs is not None else None,
        harness_state_paths=state,
    )


def parse_policy(data: Any, source: str) -> Policy:
    """A :class:`Policy` from the parsed YAML ``data`` of file ``source``; :class:`PolicyError` otherwise, with
    every mistake of the file (each with its line, when ``data`` was read by :func:`_read`)."""
    if not isinstance(data, dict):
        raise PolicyError(f"{source}: a policy is a mapping with version, default and rules")
    problems: list[str] = []
    known = ("version", "default", "approval_timeout_s", "approve_without_code", "rules", "disabled")
    for k in data:
        if k not in known:
            problems.append(f"{_at(source, data, k)}: {k}: unknown key (known: {', '.join(known)})")
    if data.get("version") != 1:
        problems.append(f"{_at(source, data, 'version')}: version: must be 1")
    default = data.get("default", "no_override")
    if default not in ("deny", "no_override"):
        problems.append(f"{_at(source, data, 'default')}: default: deny or no_override")
    timeout = data.get("approval_timeout_s", 120)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 600:
        problems.append(f"{_at(source, data, 'approval_timeout_s')}: approval_timeout_s: a number of seconds from 1 to 600")
    without_code = data.get("approve_without_code", False)
    if not isinstance(without_code, bool):
        problems.append(f"{_at(source, data, 'approve_without_code')}: approve_without_code: true or false")
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        problems.append(f"{_at(source, data, 'rules')}: rules: a list")
        raw_rules = []
    rules: list[Rule] = []
    seen: set[str] = set()
    for i, r in enumerate(raw_rules):
        if not isinstance(r, dict):
            problems.append(f"{_at(source, data, 'rules')}: rules[{i}]: a mapping with id, decision, explanation, when")
            continue
        rule = _rule(source, i, r, seen, problems)
        if rule is not None:
            rules.append(rule)
    disabled = data.get("disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(x, str) for x in disabled):
        problems.append(f"{_at(source, data, 'disabled')}: disabled: a list of built-in rule ids")
    if problems:
        raise PolicyError(problems[0], problems)
    return Policy(tuple(rules), default, float(timeout), source, tuple(disabled), source,
                  approve_without_code=without_code)


def _rule(source: str, i: int, r: dict[str, Any], seen: set[str], problems: list[str]) -> Rule | None:
    """Rule ``i`` of the file, or ``None`` with its mistakes added to ``problems`` (each part checked)."""
    before = len(problems)

    def where(key: str | None = None) -> str:
        return f"{_at(source, r, key)}: rules[{i}]"

    for k in r:
        if k not in ("id", "decision", "explanation", "when"):
            problems.append(f"{where(k)}.{k}: unknown key")
    rid = r.get("id")
    if not isinstance(rid, str) or not _RULE_ID.fullmatch(rid):
        problems.append(f"{where('id')}.id: lowercase letters, digits, - and _ (at most 48)")
    elif rid in seen:
        problems.append(f"{where('id')}.id: {rid!r} is used twice")
    else:
        seen.add(rid)
    decision = r.get("decision")
    if decision not in ("deny", "no_override", "hold"):
        problems.append(f"{where('decision')}.decision: deny, no_override or hold")
    explanation = r.get("explanation", "")
    if not isinstance(explanation, str) or len(explanation) > 500:
        problems.append(f"{where('explanation')}.explanation: text of at most 500 characters")
    when = r.get("when")
    cond = Condition()
    if when is not None and not isinstance(when, dict):
        problems.append(f"{where('when')}.when: a mapping of conditions")
    elif isinstance(when, dict):
        for k in when:
            # Each condition on its own, so that every mistake of the rule is said.
            try:
                _condition(f"{_at(source, when, k)}: rules[{i}].when", {k: when[k]})
            except PolicyError as err:
                problems.append(str(err))
        if len(problems) == before:
            cond = _condition(f"{where('when')}.when", when)
    if len(problems) > before:
        return None
    assert isinstance(rid, str) and isinstance(explanation, str)
    return Rule(rid, cast(RuleDecision, decision), explanation.strip(), cond, source)


def merge(builtin: Policy, user: Policy, data: dict[str, Any]) -> Policy:
    """``user`` (parsed from the mapping ``data``) over ``builtin``: see the module docstring.

    Order, since the first matching rule decides: the user's new rules first (a
    user's ``no_override`` rule can so exempt calls from the built-in ones), then
    the built-in rules in their order, an overridden one replaced where it stood.
    """
    ids = [r.id for r in builtin.rules]
    for rid in user.disabled:
        if rid not in ids:
            raise PolicyError(f"{user.source}: disabled: {rid!r} is not a built-in rule (built-in: {', '.join(ids)})")
    mine = {r.id: r for r in user.rules}
    for rid in user.disabled:
        if rid in mine:
            raise PolicyError(f"{user.source}: disabled: {rid!r} is also a rule of the file; override it or disable it")
    new = [r for r in user.rules if r.id not in ids]
    kept: list[Rule] = []
    for r in builtin.rules:
        if r.id in user.disabled:
            continue
        kept.append(attrs.evolve(mine[r.id], overrides=True) if r.id in mine else r)
    settings = "default" in data or "approval_timeout_s" in data
    return Policy(
        tuple(new + kept),
        user.default if "default" in data else builtin.default,
        user.approval_timeout_s if "approval_timeout_s" in data else builtin.approval_timeout_s,
        user.source,
        tuple(rid for rid in ids if rid in user.disabled),
        user.source if settings else BUILT_IN,
        approve_without_code=user.approve_without_code if "approve_without_code" in data
        else builtin.approve_without_code,
    )


def policy_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The policy file to load (see the module docstring)."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("REMATCH_POLICY")
    if env:
        return Path(env).expanduser()
    user = Path(os.path.expanduser("~/.config/rematch/policy.yml"))
    return user if user.is_file() else DEFAULT_POLICY


def _read(p: Path) -> Any:
    try:
        with open(p, "rb") as f:
            text = f.read(1 << 20)
        return yaml.load(text, Loader=_loader())  # a safe loader that keeps each key's line
    except OSError as err:
        raise PolicyError(f"{p}: cannot read: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        raise PolicyError(yaml_mistake(p, err)) from None


def builtin_policy() -> Policy:
    """The built-in policy alone (``default_policy.yml``)."""
    policy = parse_policy(_read(DEFAULT_POLICY), BUILT_IN)
    if policy.disabled:
        raise PolicyError(f"{DEFAULT_POLICY}: disabled: only a user's file disables built-in rules")
    return policy


def load_policy(path: str | os.PathLike[str] | None = None) -> Policy:
    """Load and check the policy (see :func:`policy_path`): a user's file over the built-in one
    (:func:`merge`); :class:`PolicyError` on any fault."""
    p = policy_path(path)
    builtin = builtin_policy()
    if p.resolve() == DEFAULT_POLICY.resolve():
        return builtin
    data = _read(p)
    return merge(builtin, parse_policy(data, str(p)), data)


__all__ = [
    "BUILT_IN",
    "DEFAULT_POLICY",
    "Condition",
    "Policy",
    "PolicyError",
    "Rule",
    "builtin_policy",
    "load_policy",
    "merge",
    "parse_policy",
    "policy_path",
]
