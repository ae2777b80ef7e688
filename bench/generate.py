"""Generate a realistic transcript archive of a chosen size, in the three harnesses' shapes.

Laid out as the harnesses lay out their own folders (``claude_code/projects``,
``codex/sessions/YYYY/MM/DD``, ``omp/sessions/<cwd>``). Claude Code files are
tool-result heavy (about two thirds of the bytes are tool output); Codex
files are many small event lines; omp files are a tree of message entries.
With ``--big`` a few files exceed 100 MB and one line exceeds 50 MB.
Deterministic for a given seed.
"""

from __future__ import annotations

import argparse
import random
import uuid
from pathlib import Path
from typing import Any

import orjson

WORDS = ["the", "function", "returns", "a", "value", "when", "the", "test", "passes", "and", "the", "build", "fails", "on", "the", "parser", "module", "because", "import", "error", "config", "file", "path", "user", "request", "model", "tool", "result", "line", "code", "review", "fix", "refactor", "add", "remove", "update", "check", "run", "make", "sure", "that", "this", "is", "done", "properly", "with", "care"]


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def blob(rng: random.Random, nbytes: int) -> str:
    line = words(rng, 12) + "\n"
    return (line * (nbytes // len(line) + 1))[:nbytes]


def ts(i: int) -> str:
    """The i-th line's time: lines 137 ms apart, as a harness writes them in bursts."""
    ms = i * 137
    s, ms = divmod(ms, 1000)
    return f"2026-03-01T{(s // 3600) % 24:02d}:{(s // 60) % 60:02d}:{s % 60:02d}.{ms:03d}Z"


def dumps(v: Any) -> bytes:
    return orjson.dumps(v) + b"\n"


class Claude:
    """Claude Code 2.1-shaped session lines."""

    def __init__(self, rng: random.Random, sid: str) -> None:
        self.rng, self.sid, self.n = rng, sid, 0
        self.parent: str | None = None

    def _base(self, kind: str) -> dict[str, Any]:
        self.n += 1
        u = str(uuid.UUID(int=self.rng.getrandbits(128)))
        d = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": "/home/dev/proj",
             "sessionId": self.sid, "version": "2.1.39", "gitBranch": "main", "type": kind, "uuid": u,
             "timestamp": ts(self.n)}
        self.parent = u
        return d

    def exchange(self, out: list[bytes], result_bytes: int) -> None:
        rng = self.rng
        d = self._base("user")
        d["message"] = {"role": "user", "content": words(rng, rng.randint(5, 40))}
        out.append(dumps(d))
        mid = f"msg_{rng.getrandbits(64):016x}"
        for _ in range(rng.randint(1, 4)):
            d = self._base("assistant")
            tid = f"toolu_{rng.getrandbits(64):016x}"
            usage = {"input_tokens": rng.randint(1, 500), "cache_creation_input_tokens": rng.randint(0, 5000),
                     "cache_read_input_tokens": rng.randint(0, 90000), "output_tokens": rng.randint(1, 800)}
            d["message"] = {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-4-6",
                            "content": [{"type": "text", "text": words(rng, 20)},
                                        {"type": "tool_use", "id": tid, "name": rng.choice(["Bash", "Read", "Edit"]),
                                         "input": {"command": words(rng, 6), "description": words(rng, 4)}}],
                            "stop_reason": "tool_use", "usage": usage}
            d["requestId"] = f"req_{rng.getrandbits(64):016x}"
            out.append(dumps(d))
            for _p in range(rng.randint(0, 3)):
                p = self._base("progress")
                p["data"] = {"type": "bash_progress", "output": words(rng, 10)}
                out.append(dumps(p))
            r = self._base("user")
            err = rng.random() < 0.08
            text = blob(rng, max(10, int(rng.expovariate(1 / result_bytes))))
            r["message"] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid,
                                                          "content": ("Exit code 1\n" if err else "") + text,
                                                          "is_error": err}]}
            r["toolUseResult"] = {"stdout": text[:200], "stderr": "", "interrupted": False}
            out.append(dumps(r))
            mid = f"msg_{rng.getrandbits(64):016x}"


