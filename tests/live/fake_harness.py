"""A stand-in for Claude Code in the approval tests: it runs hooks, and it runs the agent's commands.

Run as ``python fake_harness.py`` with a line of JSON on stdin per order:

* ``{"id": N, "hook": COMMAND, "payload": {...}}``: run hook command
  ``COMMAND`` with ``sh -c``, as Claude Code runs a command hook, the payload on
  its stdin; report ``{"id": N, "rc": ..., "stdout": ...}`` when it ends;
* ``{"id": N, "bash": COMMAND, "session": BOOL}``: run ``COMMAND`` with
  ``sh -c`` as the agent's Bash tool does (a child of this process; in a
  session of its own when ``session``, as a harness that spawns its commands
  detached does); report ``{"id": N, "rc": ...}``.

Each report is one line of JSON on stdout. Orders run at once, each on its own
thread (a held hook waits while the agent's commands run).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

_out = threading.Lock()


def _report(value: dict[str, object]) -> None:
    with _out:
        sys.stdout.write(json.dumps(value) + "\n")
        sys.stdout.flush()


def _run(order: dict[str, object]) -> None:
    if "hook" in order:
        proc = subprocess.run(["sh", "-c", str(order["hook"])], input=json.dumps(order["payload"]).encode(),
                              capture_output=True, check=False)
        _report({"id": order["id"], "rc": proc.returncode, "stdout": proc.stdout.decode()})
    else:
        # The agent's command: its output goes to files it names; its pipes are not held open here.
        rc = subprocess.run(["sh", "-c", str(order["bash"])], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=bool(order.get("session")),
                            check=False).returncode
        _report({"id": order["id"], "rc": rc})


def main() -> None:
    """Take orders until stdin ends."""
    for line in sys.stdin:
        if line.strip():
            threading.Thread(target=_run, args=(json.loads(line),), daemon=True).start()
    for t in threading.enumerate():
        if t is not threading.main_thread():
            t.join()


if __name__ == "__main__":
    main()
