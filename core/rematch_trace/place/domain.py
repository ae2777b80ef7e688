"""A session's domain, decided at import: declared by the repo, else inferred, else none.

A ``domain.yml`` at the repository root declares it (``domain: <name>``).
Otherwise the user's inference table decides: ``domains`` in
``<config dir>/config.yml`` (``REMATCH_CONFIG`` names another file), a list of
``{path: <glob>, domain: <name>}`` or ``{remote: <glob>, domain: <name>}``
rules, first match wins; ``remote`` matches the normalized remote
(``host/owner/repo``). The domain lives on the ledger row, never in a trace.
"""

from __future__ import annotations

import fnmatch
import os
from functools import cache
from pathlib import Path
from typing import Any

import platformdirs

from rematch_trace.errors import yaml_mistake
from rematch_trace.place.identity import normalize_remote

_MAX_YAML = 64 * 1024


def config_path() -> Path:
    """The user's configuration file."""
    env = os.environ.get("REMATCH_CONFIG")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_config_dir("rematch", appauthor=False)) / "config.yml"


def _load_yaml(path: Path) -> Any:
    try:
        with open(path, "rb") as f:
            text = f.read(_MAX_YAML)
    except OSError:
        return None
    # Loaded only when there is a file to parse: mostly there is none (no configuration, no
    # domain.yml), and loading PyYAML is about 20 ms of every import that has a file to import.
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


@cache
def inference_table(path: Path | None = None) -> tuple[tuple[str, str, str], ...]:
    """The inference rules as (kind, pattern, domain), from the configuration."""
    data = _load_yaml(path or config_path())
    rules: list[tuple[str, str, str]] = []
    if isinstance(data, dict) and isinstance(data.get("domains"), list):
        for rule in data["domains"]:
            if not isinstance(rule, dict) or not isinstance(rule.get("domain"), str):
                continue
            for kind in ("path", "remote"):
                if isinstance(rule.get(kind), str):
                    rules.append((kind, rule[kind], rule["domain"]))
    return tuple(rules)


#: The keys the configuration file knows, at its top and in each ``domains`` rule.
CONFIG_KEYS = ("domains",)
RULE_KEYS = ("path", "remote", "domain")


def config_problems(path: Path | None = None) -> list[str]:
    """What is wrong with the configuration file, one ``file:line: key: reason`` each (``[]``: nothing,
    or no file).

    A rule that rematch would skip (a misspelt key, no ``domain``, neither ``path`` nor
    ``remote``) is a problem, never a silent gap in the table.
    """
    path = path or config_path()
    if not path.is_file():
        return []
    import yaml

    try:
        with open(path, "rb") as f:
            root = yaml.compose(f.read(_MAX_YAML))
    except (OSError, yaml.YAMLError) as err:
        if isinstance(err, OSError):
            return [f"{path}: cannot be read: {err.strerror or err}"]
        return [yaml_mistake(path, err)]

    def at(node: yaml.Node) -> str:
        return f"{path}:{node.start_mark.line + 1}"

    if root is None:
        return []
    if not isinstance(root, yaml.MappingNode):
        return [f"{at(root)}: the file must be a mapping (domains: [...])"]
    out: list[str] = []
    for key, value in root.value:
        if key.value not in CONFIG_KEYS:
            out.append(f"{at(key)}: {key.value}: unknown key (known: {', '.join(CONFIG_KEYS)})")
            continue
        if not isinstance(value, yaml.SequenceNode):
            out.append(f"{at(value)}: domains: must be a list of rules")
            continue
        for i, rule in enumerate(value.value):
            where = f"domains[{i}]"
            if not isinstance(rule, yaml.MappingNode):
                out.append(f"{at(rule)}: {where}: must be a mapping ({', '.join(RULE_KEYS)})")
                continue
            keys = {}
            for k, v in rule.value:
                if k.value not in RULE_KEYS:
                    out.append(f"{at(k)}: {where}.{k.value}: unknown key (known: {', '.join(RULE_KEYS)})")
                elif not isinstance(v, yaml.ScalarNode) or not str(v.value).strip():
                    out.append(f"{at(v)}: {where}.{k.value}: must be a text")
                keys[k.value] = k
            if "domain" not in keys:
                out.append(f"{at(rule)}: {where}: no domain")
            if "path" not in keys and "remote" not in keys:
                out.append(f"{at(rule)}: {where}: needs path or remote")
    return out


def declared_domain(repo: str | None) -> str | None:
    """The domain a repository's ``domain.yml`` declares, if any."""
    if not repo:
        return None
    data = _load_yaml(Path(repo) / "domain.yml")
    if isinstance(data, dict) and isinstance(data.get("domain"), str) and data["domain"].strip():
        return str(data["domain"]).strip()
    if isinstance(data, str) and data.strip():
        return data.strip()
    return None


def decide_domain(
    cwd: str | None, repo: str | None, repo_remote: str | None, table: tuple[tuple[str, str, str], ...] | None = None
) -> str | None:
    """The session's domain: the repo's declaration, else the first matching rule, else ``None``."""
    declared = declared_domain(repo)
    if declared:
        return declared
    rules = inference_table() if table is None else table
    remote = normalize_remote(repo_remote) or ""
    for kind, pattern, domain in rules:
        if kind == "path":
            for candidate in (cwd, repo):
                if candidate and fnmatch.fnmatch(candidate, os.path.expanduser(pattern)):
                    return domain
        elif remote and fnmatch.fnmatch(remote, pattern):
            return domain
    return None
