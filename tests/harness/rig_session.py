"""A harness session under the rig: its folders, rematch's hooks, the service, the run in a namespace.

:class:`RigSession` holds what every harness shares (a temp HOME, a project folder, rematch's data
folder and ``rematch serve`` for the verdicts, the driver under ``unshare -n``); a subclass per
harness says how to install the hooks, which environment and argv run one prompt, and where the
transcripts land. :class:`ClaudeCodeSession` is the first.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "rig_driver.py"
REMATCH = [sys.executable, "-c", "import sys; from rematch_trace.cli import main; sys.argv[0] = 'rematch'; main()"]
#: Seconds one harness process may run before it is killed (a hang is a failure, not a wait).
RUN_TIMEOUT = 90
#: How long a hook may wait for the service's verdict in the rig: time for a test to approve a held call.
HOLD_BUDGET_MS = 30_000
#: Seconds between two calls of a run's ``while_running``: each call runs ``rematch`` processes (a
#: person looking at the held calls); back to back they would take a core from the harness.
POLL_EVERY = 0.5
#: The environment every harness run starts from: no variable of the caller leaks in.
BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TERM": "dumb"}


def namespace_works() -> bool:
    """Whether this process may make a network namespace (root, or unprivileged user namespaces)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    res = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, timeout=30)
    return res.returncode == 0


def _connectable(path: Path) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(os.fspath(path))
        return True
    except OSError:
        return False
    finally:
        s.close()


@dataclass
class Prompt:
    """One harness invocation: the prompt text, and whether it continues the session before it."""

    text: str
    resume: bool = False
    #: The model the harness is told to use for this prompt (``None``: the session's).
    model: str | None = None


@dataclass
class Record:
    """What the driver brought back: one result per run, and every request the model server got."""

    runs: list[dict[str, Any]]
    requests: list[dict[str, Any]]

    def messages(self, scenario: str) -> list[dict[str, Any]]:
        """The bodies of the model requests a scenario's steps answered, in order."""
        return [r["body"] for r in self.requests if r["scenario"] == scenario and r["body"] is not None]


