"""Identity from .git folders built here: plain, worktree, packed refs; remotes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from rematch_trace import identify, normalize_remote
from rematch_trace.place.identity import strip_credentials

SHA1 = "1" * 40
SHA2 = "2" * 40


def make_repo(top: Path, remote: str | None = "git@github.com:acme/api.git", packed: bool = False) -> Path:
    git = top / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    config = "[core]\n\trepositoryformatversion = 0\n"
    if remote:
        config += f'[remote "origin"]\n\turl = {remote}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    (git / "config").write_text(config)
    if packed:
        (git / "packed-refs").write_text(f"# pack-refs with: peeled fully-peeled sorted\n{SHA1} refs/heads/main\n")
    else:
        (git / "refs" / "heads" / "main").write_text(SHA1 + "\n")
    return git


def test_plain_repo_and_subpath(tmp_path: Path) -> None:
    make_repo(tmp_path / "api")
    (tmp_path / "api" / "src" / "pkg").mkdir(parents=True)
    place = identify(str(tmp_path / "api" / "src" / "pkg"))
    assert place.repo == str(tmp_path / "api")
    assert place.subpath == "src/pkg"
    assert place.repo_remote == "git@github.com:acme/api.git"
    assert place.head_sha == SHA1 and place.branch == "main"
    assert identify(str(tmp_path / "api")).subpath == ""


def test_packed_refs(tmp_path: Path) -> None:
    make_repo(tmp_path / "r", packed=True)
    assert identify(str(tmp_path / "r")).head_sha == SHA1


def test_worktree_gitdir_file(tmp_path: Path) -> None:
    main = make_repo(tmp_path / "main")
    wt_admin = main / "worktrees" / "feature"
    wt_admin.mkdir(parents=True)
    (wt_admin / "HEAD").write_text("ref: refs/heads/feature\n")
    (wt_admin / "commondir").write_text("../..\n")
    (main / "refs" / "heads" / "feature").write_text(SHA2 + "\n")
    wt = tmp_path / "feature-wt"
    wt.mkdir()
    (wt / ".git").write_text(f"gitdir: {wt_admin}\n")
    place = identify(str(wt))
    assert place.repo == str(wt)
    assert place.head_sha == SHA2 and place.branch == "feature"
    assert place.repo_remote == "git@github.com:acme/api.git"


def test_no_repo_no_remote_no_commit(tmp_path: Path) -> None:
    assert identify(str(tmp_path)).repo is None
    assert identify("").repo is None
    assert identify("relative/path").repo is None
    git = make_repo(tmp_path / "fresh", remote=None)
    (git / "refs" / "heads" / "main").unlink()
    place = identify(str(tmp_path / "fresh"))
    assert place.repo is not None and place.repo_remote is None and place.head_sha is None


def test_real_git_repository(tmp_path: Path) -> None:
    try:
        subprocess.run(["git", "init", "-q", str(tmp_path / "g")], check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git not available")
    subprocess.run(["git", "-C", str(tmp_path / "g"), "remote", "add", "origin",
                    "https://user:s3cr3t-token@github.com/acme/api.git"], check=True)
    place = identify(str(tmp_path / "g"))
    assert place.repo_remote == "https://github.com/acme/api.git"
    assert place.head_sha is None


def test_credentials_never_kept() -> None:
    assert strip_credentials("https://x-access-token:ghp_abc@github.com/o/r.git") == "https://github.com/o/r.git"
    assert strip_credentials("https://ghp_abc@github.com/o/r") == "https://github.com/o/r"
    assert strip_credentials("ssh://git:pw@host.example/o/r.git") == "ssh://git@host.example/o/r.git"
    assert strip_credentials("git@github.com:o/r.git") == "git@github.com:o/r.git"
    assert strip_credentials(None) is None


@pytest.mark.parametrize(
    "url",
    ["git@github.com:Acme/api.git", "ssh://git@github.com/Acme/api.git", "ssh://git@github.com:22/Acme/api",
     "https://github.com/Acme/api.git", "https://user:tok@GitHub.com/Acme/api/", "git://github.com/Acme/api.git",
     "http://github.com/Acme/api"],
)
def test_normalize_remote_equal(url: str) -> None:
    assert normalize_remote(url) == "github.com/Acme/api"


def test_normalize_remote_distinct_and_empty() -> None:
    assert normalize_remote("git@github.com:acme/api.git") != normalize_remote("git@github.com:acme/web.git")
    assert normalize_remote(None) is None and normalize_remote("  ") is None
