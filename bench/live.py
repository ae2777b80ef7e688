"""Benchmark of live capture: the cost of one hook invocation, process start to exit.

Replays a Claude Code session's hook payloads (the recorded fixture's shapes,
``--turns`` turns of ``--calls`` tool calls each) through the real hook
command, one process per payload as Claude Code runs them, and reports p50,
p90, p99 and max of the wall time of each invocation, by event, plus the
in-process share (the capture work alone, without interpreter start and
imports) measured in one process over the same payloads::

    .venv/bin/python bench/live.py --turns 20 --calls 4

The command is the one ``rematch hooks install`` writes
(:func:`rematch_trace.live.install.hook_command`: ``<python> -S -I
<rematch_hook.py> claude_code``, the fast client), measured twice: with the
resident service (``rematch serve``) running, which captures each event and
answers once it is committed, and without it (``REMATCH_LIVE_SERVICE=0``: the
client loads ``site`` and captures in its own process, as when no service
answers; a ``PreToolUse`` is also judged there by the local rules, whose cost
alone is the "fallback verdict only" row). Each invocation is paired with a
bare ``python -c pass`` run just before it: on a shared machine only the two
side by side say what rematch itself costs.

Targets (issue 15): p50 <= 30 ms and p99 <= 80 ms per invocation with the
service running; correct output, just slower, without it.

``--harness gemini_cli`` and ``--harness opencode`` (issue 42) replay a Gemini CLI 0.61 session
(its log growing as Gemini CLI writes it, read whole by the plugin at each ``BeforeModel`` and
``AfterAgent``) and the payloads rematch's opencode plugin hands the client.

``--harness codex`` replays a Codex session instead (issue 31): Codex 0.169's payloads (shell
calls as ``Bash``/``command``) through ``<rematch_hook.py> codex``, with the rollout growing
beside them as Codex writes it (the call and its usage before ``PreToolUse``, its
``item_completed`` before ``PostToolUse``, its output and ``token_count`` after, the last
message and its usage before ``Stop``), so the plugin's reads of the rollout's end are in the
figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent

def hook_argv(harness: str = "claude_code") -> list[str]:
    """The installed hook command, as argv."""
    import shlex

    from rematch_trace.live.install import hook_command

    words = shlex.split(hook_command(harness=harness))
    return words[1:] if words[:1] == ["exec"] else words  # the shell's exec: argv is what follows


#: A payload's key (stripped before it is sent) naming the transcript (rollout) lines written before its hook runs.
APPEND = "__rollout_lines__"


def codex_payloads(sid: str, cwd: str, turns: int, calls: int) -> list[dict[str, Any]]:
    """A Codex session's hook payloads, each with the rollout lines Codex writes before it (``APPEND``)."""
    rollout = f"{cwd}/rollout-{sid}.jsonl"
    base = {"session_id": sid, "transcript_path": rollout, "cwd": cwd, "model": "gpt-5.5",
            "permission_mode": "default"}

    def line(kind: str, payload: dict[str, Any]) -> bytes:
        return orjson.dumps({"timestamp": "2026-12-01T16:12:41.891Z", "type": kind, "payload": payload})

    def usage(n: int) -> dict[str, int]:
        return {"input_tokens": 9000 + n, "cached_input_tokens": 8000, "cache_write_input_tokens": 0,
                "output_tokens": 120, "reasoning_output_tokens": 0, "total_tokens": 9120 + n}

    meta = {"id": sid, "cwd": cwd, "originator": "codex_exec", "cli_version": "0.169.0", "model_provider": "openai"}
    out: list[dict[str, Any]] = [{**base, "hook_event_name": "SessionStart", "source": "startup",
                                  APPEND: [line("session_meta", meta)]}]
    n = 0
    for turn in range(turns):
        tid = f"01a23261-3817-73a1-b982-{turn:012d}"
        tb = {**base, "turn_id": tid}
        context = {"turn_id": tid, "cwd": cwd, "approval_policy": "on-request",
                   "sandbox_policy": {"type": "workspace-write"}, "model": "gpt-5.5"}
        out.append({**tb, "hook_event_name": "UserPromptSubmit", "prompt": f"step {turn}: edit cli.py and run tests",
                    APPEND: [line("event_msg", {"type": "task_started", "turn_id": tid}),
                             line("turn_context", context)]})
        after: list[bytes] = [line("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"step {turn}: edit cli.py and run tests"}]})]
        for _ in range(calls):
            n += 1
            cid, cmd = f"call_{n:05d}", f"pytest -q tests/test_{n}.py"
            call = {"tool_name": "Bash", "tool_use_id": cid, "tool_input": {"command": cmd}}
            out.append({**tb, "hook_event_name": "PreToolUse", **call, APPEND: [*after,
                        line("response_item", {"type": "function_call", "name": "exec_command", "call_id": cid,
                                               "arguments": orjson.dumps({"cmd": cmd}).decode()}),
                        line("token_usage_record", {"turn_id": tid, "usage": usage(n)})]})
            text = "." * 200 + "\n1 passed\n"
            out.append({**tb, "hook_event_name": "PostToolUse", **call, "tool_response": text, APPEND: [
                line("event_msg", {"type": "item_completed", "turn_id": tid, "item": {
                    "type": "CommandExecution", "id": cid, "status": "completed", "aggregated_output": text,
                    "exit_code": 0}})]})
            after = [line("response_item", {"type": "function_call_output", "call_id": cid,
                                            "output": f"Chunk ID: ab\nProcess exited with code 0\nOutput:\n{text}"})]
        last = f"Step {turn} done."
        out.append({**tb, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": last,
                    APPEND: [*after, line("response_item", {"type": "message", "role": "assistant", "content": [
                        {"type": "output_text", "text": last}]}),
                        line("token_usage_record", {"turn_id": tid, "usage": usage(n)})]})
    out.append({**base, "hook_event_name": "SessionEnd", "reason": "other"})
    return out


def gemini_cli_payloads(sid: str, cwd: str, turns: int, calls: int) -> list[dict[str, Any]]:
    """A Gemini CLI 0.61 session's hook payloads, each with the log lines Gemini CLI writes before it
    (``APPEND``): a prompt before its first ``BeforeModel``, a model message before its ``BeforeTool``, the
    message restated with its finished call and the result before the next ``BeforeModel``, the last
    answer before ``AfterAgent`` (the plugin reads the whole log at each ``BeforeModel`` and ``AfterAgent``)."""
    log = f"{cwd}/session-{sid}.jsonl"
    base = {"session_id": sid, "transcript_path": log, "cwd": cwd, "timestamp": "2026-12-01T18:35:07.674Z"}
    stamp = "2026-12-01T18:35:08.000Z"

    def line(doc: dict[str, Any]) -> bytes:
        return orjson.dumps(doc)

    tokens = {"input": 9000, "output": 120, "cached": 8000, "thoughts": 0, "tool": 0, "total": 9120}
    meta = {"sessionId": sid, "projectHash": "0" * 64, "startTime": stamp, "lastUpdated": stamp, "kind": "main"}
    out: list[dict[str, Any]] = [{**base, "hook_event_name": "SessionStart", "source": "startup",
                                  APPEND: [line(meta)]}]
    n = 0
    for turn in range(turns):
        prompt = f"step {turn}: edit cli.py and run tests"
        out.append({**base, "hook_event_name": "BeforeAgent", "prompt": prompt})
        before: list[bytes] = [line({"id": f"u{turn}", "timestamp": stamp, "type": "user", "content": [{"text": prompt}]})]
        for _ in range(calls):
            n += 1
            mid, cid, cmd = f"g{n}", f"run_shell_command__run_shell_command_{n}_0", f"pytest -q tests/test_{n}.py"
            msg = {"id": mid, "timestamp": stamp, "type": "gemini", "content": "", "tokens": tokens,
                   "model": "gemini-2.5-flash"}
            out.append({**base, "hook_event_name": "BeforeModel", "llm_request": {"model": "gemini-2.5-flash"},
                        APPEND: before})
            out.append({**base, "hook_event_name": "BeforeTool", "tool_name": "run_shell_command",
                        "tool_input": {"command": cmd}, APPEND: [line(msg)]})
            response = {"id": cid, "name": "run_shell_command", "response": {"output": "." * 200 + "\n1 passed\n"}}
            call = {"id": cid, "name": "run_shell_command", "args": {"command": cmd},
                    "result": [{"functionResponse": response}], "status": "success", "timestamp": stamp}
            before = [line({**msg, "toolCalls": [call]}),
                      line({"id": f"r{n}", "timestamp": stamp, "type": "user",
                            "content": [{"functionResponse": response}]})]
        out.append({**base, "hook_event_name": "BeforeModel", "llm_request": {"model": "gemini-2.5-flash"},
                    APPEND: before})
        last = {"id": f"a{turn}", "timestamp": stamp, "type": "gemini", "content": f"Step {turn} done.",
                "tokens": tokens, "model": "gemini-2.5-flash"}
        out.append({**base, "hook_event_name": "AfterAgent", "prompt": prompt, "prompt_response": last["content"],
                    "stop_hook_active": False, APPEND: [line(last)]})
    out.append({**base, "hook_event_name": "SessionEnd", "reason": "exit"})
    return out


def opencode_payloads(sid: str, cwd: str, turns: int, calls: int) -> list[dict[str, Any]]:
    """The payloads rematch's opencode plugin hands the hook client for an opencode 1.18 session: its start,
    per turn the prompt, each call before it runs and each finished assistant message (one step per call,
    its tool part done), the last answer and the session's idle; then the process's exit."""
    session = {"id": sid, "directory": cwd, "title": "bench", "version": "1.18.33", "time": {"created": 1}}
    base = {"session_id": sid, "cwd": cwd, "session": session}
    out: list[dict[str, Any]] = [{**base, "hook_event_name": "SessionStart"}]
    n = 0
    t = 1_760_000_000_000
    tokens = {"input": 9000, "output": 120, "reasoning": 0, "cache": {"read": 8000, "write": 0}}
    for turn in range(turns):
        t += 1000
        user = {"id": f"msg_{t:016d}u", "sessionID": sid, "role": "user", "time": {"created": t}}
        out.append({**base, "hook_event_name": "UserMessage", "message": user,
                    "parts": [{"id": f"prt_{t:016d}u", "type": "text", "text": f"step {turn}: edit cli.py"}]})
        for _ in range(calls + 1):
            n += 1
            t += 10
            parts: list[dict[str, Any]] = [{"id": f"prt_{t:016d}a", "type": "step-start"}]
            if _ < calls:
                cid, cmd = f"call_{n:05d}", f"pytest -q tests/test_{n}.py"
                out.append({**base, "hook_event_name": "PreToolUse", "tool_name": "bash", "tool_use_id": cid,
                            "tool_input": {"command": cmd, "description": "test"}})
                parts.append({"id": f"prt_{t:016d}b", "type": "tool", "callID": cid, "tool": "bash",
                              "state": {"status": "completed", "input": {"command": cmd, "description": "test"},
                                        "output": "." * 200 + "\n1 passed\n", "metadata": {"exit": 0},
                                        "time": {"start": t, "end": t + 5}}})
            else:
                parts.append({"id": f"prt_{t:016d}b", "type": "text", "text": f"Step {turn} done."})
            parts.append({"id": f"prt_{t:016d}c", "type": "step-finish", "reason": "stop", "tokens": tokens})
            msg = {"id": f"msg_{t:016d}a", "sessionID": sid, "role": "assistant", "modelID": "rig-chat-1",
                   "providerID": "rig", "tokens": tokens, "time": {"created": t, "completed": t + 8}}
            out.append({**base, "hook_event_name": "AssistantMessage", "message": msg, "parts": parts})
        out.append({**base, "hook_event_name": "Stop"})
    out.append({**base, "hook_event_name": "SessionEnd", "reason": "exit"})
    return out


#: Each harness's payload maker.
MAKERS = {"claude_code": None, "codex": codex_payloads, "gemini_cli": gemini_cli_payloads,
          "opencode": opencode_payloads}


def sent(payload: dict[str, Any]) -> bytes:
    """The payload's bytes as the harness writes them; first the rollout lines written before it."""
    lines = payload.get(APPEND)
    if lines:
        with open(payload["transcript_path"], "ab") as f:
            f.write(b"".join(x + b"\n" for x in lines))
    return orjson.dumps({k: v for k, v in payload.items() if k != APPEND})


def payloads(sid: str, cwd: str, turns: int, calls: int) -> list[dict[str, Any]]:
    """A session's hook payloads: start, then per turn a prompt, calls (pre and post) and a stop, then the end;
    each with the transcript lines Claude Code writes before it (``APPEND``), so a ``Stop`` reads the run's
    responses and usage from the transcript's end as it does in a real session (2.1.328 writes the last
    response before the ``Stop`` hook here; when it is later, the hook waits for it, up to 0.5 s)."""
    base = {"session_id": sid, "transcript_path": f"{cwd}/{sid}.jsonl", "cwd": cwd}
    stamp = "2026-12-01T16:12:41.891Z"
    parent: list[str | None] = [None]

    def line(kind: str, message: dict[str, Any], **extra: Any) -> bytes:
        uuid = f"00000000-0000-4000-8000-{len(parent):012d}"
        rec = {"type": kind, "uuid": uuid, "parentUuid": parent[-1], "sessionId": sid, "cwd": cwd,
               "version": "2.1.328", "timestamp": stamp, "message": message, **extra}
        parent.append(uuid)
        return orjson.dumps(rec)

    def response(n: int, content: list[dict[str, Any]], stop: str) -> bytes:
        usage = {"input_tokens": 4, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 9000 + n,
                 "output_tokens": 120}
        return line("assistant", {"id": f"msg_{n:05d}", "type": "message", "role": "assistant",
                                  "model": "claude-opus-4-6", "content": content, "stop_reason": stop,
                                  "usage": usage}, requestId=f"req_{n:05d}")

    out: list[dict[str, Any]] = [{**base, "hook_event_name": "SessionStart", "source": "startup",
                                  "model": "claude-opus-4-6"}]
    n = 0
    for turn in range(turns):
        prompt = f"step {turn}: edit cli.py and run tests"
        out.append({**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt,
                    APPEND: [line("user", {"role": "user", "content": prompt})]})
        for _ in range(calls):
            n += 1
            call = {"tool_name": "Bash", "tool_use_id": f"toolu_{n:05d}",
                    "tool_input": {"command": f"pytest -q tests/test_{n}.py", "description": "run tests"}}
            use = {"type": "tool_use", "id": call["tool_use_id"], "name": "Bash", "input": call["tool_input"]}
            out.append({**base, "hook_event_name": "PreToolUse", **call, APPEND: [response(n, [use], "tool_use")]})
            stdout = "." * 200 + "\n1 passed"
            result = {"type": "tool_result", "tool_use_id": call["tool_use_id"], "content": stdout, "is_error": False}
            out.append({**base, "hook_event_name": "PostToolUse", **call,
                        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
                        APPEND: [line("user", {"role": "user", "content": [result]})]})
        last = f"Step {turn} done."
        n += 1
        out.append({**base, "hook_event_name": "Stop", "last_assistant_message": last,
                    APPEND: [response(n, [{"type": "text", "text": last}], "end_turn")]})
    out.append({**base, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
    return out


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank) of ``values``."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def row(name: str, ms: list[float]) -> str:
    """One line of the table."""
    return (f"{name:<22} {len(ms):>5} {statistics.median(ms):>8.1f} {pct(ms, 0.9):>8.1f} "
            f"{pct(ms, 0.99):>8.1f} {max(ms):>8.1f}")


def time_hooks(events: list[dict[str, Any]], env: dict[str, str],
               harness: str = "claude_code") -> tuple[list[float], list[float]]:
    """Each payload through the hook command: its wall time, and that of a bare interpreter start run before it.

    On a shared machine only the two measured side by side say what rematch itself costs.
    """
    hook_argv_cached = hook_argv(harness)
    hooks: list[float] = []
    bare: list[float] = []
    for payload in events:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append((time.perf_counter() - start) * 1000)
        data = sent(payload)
        start = time.perf_counter()
        res = subprocess.run(hook_argv_cached, input=data, env=env, capture_output=True)
        hooks.append((time.perf_counter() - start) * 1000)
        if res.returncode or res.stdout or res.stderr:
            raise SystemExit(f"hook misbehaved on {payload['hook_event_name']}: {res}")
    return hooks, bare


def replay_served(events: list[dict[str, Any]], work: Path, repo: Path,
                  harness: str = "claude_code") -> tuple[list[float], list[float]]:
    """Each hook invocation's wall time with ``rematch serve`` running (started first), beside a bare start."""
    data = work / "served"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
    env["REMATCH_HOME"] = str(data)
    service = subprocess.Popen([sys.executable, "-m", "rematch_trace.live.service", "--data", str(data), "--quiet"],
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not (data / "run" / "events.sock").exists():
            if time.monotonic() > deadline:
                raise SystemExit("rematch serve did not listen within 30 s")
            time.sleep(0.05)
        hooks, bare = time_hooks(events, env, harness)
        errors = data / "live" / "errors.log"
        if errors.exists():
            raise SystemExit(f"the hook logged errors (or fell back to in-process capture): {errors.read_text()}")
        if not (data / "traces" / "bench-session.jsonl").exists():
            raise SystemExit("the service wrote no trace")
        return hooks, bare
    finally:
        service.terminate()
        service.wait(timeout=30)


def main() -> None:
    """Run the benchmark and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--harness", choices=sorted(MAKERS), default="claude_code")
    args = ap.parse_args()
    load_at_start = os.getloadavg()
    make = MAKERS[args.harness] or payloads
    work = Path(tempfile.mkdtemp(prefix="rematch-live-bench-"))
    try:
        repo = work / "repo"
        (repo / ".git" / "refs" / "heads").mkdir(parents=True)
        (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (repo / ".git" / "refs" / "heads" / "main").write_text("0" * 40 + "\n")
        events = make("bench-session", str(repo), args.turns, args.calls)
        env = {k: v for k, v in os.environ.items() if not k.startswith("REMATCH_")}
        env["REMATCH_HOME"] = str(work / "data")
        env["REMATCH_LIVE_SERVICE"] = "0"
        served = replay_served(events, work, repo, args.harness)
        # The same session again, into another folder, from a fresh transcript (rollout); opencode's
        # payloads carry their messages and name none.
        if "transcript_path" in events[0]:
            Path(events[0]["transcript_path"]).unlink()
        every, bare = time_hooks(events, env, args.harness)
        by_event: dict[str, list[float]] = {}
        for payload, ms in zip(events, every, strict=True):
            by_event.setdefault(payload["hook_event_name"], []).append(ms)
        errors = work / "data" / "live" / "errors.log"
        if errors.exists():
            raise SystemExit(f"the hook logged errors: {errors.read_text()}")

        # The capture work alone, in one process (what a resident service would do per request).
        sys.path.insert(0, str(ROOT / "core"))
        from rematch_trace.live.capture import capture_bytes, default_host

        host = default_host()
        inproc: list[float] = []
        for payload in make("bench-inproc", str(repo), args.turns, args.calls):
            data = sent(payload)
            start = time.perf_counter()
            capture_bytes(args.harness, data, int(time.time() * 1000), work / "data2", host)
            inproc.append((time.perf_counter() - start) * 1000)

        # The hook's own verdict on a call no service answered (verdicts/local.py): policy load and judge.
        from rematch_trace.live.verdicts.local import fallback_policy, fallback_verdict

        judged: list[float] = []
        for payload in make("bench-judge", str(repo), args.turns, args.calls):
            if payload["hook_event_name"] not in ("PreToolUse", "BeforeTool"):
                continue
            payload = orjson.loads(sent(payload))
            start = time.perf_counter()
            policy, _note = fallback_policy(work / "data2")
            fallback_verdict(host, args.harness, payload, int(time.time() * 1000), policy, "bench")
            judged.append((time.perf_counter() - start) * 1000)

        print(f"live capture ({args.harness}): {len(events)} hook invocations ({args.turns} turns x {args.calls} calls); "
              f"{os.cpu_count()} cores; python {sys.version.split()[0]}")
        # A shared machine: the load the figures were taken under, at the start and now.
        print(f"load average (1, 5, 15 min): at start {' '.join(f'{x:.2f}' for x in load_at_start)}, "
              f"at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"{'invocation (ms)':<22} {'n':>5} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}")
        print("with the service (rematch serve running):")
        print(row("every hook (process)", served[0]))
        served_by: dict[str, list[float]] = {}
        for payload, ms in zip(events, served[0], strict=True):
            served_by.setdefault(payload["hook_event_name"], []).append(ms)
        for name in sorted(served_by):
            print(row(f"  {name}", served_by[name]))
        print(row("python -c pass", served[1]))
        print(row("hook minus bare start", [h - b for h, b in zip(served[0], served[1], strict=True)]))
        print(f"hook / bare start, p50 of the pairs: "
              f"{statistics.median(h / b for h, b in zip(served[0], served[1], strict=True)):.2f}x")
        print("without the service (REMATCH_LIVE_SERVICE=0: the client captures in-process):")
        print(row("every hook (process)", every))
        for name in sorted(by_event):
            print(row(f"  {name}", by_event[name]))
        print(row("capture work only", inproc))
        print(row("fallback verdict only", judged))
        print(row("python -c pass", bare))
        extra = [h - b for h, b in zip(every, bare, strict=True)]
        print(row("hook minus bare start", extra))
        print(f"hook / bare start, p50 of the pairs: {statistics.median(h / b for h, b in zip(every, bare, strict=True)):.1f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