@dataclass
class RigSession:
    """Folders, service and driver shared by every harness; subclasses fill in the harness."""

    root: Path
    exe: Path
    server: str = "anthropic"
    home: Path = field(init=False)
    project: Path = field(init=False)
    data: Path = field(init=False)
    _service: subprocess.Popen[bytes] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.data = self.root / "data"
        for d in (self.home, self.project):
            d.mkdir(parents=True, exist_ok=True)

    # --- per harness ----------------------------------------------------------------------
    def install_hooks(self) -> None:
        """Put rematch's hooks where the harness reads them."""
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        """The harness's environment (``{base_url}`` is the model server's address)."""
        raise NotImplementedError

    def argv(self, prompt: Prompt, session_id: str, first: bool) -> list[str]:
        """The command line of one prompt."""
        raise NotImplementedError

    def transcripts(self) -> Path:
        """The folder ``rematch import`` is given."""
        raise NotImplementedError

    def files(self) -> dict[str, str]:
        """Files the driver writes before each run, ``{base_url}`` filled in (none by default)."""
        return {}

    # --- shared ----------------------------------------------------------------------------
    def rematch(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """The real ``rematch`` CLI, HOME being the session's (so no policy of the caller's applies)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "CLAUDE_", "CODEX_"))}
        env["HOME"] = str(self.home)
        return subprocess.run([*REMATCH, *args], capture_output=True, text=True, timeout=timeout, env=env)

    def approve_held(self, approved: list[dict[str, Any]]) -> None:
        """What a person does while the harness runs: list the held calls, approve each once (each
        approval, with what ``rematch approve`` said and its exit status, is added to ``approved``)."""
        res = self.rematch("approvals", "--out", str(self.data), "--json")
        if res.returncode != 0:
            return
        for held in json.loads(res.stdout or "[]"):
            if held.get("state") == "pending" and held["approval_id"] not in {a["approval_id"] for a in approved}:
                done = self.rematch("approve", held["approval_id"], "--out", str(self.data))
                approved.append({**held, "rc": done.returncode, "said": done.stdout + done.stderr})

    def run_served(self, script: dict[str, Any], prompts: list[Prompt], session_id: str | None = None
                   ) -> tuple[Record, list[dict[str, Any]]]:
        """The prompts run with ``rematch serve`` deciding and a person approving each held call
        (:meth:`approve_held`); the record and the approvals given."""
        approved: list[dict[str, Any]] = []
        self.start_service()
        try:
            record = self.run(script, prompts, session_id=session_id, while_running=lambda: self.approve_held(approved))
        finally:
            self.stop_service()
        return record, approved

    def import_transcripts(self, name: str = "imported") -> tuple[Path, subprocess.CompletedProcess[str]]:
        """``rematch import`` of the harness's transcripts into ``<root>/<name>`` (one job): the folder
        and the finished command."""
        out = self.root / name
        return out, self.rematch("import", str(self.transcripts()), "--out", str(out), "-j", "1")

    def start_service(self) -> None:
        """``rematch serve --out data`` (the built-in policy): the verdicts the hooks ask for."""
        from rematch_trace.live import paths

        env = {k: v for k, v in os.environ.items() if not k.startswith(("REMATCH_", "CLAUDE_"))}
        env["HOME"] = str(self.home)
        # The built-in policy, extended by one setting: the test approves a held call as a person
        # would, but from no terminal of its own (the one-time code is tested in tests/live).
        policy = self.home / "rig-policy.yml"
        policy.write_text("version: 1\napprove_without_code: true\nrules: []\n")
        env["REMATCH_POLICY"] = str(policy)
        self._service = subprocess.Popen([*REMATCH, "serve", "--out", str(self.data)], env=env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        sock = paths.control_socket(self.data)
        end = time.monotonic() + 30
        while not _connectable(sock):
            if self._service.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"rematch serve did not start: {self._service.stderr!r}")
            time.sleep(0.05)

    def stop_service(self) -> None:
        """SIGTERM the service and wait for it (it settles held calls and exits 0)."""
        if self._service is not None and self._service.poll() is None:
            self._service.send_signal(signal.SIGTERM)
            try:
                self._service.wait(20)
            except subprocess.TimeoutExpired:
                self._service.kill()
                self._service.wait()
        self._service = None

    def run(self, script: dict[str, Any], prompts: list[Prompt], session_id: str | None = None,
            while_running: Callable[[], None] | None = None, resumed: bool = False) -> Record:
        """Each prompt in turn, in one fresh network namespace with the scripted server; the record.

        ``while_running`` is called every :data:`POLL_EVERY` seconds while the harness runs (a person
        approving a held call, say). ``resumed``: the session was started by an earlier call (its first
        prompt resumes it too).
        """
        sid = session_id or str(uuid.uuid4())
        runs = [{"argv": self.argv(p, sid, i == 0 and not resumed), "env": self.env(), "cwd": str(self.project),
                 "timeout": RUN_TIMEOUT, "files": self.files()} for i, p in enumerate(prompts)]
        n = len(list(self.root.glob("rig-spec-*.json")))
        spec, out = self.root / f"rig-spec-{n}.json", self.root / f"rig-out-{n}.json"
        spec.write_text(json.dumps({"server": self.server, "script": script, "runs": runs}))
        # ``$0`` is the driver's python: no quoting of paths into the shell text.
        proc = subprocess.Popen(["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"',
                                 sys.executable, str(DRIVER), str(spec), str(out)])
        end = time.monotonic() + RUN_TIMEOUT * len(runs) + 30
        polled = 0.0
        try:
            while proc.poll() is None:
                if time.monotonic() > end:
                    raise RuntimeError("the rig's driver outlived every run's timeout")
                if while_running is not None and time.monotonic() - polled >= POLL_EVERY:
                    while_running()
                    polled = time.monotonic()
                time.sleep(0.05)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0:
            raise RuntimeError(f"the rig's driver exited {proc.returncode}")
        doc = json.loads(out.read_text())
        return Record(doc["runs"], doc["requests"])


@dataclass
class ClaudeCodeSession(RigSession):
    """Claude Code in headless mode (``-p``, stream-json), its config folder inside the session's root."""

    model: str = "claude-sonnet-4-5"

    @property
    def config(self) -> Path:
        """``CLAUDE_CONFIG_DIR``: settings.json with rematch's hooks, and the transcripts (``projects/``)."""
        return self.root / "claude-config"

    def install_hooks(self) -> None:
        """``rematch hooks install --settings <config>/settings.json --out <data>``."""
        self.config.mkdir(parents=True, exist_ok=True)
        res = self.rematch("hooks", "install", "--settings", str(self.config / "settings.json"),
                           "--out", str(self.data))
        if res.returncode != 0:
            raise RuntimeError(f"rematch hooks install: {res.stdout} {res.stderr}")

    def env(self) -> dict[str, str]:
        """Dummy key, our server, every documented switch of non-essential traffic off."""
        return {**BASE_ENV, "HOME": str(self.home), "CLAUDE_CONFIG_DIR": str(self.config),
                "ANTHROPIC_BASE_URL": "{base_url}", "ANTHROPIC_API_KEY": "sk-ant-rig-not-a-key",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1",
                "CLAUDE_CODE_MAX_RETRIES": "0", "API_TIMEOUT_MS": "30000",
                # A held call waits for its approval (the hook client's default budget is 1.5 s).
                "REMATCH_IPC_DEADLINE_MS": str(HOLD_BUDGET_MS)}

    def argv(self, prompt: Prompt, session_id: str, first: bool) -> list[str]:
        """``claude -p PROMPT`` (stream-json), a fixed session id, then ``--resume`` it."""
        ident = ["--session-id", session_id] if first or not prompt.resume else ["--resume", session_id]
        return [str(self.exe), "-p", prompt.text, "--output-format", "stream-json", "--verbose",
                "--model", prompt.model or self.model, "--allowedTools", "Bash Read Write Edit Task Agent", *ident]

    def transcripts(self) -> Path:
        """``$CLAUDE_CONFIG_DIR/projects``."""
        return self.config / "projects"


#: Codex's configuration in the rig: our provider (its ``base_url`` given on the command line, once
#: the server's port is known), no approvals, no sandbox (bubblewrap may not run in CI), no update
#: check, no analytics, no retries (a failure fails the run at once).
CODEX_CONFIG = """\
model = "gpt-rig"
model_provider = "rig"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.rig]
name = "rig"
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
env_key = "RIG_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


@dataclass
class CodexSession(RigSession):
    """Codex in ``codex exec`` mode against the Responses server; ``CODEX_HOME`` inside the root.

    ``install_hooks`` runs ``rematch hooks install --harness codex`` into ``$CODEX_HOME/hooks.json``
    (``live=False``: the configuration only), and each run passes
    ``--dangerously-bypass-hook-trust``: Codex runs a new hook only once a person trusted it in
    ``/hooks``, and this is its documented switch for automation whose hooks were checked.
    """

    server: str = "responses"
    live: bool = True

    @property
    def codex_home(self) -> Path:
        """``CODEX_HOME``: config.toml, and the transcripts (``sessions/``)."""
        return self.root / "codex-home"

    def install_hooks(self) -> None:
        """The configuration, then ``rematch hooks install --harness --settings <CODEX_HOME>/hooks.json --out <data>``."""
        self.codex_home.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(CODEX_CONFIG)
        if not self.live:
            return
        res = self.rematch("hooks", "install", "--harness", "codex", "--settings",
                           str(self.codex_home / "hooks.json"), "--out", str(self.data))
        if res.returncode != 0:
            raise RuntimeError(f"rematch hooks install --harness codex: {res.stdout} {res.stderr}")

    def env(self) -> dict[str, str]:
        """A dummy key for our provider, HOME and CODEX_HOME in the root."""
        return {**BASE_ENV, "HOME": str(self.home), "CODEX_HOME": str(self.codex_home), "RIG_API_KEY": "sk-rig",
                # A held call waits for its approval (the hook client's default budget is 1.5 s).
                "REMATCH_IPC_DEADLINE_MS": str(HOLD_BUDGET_MS)}

    def argv(self, prompt: Prompt, session_id: str, first: bool) -> list[str]:
        """``codex exec PROMPT``, then ``codex exec resume --last PROMPT`` (Codex picks its own ids)."""
        head = [str(self.exe), "exec"] if first or not prompt.resume else [str(self.exe), "exec", "resume", "--last"]
        trust = ["--dangerously-bypass-hook-trust"] if self.live else []
        return [*head, *trust, "--skip-git-repo-check", "-c", 'model_providers.rig.base_url="{base_url}/v1"',
                prompt.text]

    def transcripts(self) -> Path:
        """``$CODEX_HOME/sessions``."""
        return self.codex_home / "sessions"


@dataclass
class PiSession(RigSession):
    """pi (``pi -p``) with a custom provider speaking Anthropic Messages to the scripted server.

    ``PI_CODING_AGENT_DIR`` inside the root holds ``models.json`` (the provider ``rig``, its
    ``baseUrl`` written by the driver once the port is known) and the transcripts (``sessions/``);
    ``--offline`` / ``PI_OFFLINE=1`` and ``PI_TELEMETRY=0`` turn off startup traffic. With ``live``,
    rematch's extension is installed (``rematch hooks install --harness pi``) into the agent folder's
    ``extensions/``, sending its events to the session's data folder.
    """

    server: str = "anthropic"
    model: str = "claude-rig-1"
    live: bool = False
    #: The key of the harness in versions.json.
    harness: str = "pi"
    #: The harness's version when it is not the key's pin (pi as it ships now: ``moved_pin``).
    version: str | None = None

    @property
    def agent_dir(self) -> Path:
        """``PI_CODING_AGENT_DIR``."""
        return self.root / "pi-agent"

    def install_hooks(self) -> None:
        """The agent folder; with ``live``, rematch's extension in it (a held call waits 30 s at most)."""
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        if not self.live:
            return
        res = self.rematch("hooks", "install", "--harness", "pi", "--agent-dir", str(self.agent_dir),
                           "--data", str(self.data), "--hold-seconds", str(HOLD_BUDGET_MS // 1000))
        if res.returncode != 0:
            raise RuntimeError(f"rematch hooks install --harness pi: {res.stdout} {res.stderr}")

    def files(self) -> dict[str, str]:
        """``models.json``: provider ``rig``, ``api: anthropic-messages``, at the server."""
        doc = {"providers": {"rig": {"baseUrl": "{base_url}", "api": "anthropic-messages", "apiKey": "sk-rig",
                                     "models": [{"id": self.model, "reasoning": False}]}}}
        return {str(self.agent_dir / "models.json"): json.dumps(doc)}

    def env(self) -> dict[str, str]:
        """HOME and the agent folder in the root; startup network operations and telemetry off; the
        executable's folder first on ``PATH`` (pi 1.x runs on the Node installed beside it)."""
        return {**BASE_ENV, "PATH": f"{self.exe.parent}:{BASE_ENV['PATH']}", "HOME": str(self.home),
                "PI_CODING_AGENT_DIR": str(self.agent_dir), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}

    def argv(self, prompt: Prompt, session_id: str, first: bool) -> list[str]:
        """``pi -p PROMPT`` with our provider, then ``--continue``."""
        more = ["--continue"] if prompt.resume and not first else []
        return [str(self.exe), "-p", "--provider", "rig", "--model", self.model, "--offline", "--mode", "json",
                *more, prompt.text]

    def transcripts(self) -> Path:
        """``$PI_CODING_AGENT_DIR/sessions``."""
        return self.agent_dir / "sessions"


@dataclass
class GeminiCliSession(RigSession):
    """Gemini CLI (``gemini -p``) with an API key, its Gemini API base URL at the scripted server.

    ``GOOGLE_GEMINI_BASE_URL`` points the API client at the server, ``GEMINI_API_KEY`` is a dummy;
    ``~/.gemini/settings.json`` selects API-key auth and turns telemetry, usage statistics and
    update checks off, and folder trust off (every folder trusted: ``--skip-trust`` does the same
    from 0.61 on, but older versions refuse the flag). Tools run unasked (``--approval-mode yolo``). Sessions land in ``~/.gemini/tmp/<project>/chats/``.
    """

    server: str = "gemini"
    model: str = "gemini-2.5-flash"
    #: Whether ``rematch hooks install --harness gemini_cli`` adds rematch's hooks to the settings.
    live: bool = False

    @property
    def gemini_home(self) -> Path:
        """``~/.gemini`` of the session's HOME."""
        return self.home / ".gemini"

    def install_hooks(self) -> None:
        """The settings file; with ``live``, then ``rematch hooks install --harness gemini_cli`` into it
        (found through HOME, as a user's would be), writing to the session's data folder."""
        self.gemini_home.mkdir(parents=True, exist_ok=True)
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                    "telemetry": {"enabled": False}, "privacy": {"usageStatisticsEnabled": False},
                    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}
        (self.gemini_home / "settings.json").write_text(json.dumps(settings))
        if not self.live:
            return
        res = self.rematch("hooks", "install", "--harness", "gemini_cli", "--out", str(self.data),
                           "--hold-seconds", str(HOLD_BUDGET_MS // 1000))
        if res.returncode != 0:
            raise RuntimeError(f"rematch hooks install --harness gemini_cli: {res.stdout} {res.stderr}")

    def env(self) -> dict[str, str]:
        """HOME in the root, the dummy key and the server's address."""
        return {**BASE_ENV, "HOME": str(self.home), "GEMINI_API_KEY": "rig-key",
                "GOOGLE_GEMINI_BASE_URL": "{base_url}", "NO_BROWSER": "1"}

    def argv(self, prompt: Prompt, session_id: str, first: bool) -> list[str]:
        """``gemini -p PROMPT`` (yolo); a resumed prompt adds ``--resume latest`` (even the first of a
        run: a session may go on in a later run, after an import)."""
        more = ["--resume", "latest"] if prompt.resume else []
        return [str(self.exe), "-m", prompt.model or self.model, "--approval-mode", "yolo", *more, "-p", prompt.text]

    def transcripts(self) -> Path:
        """``~/.gemini/tmp``."""
        return self.gemini_home / "tmp"


@dataclass
class OmpSession(PiSession):
    """omp (``omp -p``), pi's fork: the same scripted provider, in ``models.yml``, run by bun.

    omp's CLI is a bun script: the folder of its executable (where rig_install put bun from the
    npm registry beside it) comes first on ``PATH``. The agent folder is ``PI_CODING_AGENT_DIR`` as
    for pi. omp's print mode emits no ``input`` event: the prompt reaches the extension as the user
    message, with no source.
    """

    harness: str = "omp"

    def install_hooks(self) -> None:
        """The agent folder; with ``live``, rematch's extension in it (``--harness omp``)."""
        self.agent_dir.mkdir(parents=True, exist_ok=True)
        if not self.live:
            return
        res = self.rematch("hooks", "install", "--harness", "omp", "--agent-dir", str(self.agent_dir),
                           "--data", str(self.data), "--hold-seconds", str(HOLD_BUDGET_MS // 1000))
        if res.returncode != 0:
            raise RuntimeError(f"rematch hooks install --harness omp: {res.stdout} {res.stderr}")

    def files(self) -> dict[str, str]:
        """``models.yml`` (JSON is YAML): provider ``rig``, ``api: anthropic-messages``, at the server."""
        doc = {"providers": {"rig": {"baseUrl": "{base_url}", "api": "anthropic-messages", "apiKey": "sk-rig",
                                     "models": [{"id": self.model, "reasoning": False}]}}}
        return {str(self.agent_dir / "models.yml"): json.dumps(doc)}

    def env(self) -> dict[str, str]:
        """pi's, with the executable's folder (bun) first on ``PATH``; the ``replace`` edit mode
        (``path``, ``old_string``, ``new_string``: the scripted model's edit needs no line hashes)."""
        env = super().env()
        env["PATH"] = f"{self.exe.parent}:{env['PATH']}"
        env["PI_EDIT_VARIANT"] = "replace"
        return env

    def argv(self, prompt: Prompt, session_id: str, first: bool) -> list[str]:
        """``omp -p PROMPT --model rig/MODEL``, then ``--continue``."""
        more = ["--continue"] if prompt.resume and not first else []
        return [str(self.exe), "-p", "--model", f"rig/{self.model}", "--mode", "json", "--no-title",
                *more, prompt.text]


@dataclass
class OpencodeSession(RigSession):
    """opencode (``opencode run``) with a custom provider speaking Chat Completions to the scripted server.

    ``OPENCODE_CONFIG`` names an ``opencode.json`` the driver writes (provider ``rig`` on
    ``@ai-sdk/openai-compatible``, its ``baseURL`` the server; autoupdate and sharing off, every
    permission allowed); the XDG folders are inside the root's HOME, so the sessions land in
    ``$XDG_DATA_HOME/opencode``. The ``OPENCODE_DISABLE_*`` settings turn off the update check, the
    models.dev fetch, default plugins (an npm install at run time) and LSP downloads.
    """

    server: str = "chat"
    model: str = "rig-chat-1"
    #: Whether ``rematch hooks install --harness opencode`` names rematch's plugin in the global config.
    live: bool = False

    @property
    def data_home(self) -> Path:
        """``$XDG_DATA_HOME``: opencode keeps its sessions in its ``opencode/`` folder."""
        return self.home / ".local" / "share"

    @property
    def config_file(self) -> Path:
        """``OPENCODE_CONFIG``."""
        return self.root / "opencode.json"

    def install_hooks(self) -> None:
        """The folders; with ``live``, then ``rematch hooks install --harness opencode`` into the global
        config (``$XDG_CONFIG_HOME/opencode/opencode.json``), writing to the session's data folder."""
        for d in (self.data_home, self.home / ".config", self.home / ".cache", self.home / ".local" / "state"):
            d.mkdir(parents=True, exist_ok=True)
        if not self.live:
            return
        res = self.rematch("hooks", "install", "--harness", "opencode", "--settings",
                           str(self.home / ".config" / "opencode" / "opencode.json"), "--out", str(self.data),
                           "--hold-seconds", str(HOLD_BUDGET_MS // 1000))
        if res.returncode != 0:
            raise RuntimeError(f"rematch hooks install --harness opencode: {res.stdout} {res.stderr}")

    def files(self) -> dict[str, str]:
        """``opencode.json``: provider ``rig`` at the server, updates and sharing off, permissions allowed."""
        doc = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled",
               "model": f"rig/{self.model}", "permission": {"*": "allow"},
               "provider": {"rig": {"npm": "@ai-sdk/openai-compatible", "name": "rig",
                                    "options": {"baseURL": "{base_url}/v1", "apiKey": "sk-rig"},
                                    "models": {self.model: {"name": self.model}}}}}
        return {str(self.config_file): json.dumps(doc)}

    def env(self) -> dict[str, str]:
        """HOME and XDG folders in the root; update checks, model fetches, plugins and sharing off."""
        return {**BASE_ENV, "HOME": str(self.home), "XDG_DATA_HOME": str(self.data_home),
                "XDG_CONFIG_HOME": str(self.home / ".config"), "XDG_CACHE_HOME": str(self.home / ".cache"),
                "XDG_STATE_HOME": str(self.home / ".local" / "state"), "OPENCODE_CONFIG": str(self.config_file),
                "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                "OPENCODE_DISABLE_SHARE": "1"}

    def argv(self, prompt: Prompt, session_id: str, first: bool) -> list[str]:
        """``opencode run PROMPT`` with our model; ``--continue`` (the last session) for a resumed prompt,
        in a later driver run too."""
        more = ["--continue"] if prompt.resume else []
        return [str(self.exe), "run", "--model", f"rig/{self.model}", "--format", "json", *more, prompt.text]

    def transcripts(self) -> Path:
        """``$XDG_DATA_HOME/opencode``."""
        return self.data_home / "opencode"
