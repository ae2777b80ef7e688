"""Where a session ran: the repository on disk, read without a git process."""

from __future__ import annotations

import configparser
import os
import re
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit, urlunsplit

import attrs


@attrs.frozen(slots=True)
class Place:
    """A working directory's repository.

    :param repo: the repository's top folder, or ``None`` outside a repository.
    :param repo_remote: origin's URL as git prints it, minus embedded credentials.
    :param subpath: the working directory relative to ``repo`` (``""`` at the top).
    :param head_sha: the commit HEAD points at, or ``None`` (importers never
        record it in a trace; live capture does).
    :param branch: the checked-out branch, or ``None`` when detached.
    """

    repo: str | None = None
    repo_remote: str | None = None
    subpath: str = ""
    head_sha: str | None = None
    branch: str | None = None


_MAX_READ = 1024 * 1024


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(_MAX_READ).decode("utf-8", "replace")
    except OSError:
        return None


def _git_dirs(top: Path) -> tuple[Path, Path] | None:
    """(git dir, common dir) of a working tree top, following a worktree's ``gitdir:`` file."""
    dotgit = top / ".git"
    try:
        if dotgit.is_dir():
            return dotgit, dotgit
        if dotgit.is_file():
            text = _read(dotgit) or ""
            m = re.match(r"gitdir:\s*(.+)", text.strip())
            if not m:
                return None
            gitdir = Path(m.group(1).strip())
            if not gitdir.is_absolute():
                gitdir = (top / gitdir).resolve()
            common = gitdir
            c = _read(gitdir / "commondir")
            if c:
                cd = Path(c.strip())
                common = cd if cd.is_absolute() else (gitdir / cd).resolve()
            return gitdir, common
    except OSError:
        return None
    return None


def find_repo(cwd: str) -> tuple[Path, Path, Path] | None:
    """Walk up from ``cwd`` to the first folder holding ``.git``: (top, git dir, common dir)."""
    if not cwd:
        return None
    try:
        p = Path(cwd)
        if not p.is_absolute():
            return None
        for candidate in (p, *p.parents):
            dirs = _git_dirs(candidate)
            if dirs:
                return candidate, dirs[0], dirs[1]
    except (OSError, ValueError):
        return None
    return None


def _origin(common: Path) -> str | None:
    text = _read(common / "config")
    if text is None:
        return None
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    for section in ('remote "origin"', "remote 'origin'"):
        if parser.has_section(section) and parser.has_option(section, "url"):
            return parser.get(section, "url").strip().strip('"') or None
    return None


def _resolve_ref(gitdir: Path, common: Path, ref: str) -> str | None:
    for base in (gitdir, common):
        text = _read(base / ref)
        if text and re.fullmatch(r"[0-9a-f]{40,64}", text.strip()):
            return text.strip()
    packed = _read(common / "packed-refs") or ""
    for line in packed.splitlines():
        parts = line.strip().split(" ", 1)
        if len(parts) == 2 and parts[1] == ref and re.fullmatch(r"[0-9a-f]{40,64}", parts[0]):
            return parts[0]
    return None


def head_of(gitdir: Path, common: Path) -> tuple[str | None, str | None]:
    """(head sha, branch) from HEAD and the loose or packed refs."""
    text = (_read(gitdir / "HEAD") or "").strip()
    if text.startswith("ref:"):
        ref = text[4:].strip()
        branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else None
        return _resolve_ref(gitdir, common, ref), branch
    if re.fullmatch(r"[0-9a-f]{40,64}", text):
        return text, None
    return None, None


def strip_credentials(url: str | None) -> str | None:
    """A remote URL without any password or token embedded in it.

    ``https://user:token@host/x`` and ``https://token@host/x`` lose their user
    info (on http a lone user name is often a token); ``ssh://git:pw@host/x``
    keeps its user and loses the password; scp-style ``git@host:x`` is kept.
    """
    if not url:
        return None
    url = url.strip()
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if "@" not in parts.netloc:
        return url
    userinfo, _, hostport = parts.netloc.rpartition("@")
    if parts.scheme in ("http", "https"):
        netloc = hostport
    else:
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}@{hostport}" if user else hostport
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


_SCP = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")


def normalize_remote(url: str | None) -> str | None:
    """One spelling for every URL of a repository: ``host/owner/repo``.

    scp-style (``git@github.com:o/r.git``), ssh, https and git URLs of one
    repository normalize equal: credentials, user, port, a trailing ``.git`` and
    slashes dropped, host lowercased. ``None`` for an empty or unreadable URL.
    """
    if not url or not url.strip():
        return None
    url = url.strip()
    host: str
    path: str
    if "://" in url:
        try:
            parts = urlsplit(url)
            host = (parts.hostname or "").lower()
        except ValueError:
            return None
        path = parts.path
        if parts.scheme == "file" or not host:
            return PurePosixPath(path).as_posix().rstrip("/").removesuffix(".git") or None
    else:
        m = _SCP.match(url)
        if not m:
            return url.rstrip("/").removesuffix(".git") or None
        host, path = m.group("host").lower(), m.group("path")
    path = path.strip("/")
    path = path.removesuffix(".git").rstrip("/")
    return f"{host}/{path}" if path else host


def identify(cwd: str) -> Place:
    """The place of a working directory: repo, remote (credential-free), subpath, head."""
    found = find_repo(cwd)
    if found is None:
        return Place()
    top, gitdir, common = found
    try:
        rel = os.path.relpath(cwd, top)
    except ValueError:
        rel = ""
    sub = "" if rel in (".", "") else Path(rel).as_posix()
    sha, branch = head_of(gitdir, common)
    return Place(
        repo=str(top),
        repo_remote=strip_credentials(_origin(common)),
        subpath=sub,
        head_sha=sha,
        branch=branch,
    )
