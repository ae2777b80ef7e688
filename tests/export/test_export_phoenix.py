"""The shared corpus exported to a real OTLP backend, Arize Phoenix, and checked through Phoenix's own REST API.

Phoenix (the ``test`` extra) is started once for the session, on loopback, with its telemetry off,
its database in a temporary folder; it reaches nothing beyond this machine (it starts the same inside
a network namespace with only loopback). Marked ``slow``: ``-m 'not slow'`` skips it.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from export_helpers import rematch

pytestmark = pytest.mark.slow

PHOENIX = Path(sys.executable).parent / "phoenix"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Phoenix:
    """A running Phoenix server: its OTLP endpoint and its REST API."""

    def __init__(self, folder: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_PORT": str(self.port),
               "PHOENIX_GRPC_PORT": str(_free_port()), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_TELEMETRY_ENABLED": "false", "HF_HUB_OFFLINE": "1", "NO_PROXY": "*"}
        self.log = (folder / "phoenix.log").open("wb")
        self.proc = subprocess.Popen([str(PHOENIX), "serve"], stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"phoenix exited {self.proc.returncode}: {(folder / 'phoenix.log').read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(1)
        self.close()
        raise RuntimeError("phoenix did not start in 240 s")

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span Phoenix stored in ``project``, through its REST API (paged)."""
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            q = f"{self.url}/v1/projects/{project}/spans?limit=1000" + (f"&cursor={cursor}" if cursor else "")
            try:
                with urllib.request.urlopen(q, timeout=30) as r:
                    page = json.load(r)
            except urllib.error.HTTPError as err:
                if err.code == 404:  # the project does not exist (yet)
                    return []
                raise
            out.extend(page["data"])
            cursor = page.get("next_cursor")
            if not cursor:
                return out

    def settled(self, expected: int, project: str = "default") -> list[dict[str, Any]]:
        """The spans once Phoenix has stored ``expected`` of them (it inserts in the background, slowly on a
        busy machine)."""
        deadline = time.monotonic() + 600
        while True:
            got = self.spans(project)
            if len(got) >= expected or time.monotonic() > deadline:
                return got
            time.sleep(1)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """Phoenix, started once for every test that needs it."""
    if not PHOENIX.exists():
        if os.environ.get("CI"):
            pytest.fail("arize-phoenix (the test extra) is not installed")
        pytest.skip("arize-phoenix is not installed (pip install -e '.[test]')")
    server = Phoenix(tmp_path_factory.mktemp("phoenix"))
    yield server
    server.close()


def test_corpus_lands_in_phoenix_with_its_shape(corpus_data: Path, phoenix: Phoenix, tmp_path: Path) -> None:
    data = tmp_path / "d"
    subprocess.run(["cp", "-a", str(corpus_data), str(data)], check=True)
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", phoenix.url)
    assert got.returncode == 0, got.stderr
    sent = int(got.stdout.split("sent ")[1].split(" span")[0])
    spans = phoenix.settled(sent)
    assert len(spans) == sent
    by_id = {s["context"]["span_id"]: s for s in spans}
    # One trace per family, one root in it; every parent is a span of the same trace.
    roots = [s for s in spans if not s["parent_id"]]
    assert len(roots) == len({s["context"]["trace_id"] for s in spans})
    for s in spans:
        if s["parent_id"]:
            assert by_id[s["parent_id"]]["context"]["trace_id"] == s["context"]["trace_id"]
    agents = {s["attributes"]["gen_ai.conversation.id"]: s for s in spans
              if s["attributes"].get("gen_ai.operation.name") == "invoke_agent"}
    ledger = sqlite3.connect(data / "ledger.sqlite")
    rows = ledger.execute("SELECT session_id, parent, trace_path FROM sessions").fetchall()
    assert set(agents) == {r[0] for r in rows}
    children = Counter()
    for sid, parent, trace_path in rows:
        span = agents[sid]
        records = [json.loads(x) for x in (data / trace_path).read_text().splitlines()]
        under = [s for s in spans if s["parent_id"] == span["context"]["span_id"]
                 and s["attributes"].get("gen_ai.operation.name") in ("chat", "execute_tool")]
        ops = Counter(s["attributes"]["gen_ai.operation.name"] for s in under)
        assert ops["chat"] == sum(1 for r in records if r["ev"] == "turn_end"), sid
        assert ops["execute_tool"] == sum(1 for r in records if r["ev"] in ("tool_result", "tool_blocked")), sid
        usage = [r["usage"] for r in records if r["ev"] == "turn_end"]
        assert sum(s["attributes"].get("gen_ai.usage.output_tokens", 0) for s in under) == sum(u["output"] for u in usage)
        assert sum(s["attributes"].get("gen_ai.usage.input_tokens", 0) for s in under) == sum(
            u["input"] + u["cacheRead"] + u["cacheWrite"] for u in usage)
        if parent in agents:  # a subagent: in its parent's trace, under one of its parent's spans
            top = agents[parent]
            assert span["context"]["trace_id"] == top["context"]["trace_id"], sid
            holder = by_id[span["parent_id"]]
            assert holder["parent_id"] == top["context"]["span_id"] or holder is top, sid
            children[holder["name"]] += 1
        else:
            assert not span["parent_id"], sid
    # The omp subagent and Claude Code's sidechains hang under the calls that started them.
    assert children["execute_tool task"] >= 1 and children["execute_tool Task"] >= 5
    # The rerun sends nothing, and Phoenix holds what it held.
    again = rematch("export", "otlp", "--data", str(data), "--endpoint", phoenix.url)
    assert again.returncode == 0 and "sent 0 span(s) of 0 session(s)" in again.stdout
    time.sleep(2)
    assert len(phoenix.spans()) == sent


def test_planted_secrets_never_reach_phoenix(phoenix: Phoenix, tmp_path: Path) -> None:
    from test_export_otlp import SECRETS, planted

    data = planted(tmp_path)
    env = {"OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=planted"}
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", phoenix.url, "--with-text", env=env)
    assert got.returncode == 0, got.stderr
    sent = int(got.stdout.split("sent ")[1].split(" span")[0])
    spans = phoenix.settled(sent, "planted")
    assert len(spans) == sent
    stored = json.dumps(spans)
    assert "[REDACTED:" in stored
    for secret in SECRETS.values():
        assert secret not in stored
