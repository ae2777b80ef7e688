"""The shell-reading risk rules on real calls: how many the built-in policy denies or holds, and the cost.

Every tool call of the shared corpus is imported (each harness's own plugin, the
import's EventSink), and its pre_tool_use event is judged by the built-in
policy, as the live service judges it. Prints the calls denied or held (to
read for false positives), the share, and the cost of ``risk_features`` per
shell command.

    .venv/bin/python bench/shell_rules.py [--list]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import rematch_claude_code
import rematch_codex
import rematch_omp
from rematch_trace.live.verdicts.action import LiveAction
from rematch_trace.live.verdicts.policy import DEFAULT_POLICY, load_policy
from rematch_trace.security.deletion import deletion_features
from rematch_trace.security.risk import _pattern_features, risk_features, strings_of
from rematch_trace.testing import synthesize_file

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
MODULES = {"claude_code": rematch_claude_code, "codex": rematch_codex, "omp": rematch_omp}


def main() -> None:
    policy = load_policy(DEFAULT_POLICY)
    calls = 0
    stopped: list[tuple[str, str, str]] = []
    commands: list[str] = []
    tmp = Path("/tmp") / f"shell-rules-bench-{time.time_ns()}"
    for harness, module in MODULES.items():
        for path in sorted(p for p in (CORPUS / harness).rglob("*.jsonl*") if p.is_file()):
            sessions = synthesize_file(path, [module], out=tmp / harness / path.name, hint=harness)
            for s in sessions:
                for e in s.events:
                    if e["kind"] != "pre_tool_use":
                        continue
                    calls += 1
                    action = LiveAction(event=e, binding=None, nonce="", paths=(), root=e["repo_root"] or e["cwd"])
                    rule = policy.first_match(action)
                    if rule is not None and rule.decision in ("deny", "hold"):
                        stopped.append((rule.id, e["tool_name"], e["args_summary"]))
                for r in s.records:
                    inp = r.get("input")
                    if isinstance(inp, dict) and isinstance(inp.get("command"), str):
                        commands.append(inp["command"])
    print(f"corpus: {calls} tool calls, {len(stopped)} denied or held ({100 * len(stopped) / max(calls, 1):.2f}%)")
    if "--list" in sys.argv:
        for rid, tool, summary in stopped:
            print(f"  {rid:28} {tool:12} {summary[:150]!r}")
    times = []
    for c in commands:
        ti = {"command": c}
        text = strings_of(ti)
        t = time.perf_counter()
        risk_features("shell_exec", "Bash", ti, text, redactions=0, command=c)
        times.append(time.perf_counter() - t)
    # The text-only path the rules had before the shell reader: the patterns, and the deletion split.
    before = []
    for c in commands:
        t = time.perf_counter()
        found = _pattern_features(c)
        if "destructive_command" in found:
            deletion_features(c)
        before.append(time.perf_counter() - t)
    for what, ts in (("risk_features (with the shell reader)", times), ("patterns alone (before)", before)):
        if ts:
            ts.sort()
            print(f"{what} on {len(ts)} corpus shell commands: median {statistics.median(ts) * 1e6:.0f} µs, "
                  f"p90 {ts[int(len(ts) * 0.9)] * 1e6:.0f} µs, max {ts[-1] * 1e6:.0f} µs")


if __name__ == "__main__":
    main()