class Codex:
    """Codex 0.1xx envelope lines."""

    def __init__(self, rng: random.Random, sid: str) -> None:
        self.rng, self.sid, self.n, self.total = rng, sid, 0, 0

    def line(self, kind: str, payload: dict[str, Any]) -> bytes:
        self.n += 1
        return dumps({"timestamp": ts(self.n), "type": kind, "payload": payload})

    def start(self, out: list[bytes]) -> None:
        out.append(self.line("session_meta", {"id": self.sid, "timestamp": ts(0), "cwd": "/home/dev/proj",
                                              "originator": "codex_cli_rs", "cli_version": "0.120.0",
                                              "model_provider": "openai", "source": "cli"}))

    def turn(self, out: list[bytes], result_bytes: int) -> None:
        rng = self.rng
        tid = f"turn-{rng.getrandbits(32):08x}"
        out.append(self.line("event_msg", {"type": "task_started", "turn_id": tid, "model_context_window": 272000}))
        out.append(self.line("turn_context", {"cwd": "/home/dev/proj", "approval_policy": "on-request",
                                              "model": "gpt-5.4", "effort": "medium", "summary": "auto"}))
        text = words(rng, rng.randint(5, 40))
        out.append(self.line("response_item", {"type": "message", "role": "user",
                                               "content": [{"type": "input_text", "text": text}]}))
        out.append(self.line("event_msg", {"type": "user_message", "message": text, "images": []}))
        for _ in range(rng.randint(1, 6)):
            cid = f"call_{rng.getrandbits(64):016x}"
            out.append(self.line("response_item", {"type": "reasoning", "summary": [
                {"type": "summary_text", "text": words(rng, 15)}], "encrypted_content": None}))
            out.append(self.line("response_item", {"type": "function_call", "name": "exec_command",
                                                   "arguments": orjson.dumps({"cmd": words(rng, 5)}).decode(),
                                                   "call_id": cid}))
            code = 1 if rng.random() < 0.1 else 0
            body = blob(rng, max(10, int(rng.expovariate(1 / result_bytes))))
            out.append(self.line("response_item", {"type": "function_call_output", "call_id": cid,
                                                   "output": f"Chunk ID: a1\nWall time: 0.1 seconds\nProcess exited with code {code}\nOutput:\n{body}"}))
            inc = rng.randint(1000, 9000)
            self.total += inc
            for _dup in range(rng.randint(1, 2)):
                out.append(self.line("event_msg", {"type": "token_count", "info": {
                    "total_token_usage": {"input_tokens": self.total, "cached_input_tokens": self.total // 2,
                                          "output_tokens": self.total // 10, "reasoning_output_tokens": 0,
                                          "total_tokens": self.total + self.total // 10},
                    "last_token_usage": {"input_tokens": inc, "cached_input_tokens": inc // 2,
                                         "output_tokens": inc // 10, "reasoning_output_tokens": 0,
                                         "total_tokens": inc + inc // 10},
                    "model_context_window": 272000}, "rate_limits": None}))
        out.append(self.line("response_item", {"type": "message", "role": "assistant",
                                               "content": [{"type": "output_text", "text": words(rng, 30)}]}))
        out.append(self.line("event_msg", {"type": "task_complete", "turn_id": tid, "last_agent_message": "done"}))


class Omp:
    """omp v3 tree entries."""

    def __init__(self, rng: random.Random, sid: str) -> None:
        self.rng, self.sid, self.n = rng, sid, 0
        self.parent: str | None = None

    def entry(self, message: dict[str, Any]) -> bytes:
        self.n += 1
        eid = f"{self.rng.getrandbits(32):08x}"
        d = {"type": "message", "id": eid, "parentId": self.parent, "timestamp": ts(self.n), "message": message}
        self.parent = eid
        return dumps(d)

    def start(self, out: list[bytes]) -> None:
        title = {"type": "title", "v": 1, "title": "bench", "source": "auto", "updatedAt": ts(0)}
        line = orjson.dumps(title)
        pad = 255 - len(line) - len(b',"pad":""')
        title["pad"] = " " * max(0, pad)
        out.append(dumps(title))
        out.append(dumps({"type": "session", "version": 3, "id": self.sid, "timestamp": ts(0), "cwd": "/home/dev/proj"}))

    def turn(self, out: list[bytes], result_bytes: int) -> None:
        rng = self.rng
        out.append(self.entry({"role": "user", "content": [{"type": "text", "text": words(rng, 20)}],
                               "attribution": "user", "timestamp": 1772323200000 + self.n}))
        for _ in range(rng.randint(1, 4)):
            cid = f"toolu_{rng.getrandbits(64):016x}"
            out.append(self.entry({"role": "assistant", "content": [
                {"type": "text", "text": words(rng, 20)},
                {"type": "toolCall", "id": cid, "name": "bash", "arguments": {"command": words(rng, 5)}}],
                "provider": "anthropic", "model": "claude-opus-4-5", "stopReason": "toolUse",
                "usage": {"input": 10, "output": 200, "cacheRead": 5000, "cacheWrite": 100, "totalTokens": 5310,
                          "cost": {"total": 0.01}}, "timestamp": 1772323200000 + self.n}))
            err = rng.random() < 0.08
            out.append(self.entry({"role": "toolResult", "toolCallId": cid, "toolName": "bash",
                                   "content": [{"type": "text", "text": blob(rng, max(10, int(rng.expovariate(1 / result_bytes))))}],
                                   "isError": err, "timestamp": 1772323200000 + self.n}))


def session_file(kind: str, rng: random.Random, target: int, result_bytes: int) -> tuple[str, bytes]:
    sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    out: list[bytes] = []
    size = 0
    if kind == "claude_code":
        c = Claude(rng, sid)
        while size < target:
            before = len(out)
            c.exchange(out, result_bytes)
            size += sum(len(x) for x in out[before:])
        return f"claude_code/projects/-home-dev-proj{rng.randint(0, 9)}/{sid}.jsonl", b"".join(out)
    if kind == "codex":
        x = Codex(rng, sid)
        x.start(out)
        while size < target:
            before = len(out)
            x.turn(out, result_bytes)
            size += sum(len(b) for b in out[before:])
        day = rng.randint(1, 28)
        return f"codex/sessions/2026/02/{day:02d}/rollout-2026-02-{day:02d}T10-00-00-{sid}.jsonl", b"".join(out)
    o = Omp(rng, sid)
    o.start(out)
    while size < target:
        before = len(out)
        o.turn(out, result_bytes)
        size += sum(len(b) for b in out[before:])
    return f"omp/sessions/--home-dev-proj{rng.randint(0, 9)}--/2026-03-01T00-00-00-000Z_{sid}.jsonl", b"".join(out)


def generate(root: Path, size_mb: int, seed: int = 7, big: bool = True) -> int:
    """Write the archive under ``root``; return its size in bytes."""
    rng = random.Random(seed)
    budget = size_mb * 1024 * 1024
    written = 0
    mix = (("claude_code", 0.6), ("codex", 0.25), ("omp", 0.15))
    plan: list[tuple[str, int]] = []
    if big and size_mb >= 400:
        plan += [("claude_code", 120 * 1024 * 1024), ("codex", 110 * 1024 * 1024)]
    for kind, share in mix:
        left = int(budget * share) - sum(s for k, s in plan if k == kind)
        while left > 0:
            s = min(left, int(rng.lognormvariate(13.5, 1.2)))  # median ~0.7 MB
            s = max(s, 20_000)
            plan.append((kind, s))
            left -= s
    for kind, target in plan:
        rel, data = session_file(kind, rng, target, RESULT_BYTES[kind])
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        written += len(data)
    if big and size_mb >= 200:
        # one line over 50 MB: a Claude Code tool result of a huge output
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        c = Claude(rng, sid)
        out: list[bytes] = []
        c.exchange(out, 2000)
        r = c._base("user")
        r["message"] = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_big",
                                                      "content": blob(rng, 52 * 1024 * 1024), "is_error": False}]}
        out.append(dumps(r))
        c.exchange(out, 2000)
        p = root / f"claude_code/projects/-home-dev-huge/{sid}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(out))
        written += p.stat().st_size
    return written


