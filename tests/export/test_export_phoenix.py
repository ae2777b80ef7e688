"""The shared corpus exported to a real OTLP backend, Arize Phoenix, and checked through Phoenix's own REST API.

Phoenix (the ``test`` extra) is started once for the session with its telemetry off and its database in
a temporary folder, inside a network namespace of its own with only loopback (``unshare -n``, where
this process may make one: root or user namespaces), so it can reach nothing beyond this machine; the
export and every query run in that namespace too (``nsenter``). Where no namespace can be made it runs
on this machine's loopback. Marked ``slow``: ``-m 'not slow'`` skips it.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
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


def _namespace_works() -> bool:
    """Whether this process may make a network namespace (root, or unprivileged user namespaces)."""
    if not all(shutil.which(t) for t in ("unshare", "nsenter", "ip")):
        return False
    res = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True, timeout=30)
    return res.returncode == 0


#: Reads one URL and writes its body (or ``HTTP <code>``) to stdout: run inside Phoenix's namespace.
_GET = ("import sys, urllib.request, urllib.error\n"
        "try:\n    sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=30).read())\n"
        "except urllib.error.HTTPError as err:\n    print(f'HTTP {err.code}')\n"
        "except OSError as err:\n    print(f'DOWN {err}')\n")


class Phoenix:
    """A running Phoenix server: its OTLP endpoint and its REST API (``prefix``: how to enter its namespace)."""

    def __init__(self, folder: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PHOENIX_WORKING_DIR": str(folder), "PHOENIX_PORT": str(self.port),
               "PHOENIX_GRPC_PORT": str(_free_port()), "PHOENIX_HOST": "127.0.0.1",
               "PHOENIX_TELEMETRY_ENABLED": "false", "HF_HUB_OFFLINE": "1", "NO_PROXY": "*"}
        self.log = (folder / "phoenix.log").open("wb")
        argv = [str(PHOENIX), "serve"]
        isolated = _namespace_works()
        if isolated:  # unshare execs sh, which execs phoenix: one pid, in the new namespace
            argv = ["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {PHOENIX} serve"]
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.prefix = ["nsenter", f"--net=/proc/{self.proc.pid}/ns/net"] if isolated else []
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"phoenix exited {self.proc.returncode}: {(folder / 'phoenix.log').read_text()[-2000:]}")
            health = self.get("/healthz")
            if health and not health.startswith((b"DOWN", b"HTTP ")):
                return
            time.sleep(2)
        self.close()
        raise RuntimeError("phoenix did not start in 240 s")

    def get(self, path: str) -> bytes:
        """The body at ``path`` (``HTTP <code>`` on an error status), read inside Phoenix's namespace."""
        res = subprocess.run([*self.prefix, sys.executable, "-c", _GET, self.url + path], capture_output=True,
                             timeout=60)
        return res.stdout

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span Phoenix stored in ``project``, through its REST API (paged)."""
        out: list[dict[str, Any]] = []
        cursor = None
        while True:
            body = self.get(f"/v1/projects/{project}/spans?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
            if body.startswith(b"HTTP 404"):  # the project does not exist (yet)
                return []
            page = json.loads(body)
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
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", phoenix.url, prefix=phoenix.prefix)
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
    again = rematch("export", "otlp", "--data", str(data), "--endpoint", phoenix.url, prefix=phoenix.prefix)
    assert again.returncode == 0 and "sent 0 span(s) of 0 session(s)" in again.stdout
    time.sleep(2)
    assert len(phoenix.spans()) == sent


def test_planted_secrets_never_reach_phoenix(phoenix: Phoenix, tmp_path: Path) -> None:
    from test_export_otlp import SECRETS, planted

    data = planted(tmp_path)
    env = {"OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=planted"}
    got = rematch("export", "otlp", "--data", str(data), "--endpoint", phoenix.url, "--with-text", env=env,
                  prefix=phoenix.prefix)
    assert got.returncode == 0, got.stderr
    sent = int(got.stdout.split("sent ")[1].split(" span")[0])
    spans = phoenix.settled(sent, "planted")
    assert len(spans) == sent
    stored = json.dumps(spans)
    assert "[REDACTED:" in stored
    for secret in SECRETS.values():
        assert secret not in stored


def test_a_grown_session_shows_its_new_end_and_counts_and_no_span_twice(phoenix: Phoenix, tmp_path: Path) -> None:
    """Phoenix keeps the first copy of a span id: a grown session's end and counts come on a new session span."""
    from test_export_otlp import cc_source

    transcript, lines = cc_source(tmp_path, 5)
    data = tmp_path / "data"
    env = {"OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=grown"}
    sent = 0
    for part in (lines[:5], lines):
        transcript.write_text("".join(part))
        assert rematch("import", str(tmp_path / "src"), "--data", str(data)).returncode == 0
        got = rematch("export", "otlp", "--data", str(data), "--endpoint", phoenix.url, env=env, prefix=phoenix.prefix)
        assert got.returncode == 0, got.stderr
        sent += int(got.stdout.split("sent ")[1].split(" span")[0])
    spans = phoenix.settled(sent, "grown")
    # Phoenix stores a span id once: as many stored as sent means no id was sent twice.
    assert len(spans) == sent and len({s["context"]["span_id"] for s in spans}) == sent
    [trace_path] = sqlite3.connect(data / "ledger.sqlite").execute("SELECT trace_path FROM sessions").fetchone()
    records = [json.loads(x) for x in (data / trace_path).read_text().splitlines()]
    agents = [s for s in spans if s["attributes"].get("gen_ai.operation.name") == "invoke_agent"]
    [first] = [s for s in agents if not s["parent_id"]]
    [latest] = [s for s in agents if s["parent_id"] == first["context"]["span_id"]]
    assert len({s["context"]["trace_id"] for s in spans}) == 1 and len(agents) == 2
    # The latest session span: the session's end and counts as they are now.
    assert latest["attributes"]["rematch.session.part"] == 1
    turns = latest["attributes"]["rematch.turns"]
    assert turns == sum(1 for r in records if r["ev"] == "turn_end") > first["attributes"]["rematch.turns"]
    assert latest["attributes"]["rematch.tool_calls"] == sum(1 for r in records if r["ev"] == "tool_result")
    end_ms = max(r["t"] for r in records)
    assert latest["end_time"].startswith(time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(end_ms // 1000)))
    assert latest["end_time"] > first["end_time"]
    # Every response and call of the whole session once, under one of its two session spans.
    roots = {first["context"]["span_id"], latest["context"]["span_id"]}
    under = Counter(s["attributes"]["gen_ai.operation.name"] for s in spans if s["parent_id"] in roots
                    and s["attributes"].get("gen_ai.operation.name") in ("chat", "execute_tool"))
    assert under["chat"] == turns
    assert under["execute_tool"] == sum(1 for r in records if r["ev"] in ("tool_result", "tool_blocked"))
