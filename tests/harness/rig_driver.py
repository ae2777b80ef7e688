"""Run inside the fresh network namespace: start the scripted server, run the harness, write the record.

``python rig_driver.py SPEC OUT``. SPEC (JSON): ``server`` (a key of ``rig_servers.SERVERS``),
``script``, ``runs`` (each ``argv``, ``env``, ``cwd``, ``timeout``, optional ``stdin`` and ``files``,
path -> text written before the run). In every run's ``env``, ``argv`` and ``files``,
``{base_url}`` is the server's address. The runs go one after the other
against the same server (a session and its resume). OUT gets, per run, the exit status, stdout,
stderr and whether the timeout killed it, and the server's requests.

Launched as ``unshare -n sh -c 'ip link set lo up && exec python rig_driver.py ...'`` so the server
and the harness share a namespace whose only interface is loopback: anything else the harness tries
to reach fails at once (no route), and the timeout bounds the rest.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any

from rig_servers import SERVERS


def _sub(value: str, base_url: str) -> str:
    return value.replace("{base_url}", base_url)


def run_one(run: dict[str, Any], base_url: str) -> dict[str, Any]:
    """One harness process, in its own process group (a timeout kills the whole group)."""
    for path, text in (run.get("files") or {}).items():
        # Configuration that must name the server's address (pi's models.json), written now.
        with open(path, "w", encoding="utf-8") as f:
            f.write(_sub(text, base_url))
    argv = [_sub(a, base_url) for a in run["argv"]]
    env = {k: _sub(v, base_url) for k, v in run["env"].items()}
    proc = subprocess.Popen(argv, env=env, cwd=run["cwd"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate((run.get("stdin") or "").encode(), timeout=run["timeout"])
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return {"rc": proc.returncode, "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace"), "timed_out": timed_out}


def main(spec_path: str, out_path: str) -> int:
    """Serve, run each run in turn, write the record."""
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    server = SERVERS[spec["server"]](spec["script"])
    base_url = server.start()
    try:
        runs = [run_one(run, base_url) for run in spec["runs"]]
    finally:
        server.stop()
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"runs": runs, "requests": server.requests}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