#: Mean tool-output bytes per harness, for the archive and for what is appended to it.
RESULT_BYTES = {"claude_code": 9000, "codex": 3000 // 4, "omp": 6000}


def append_percent(root: Path, percent: float, seed: int = 11, shape: str = "bytes") -> tuple[int, int]:
    """Append about ``percent`` % more to every file, in its own format; return the bytes and lines appended.

    ``shape="bytes"`` (the default, the shape of earlier figures): every file
    grows by whole exchanges totalling about ``percent`` % of its bytes, their
    tool outputs shrunk where a small file's share is smaller than one exchange
    of the archive's size. The new lines are then several times shorter than
    the archive's: ``percent`` % of the bytes is several times that of the lines.

    ``shape="lines"``: every file grows by ``percent`` % of its lines (at least
    one): the first lines of its next exchanges, their tool outputs sized to
    hold ``percent`` % of its bytes. Where those few lines hold no tool output
    (a small file's one or two lines) they hold less, so the archive grows by
    ``percent`` % of its lines and by less of its bytes.
    """
    if shape not in ("lines", "bytes"):
        raise ValueError(f"unknown append shape: {shape}")
    rng = random.Random(seed)
    added = added_lines = 0
    for p in sorted(root.rglob("*.jsonl")):
        kind = p.relative_to(root).parts[0]
        sid = p.stem.split("_")[-1][-36:]
        out: list[bytes] = []
        if shape == "bytes":
            maker = exchange_maker(kind, rng, sid, omp_parent(kind, p))
            want = int(p.stat().st_size * percent / 100)
            have = 0
            while have < want:
                maker(out, _fit(kind, want - have))
                have = sum(len(b) for b in out)
        else:
            out = _lines_of_next_turn(kind, f"{seed}/{p.relative_to(root)}", sid, p, percent)
        data = b"".join(out)
        with open(p, "ab") as f:
            f.write(data)
        added += len(data)
        added_lines += len(out)
    return added, added_lines


def omp_parent(kind: str, p: Path) -> str | None:
    """The id an exchange appended to ``p`` continues from (omp's entries form a tree; others: ``None``)."""
    return _last_omp_id(p) if kind == "omp" else None


def exchange_maker(kind: str, rng: random.Random, sid: str, parent: str | None) -> Any:
    """The function that appends the next exchange of ``kind`` to a list of lines (an omp one under ``parent``)."""
    if kind == "claude_code":
        return Claude(rng, sid).exchange
    if kind == "codex":
        x = Codex(rng, sid)
        x.total = 10**9
        return x.turn
    o = Omp(rng, sid)
    o.parent = parent
    return o.turn


def count_lines(root: Path) -> int:
    """The lines of every transcript under ``root``."""
    return sum(_size_and_lines(p)[1] for p in root.rglob("*.jsonl"))


def _size_and_lines(p: Path) -> tuple[int, int]:
    size = lines = 0
    with open(p, "rb") as f:
        while chunk := f.read(1 << 20):
            size += len(chunk)
            lines += chunk.count(b"\n")
    return size, lines


def _lines_of_next_turn(kind: str, seed: str, sid: str, p: Path, percent: float) -> list[bytes]:
    """``percent`` % of ``p``'s lines (at least one), holding about ``percent`` % of its bytes.

    The first lines of the file's next exchanges, their tool outputs sized (by
    bisection) so that those lines hold the wanted bytes; a file's own random
    generator, so the result does not depend on the other files.
    """
    size, lines = _size_and_lines(p)
    wanted = max(1, round(lines * percent / 100))
    want_bytes = size * percent / 100
    parent = omp_parent(kind, p)

    def take(result_bytes: int) -> list[bytes]:
        maker = exchange_maker(kind, random.Random(seed), sid, parent)
        out: list[bytes] = []
        while len(out) < wanted:
            maker(out, result_bytes)
        return out[:wanted]

    lo, hi = 50, 400_000
    for _ in range(16):
        if hi - lo < 16:
            break
        mid = (lo + hi) // 2
        if sum(len(b) for b in take(mid)) < want_bytes:
            lo = mid
        else:
            hi = mid
    return take(lo)


def _fit(kind: str, left: int) -> int:
    """The mean tool-output size of the next appended exchange, for ``left`` bytes still wanted."""
    # An exchange holds about three tool outputs on average plus ~1.5 KB of envelope.
    return max(50, min(RESULT_BYTES[kind], (left - 1500) // 3))


def _last_omp_id(p: Path) -> str | None:
    with open(p, "rb") as f:
        f.seek(max(0, p.stat().st_size - 1_000_000))
        tail = f.read().splitlines()
    for line in reversed(tail):
        try:
            v = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(v, dict) and "id" in v and v.get("type") == "message":
            return str(v["id"])
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("root", type=Path)
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-big", action="store_true", help="no >100 MB files and no 50 MB line")
    a = ap.parse_args()
    n = generate(a.root, a.size_mb, a.seed, big=not a.no_big)
    print(f"wrote {n / 1e6:.1f} MB under {a.root}")


if __name__ == "__main__":
    main()
