"""Scripted model servers: what a harness under test talks to instead of a real model.

One class per wire format. Each answers from a **script** (plain JSON, so the driver can be handed
it in a file): scenario name -> list of steps. A request picks its scenario from the last
``[rig:<name>]`` marker in a user-typed text of the conversation it sends, and its step from how
many assistant messages follow that marker. The server keeps no conversation state: a resumed
session, a subagent (its own conversation, whose prompt carries its own marker) and a retried
request all land on the step their history says. A request with no marker, or past the end of its
scenario, gets the text ``DEFAULT_TEXT`` (the harness's side calls: titles, summaries, a custom
command with no marker).

A step is ``{"text": "..."}``, ``{"tool": NAME, "input": {...}}`` or a list of those (one
assistant message with several blocks: parallel calls).

Every request is recorded (method, path, the decoded JSON body, the step it got), so a test can
assert what the harness sent back, e.g. the ``tool_result`` carrying a denial's reason.

Standard library only (``http.server`` in a thread): the driver runs inside a fresh network
namespace under the venv's python, and the servers must not need anything the rig does not pin.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: The marker a prompt carries to name its scenario.
MARKER = re.compile(r"\[rig:([a-z0-9_-]+)\]")
#: What a request outside any script is answered.
DEFAULT_TEXT = "ok"
#: The model name answered when the request names none.
DEFAULT_MODEL = "claude-rig-1"

Step = dict[str, Any] | list[dict[str, Any]]
Script = dict[str, list[Step]]


def _blocks(step: Step) -> list[dict[str, Any]]:
    return step if isinstance(step, list) else [step]


class ScriptedServer:
    """The part every wire format shares: the script, the log of requests, the HTTP server thread."""

    def __init__(self, script: Script) -> None:
        """Serve ``script``; call :meth:`start` to listen."""
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._calls = 0
        self._http: ThreadingHTTPServer | None = None

    # --- what a wire format provides -------------------------------------------------------
    def conversation(self, body: dict[str, Any]) -> list[tuple[str, list[str]]]:
        """The request's messages as (role, user-typed texts) pairs, oldest first."""
        raise NotImplementedError

    def handle(self, handler: BaseHTTPRequestHandler, path: str, body: Any) -> None:
        """Answer one request (the body already decoded and recorded)."""
        raise NotImplementedError

    # --- shared ----------------------------------------------------------------------------
    def pick(self, body: dict[str, Any]) -> tuple[str, int, Step]:
        """The scenario, step index and step a conversation is at (``("", -1, default)`` outside the script)."""
        messages = self.conversation(body)
        for i in range(len(messages) - 1, -1, -1):
            role, texts = messages[i]
            if role != "user":
                continue
            names = [m for t in texts for m in MARKER.findall(t)]
            if not names:
                continue
            name = names[-1]
            index = sum(1 for r, _ in messages[i + 1:] if r == "assistant")
            steps = self.script.get(name, [])
            if index < len(steps):
                return name, index, steps[index]
            return name, index, {"text": DEFAULT_TEXT}
        return "", -1, {"text": DEFAULT_TEXT}

    def next_call_id(self, prefix: str) -> str:
        """A call id unique within this server's life."""
        with self._lock:
            self._calls += 1
            return f"{prefix}{self._calls:04d}rig"

    def record(self, entry: dict[str, Any]) -> None:
        """Keep one request's record."""
        with self._lock:
            self.requests.append(entry)

    def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen in a daemon thread; the base URL."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the record is the log

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = {"_undecodable": raw[:200].decode("utf-8", "replace")}
                server.handle(self, self.path, body)

            do_POST = do_GET = do_PUT = do_DELETE = do_HEAD = _any

        self._http = ThreadingHTTPServer((host, port), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return f"http://{host}:{self._http.server_address[1]}"

    def stop(self) -> None:
        """Stop listening."""
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()


def send_json(handler: BaseHTTPRequestHandler, status: int, doc: Any) -> None:
    """One JSON reply with its length."""
    data = json.dumps(doc).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def send_sse(handler: BaseHTTPRequestHandler, events: list[tuple[str, dict[str, Any]]]) -> None:
    """A complete server-sent event stream (``event:`` + ``data:`` per event), then close."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/event-stream")
    handler.send_header("Cache-Control", "no-cache")
    handler.send_header("Connection", "close")
    handler.end_headers()
    for name, data in events:
        handler.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    handler.wfile.flush()
    handler.close_connection = True


class AnthropicMessagesServer(ScriptedServer):
    """Anthropic Messages (``POST /v1/messages``, streamed or not), what Claude Code speaks.

    ``/v1/messages/count_tokens`` answers a count from the body's size; any other path is recorded
    and answered 404, so a test sees what else the harness asked for.
    """

    def conversation(self, body: dict[str, Any]) -> list[tuple[str, list[str]]]:
        """Role and the text blocks of each message (a ``tool_result``'s content is not typed text)."""
        out: list[tuple[str, list[str]]] = []
        for m in body.get("messages") or []:
            content = m.get("content")
            if isinstance(content, str):
                texts = [content]
            else:
                texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            out.append((str(m.get("role")), texts))
        return out

    def usage(self, body: dict[str, Any], index: int) -> dict[str, int]:
        """Deterministic usage: a function of the request's size and the step."""
        return {"input_tokens": 100 + len(body.get("messages") or []), "output_tokens": 7 + max(index, 0),
                "cache_creation_input_tokens": 11, "cache_read_input_tokens": 13 * (max(index, 0) + 1)}

    def handle(self, handler: BaseHTTPRequestHandler, path: str, body: Any) -> None:
        """Messages, count_tokens, 404 for anything else."""
        route = path.split("?", 1)[0]
        if route == "/v1/messages" and isinstance(body, dict):
            name, index, step = self.pick(body)
            self.record({"path": route, "body": body, "scenario": name, "step": index})
            self._answer(handler, body, index, step)
        elif route == "/v1/messages/count_tokens" and isinstance(body, dict):
            self.record({"path": route, "body": None, "scenario": "", "step": -1})
            send_json(handler, 200, {"input_tokens": len(json.dumps(body)) // 4})
        else:
            self.record({"path": route, "body": None, "scenario": "", "step": -1, "method": handler.command})
            send_json(handler, 404, {"type": "error", "error": {"type": "not_found_error", "message": route}})

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], index: int, step: Step) -> None:
        blocks: list[dict[str, Any]] = []
        for b in _blocks(step):
            if "tool" in b:
                blocks.append({"type": "tool_use", "id": self.next_call_id("toolu_"), "name": b["tool"],
                               "input": b.get("input", {})})
            else:
                blocks.append({"type": "text", "text": b.get("text", DEFAULT_TEXT)})
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        usage = self.usage(body, index)
        model = body.get("model") or DEFAULT_MODEL
        msg_id = self.next_call_id("msg_")
        if not body.get("stream"):
            send_json(handler, 200, {"id": msg_id, "type": "message", "role": "assistant", "model": model,
                                     "content": blocks, "stop_reason": stop, "stop_sequence": None,
                                     "usage": usage})
            return
        start_usage = {**usage, "output_tokens": 1}
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": start_usage}}),
        ]
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {"type": "text", "text": ""}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "text_delta", "text": b["text"]}}))
            else:
                events.append(("content_block_start", {"type": "content_block_start", "index": i,
                                                       "content_block": {**b, "input": {}}}))
                events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                    "type": "input_json_delta", "partial_json": json.dumps(b["input"])}}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": usage["output_tokens"]}}))
        events.append(("message_stop", {"type": "message_stop"}))
        send_sse(handler, events)


class OpenAIResponsesServer(ScriptedServer):
    """OpenAI Responses (``POST /v1/responses``, streamed), what Codex speaks to a custom provider.

    A step's tool call is a ``function_call`` item (``arguments`` the JSON of its input), or, with
    ``"custom": true``, a ``custom_tool_call`` whose ``input`` is the step's ``input`` text (Codex's
    freeform ``apply_patch``). In the request's ``input``, every model output item after the
    marker (a call or an assistant message) counts as one step: the rig's scripts give one item
    per step.
    """

    def conversation(self, body: dict[str, Any]) -> list[tuple[str, list[str]]]:
        """User messages with their ``input_text``s; a model output item as one assistant entry."""
        out: list[tuple[str, list[str]]] = []
        for item in body.get("input") or []:
            if not isinstance(item, dict):
                continue
            typ = item.get("type", "message")
            role = item.get("role")
            if typ == "message" and role == "user":
                content = item.get("content")
                texts = [content] if isinstance(content, str) else [
                    b.get("text", "") for b in content or [] if isinstance(b, dict)
                    and b.get("type") in ("input_text", "text")]
                out.append(("user", texts))
            elif (typ == "message" and role == "assistant") or typ in ("function_call", "custom_tool_call",
                                                                       "local_shell_call"):
                out.append(("assistant", []))
        return out

    @staticmethod
    def is_review(body: dict[str, Any]) -> bool:
        """Whether the request is Codex's automatic approval review (``--approve-for-me``): it asks
        for a JSON ``outcome`` (its ``text.format`` schema), about a transcript holding the markers."""
        fmt = (body.get("text") or {}).get("format") or {}
        props = (fmt.get("schema") or {}).get("properties") or {} if isinstance(fmt, dict) else {}
        return isinstance(props, dict) and "outcome" in props

    def handle(self, handler: BaseHTTPRequestHandler, path: str, body: Any) -> None:
        """Responses; 404 for anything else (recorded)."""
        route = path.split("?", 1)[0]
        if route.endswith("/responses") and isinstance(body, dict) and self.is_review(body):
            # The review's answer: the script's "review" scenario's first step, else a denial.
            step = (self.script.get("review") or [{"text": json.dumps({"outcome": "deny", "risk_level": "high",
                                                                        "rationale": "rig: no review scripted"})}])[0]
            self.record({"path": route, "body": body, "scenario": "review", "step": 0})
            self._answer(handler, body, 0, step)
        elif route.endswith("/responses") and isinstance(body, dict):
            name, index, step = self.pick(body)
            self.record({"path": route, "body": body, "scenario": name, "step": index})
            self._answer(handler, body, index, step)
        else:
            self.record({"path": route, "body": None, "scenario": "", "step": -1, "method": handler.command})
            send_json(handler, 404, {"error": {"type": "not_found", "message": route}})

    @staticmethod
    def spawned(body: dict[str, Any]) -> str:
        """The ``agent_id`` of the newest ``spawn_agent`` output in the request (``""`` when none)."""
        found = ""
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                try:
                    out = json.loads(item.get("output") or "")
                except (TypeError, ValueError):
                    continue
                if isinstance(out, dict) and isinstance(out.get("agent_id"), str):
                    found = out["agent_id"]
        return found

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], index: int, step: Step) -> None:
        items: list[dict[str, Any]] = []
        # "{spawned}" in a step's input: the subagent the conversation spawned last (a wait_agent's target).
        spawned = self.spawned(body)
        step = json.loads(json.dumps(step).replace("{spawned}", spawned)) if spawned else step
        for b in _blocks(step):
            if "tool" in b and b.get("custom"):
                items.append({"type": "custom_tool_call", "id": self.next_call_id("ctc_"), "status": "completed",
                              "call_id": self.next_call_id("call_"), "name": b["tool"], "input": b["input"]})
            elif "tool" in b:
                item = {"type": "function_call", "id": self.next_call_id("fc_"), "status": "completed",
                        "call_id": self.next_call_id("call_"), "name": b["tool"],
                        "arguments": json.dumps(b.get("input", {}))}
                if b.get("namespace"):
                    item["namespace"] = b["namespace"]  # a tool of a namespace (Codex's multi_agent_v1)
                items.append(item)
            else:
                items.append({"type": "message", "id": self.next_call_id("msg_"), "status": "completed",
                              "role": "assistant", "content": [{"type": "output_text", "text": b.get("text", DEFAULT_TEXT),
                                                                "annotations": []}]})
        n = len(body.get("input") or [])
        usage = {"input_tokens": 100 + n, "input_tokens_details": {"cached_tokens": 10 * (max(index, 0) + 1)},
                 "output_tokens": 7 + max(index, 0), "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 107 + n + max(index, 0)}
        rid = self.next_call_id("resp_")
        model = body.get("model") or DEFAULT_MODEL
        base = {"id": rid, "object": "response", "created_at": 1700000000, "model": model}
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"type": "response.created",
                                  "response": {**base, "status": "in_progress", "output": []}})]
        for i, item in enumerate(items):
            events.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                          "item": item}))
            if item["type"] == "message":
                text = item["content"][0]["text"]
                events.append(("response.output_text.delta", {"type": "response.output_text.delta",
                                                              "item_id": item["id"], "output_index": i,
                                                              "content_index": 0, "delta": text}))
            events.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": i,
                                                         "item": item}))
        events.append(("response.completed", {"type": "response.completed", "response": {
            **base, "status": "completed", "output": items, "usage": usage}}))
        send_sse(handler, events)


class GeminiServer(ScriptedServer):
    """Gemini API (``POST /v1beta/models/<model>:streamGenerateContent?alt=sse``), what Gemini CLI speaks.

    A step's tool call is a ``functionCall`` part (no id: the real API gives none, the harness makes
    its own). ``:generateContent`` (the harness's side questions) answers the same way, unstreamed;
    ``:countTokens`` a count from the body's size; anything else is recorded and answered 404. Every
    ``model`` content after the marker counts as one step.
    """

    def conversation(self, body: dict[str, Any]) -> list[tuple[str, list[str]]]:
        """``user`` contents with their text parts (a ``functionResponse`` has none); ``model`` as assistant."""
        out: list[tuple[str, list[str]]] = []
        for c in body.get("contents") or []:
            if not isinstance(c, dict):
                continue
            texts = [p["text"] for p in c.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str)]
            out.append(("assistant" if c.get("role") == "model" else "user", texts))
        return out

    def handle(self, handler: BaseHTTPRequestHandler, path: str, body: Any) -> None:
        """streamGenerateContent (SSE), generateContent, countTokens; 404 for anything else."""
        route = path.split("?", 1)[0]
        verb = route.rsplit(":", 1)[-1] if ":" in route else ""
        if verb in ("streamGenerateContent", "generateContent") and isinstance(body, dict):
            name, index, step = self.pick(body) if verb == "streamGenerateContent" else ("", -1, {"text": DEFAULT_TEXT})
            self.record({"path": route, "body": body, "scenario": name, "step": index})
            doc = self._response(route, body, index, step)
            if verb == "generateContent":
                send_json(handler, 200, doc)
                return
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(f"data: {json.dumps(doc)}\r\n\r\n".encode())
            handler.wfile.flush()
            handler.close_connection = True
        elif verb == "countTokens" and isinstance(body, dict):
            self.record({"path": route, "body": None, "scenario": "", "step": -1})
            send_json(handler, 200, {"totalTokens": len(json.dumps(body)) // 4})
        else:
            self.record({"path": route, "body": None, "scenario": "", "step": -1, "method": handler.command})
            send_json(handler, 404, {"error": {"code": 404, "message": route, "status": "NOT_FOUND"}})

    def _response(self, route: str, body: dict[str, Any], index: int, step: Step) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        for b in _blocks(step):
            if "tool" in b:
                parts.append({"functionCall": {"name": b["tool"], "args": b.get("input", {})}})
            else:
                parts.append({"text": b.get("text", DEFAULT_TEXT)})
        n = len(body.get("contents") or [])
        usage = {"promptTokenCount": 100 + n, "candidatesTokenCount": 7 + max(index, 0),
                 "cachedContentTokenCount": 10 * (max(index, 0) + 1), "totalTokenCount": 107 + n + max(index, 0)}
        model = route.rsplit("/", 1)[-1].split(":", 1)[0] or DEFAULT_MODEL
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": usage, "modelVersion": model, "responseId": self.next_call_id("resp_")}


class ChatCompletionsServer(ScriptedServer):
    """OpenAI Chat Completions (``POST .../chat/completions``, streamed or not), what opencode's
    ``@ai-sdk/openai-compatible`` provider speaks.

    A step's tool call is a ``tool_calls`` entry of the assistant delta (``arguments`` the JSON of
    its input). In the request's ``messages``, each assistant message after the marker counts as
    one step (a ``tool`` message answers a step, it is not one). ``/models`` answers the request's
    model; any other path is recorded and answered 404.
    """

    def conversation(self, body: dict[str, Any]) -> list[tuple[str, list[str]]]:
        """Role and text parts of each message (a ``tool`` message has no typed text)."""
        out: list[tuple[str, list[str]]] = []
        for m in body.get("messages") or []:
            if not isinstance(m, dict):
                continue
            content = m.get("content")
            if isinstance(content, str):
                texts = [content]
            else:
                texts = [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]
            role = str(m.get("role"))
            out.append((role, texts if role == "user" else []))
        return out

    def handle(self, handler: BaseHTTPRequestHandler, path: str, body: Any) -> None:
        """Chat completions; 404 for anything else (recorded)."""
        route = path.split("?", 1)[0]
        if route.endswith("/chat/completions") and isinstance(body, dict):
            name, index, step = self.pick(body)
            self.record({"path": route, "body": body, "scenario": name, "step": index})
            self._answer(handler, body, index, step)
        else:
            self.record({"path": route, "body": None, "scenario": "", "step": -1, "method": handler.command})
            send_json(handler, 404, {"error": {"type": "not_found", "message": route}})

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], index: int, step: Step) -> None:
        text = "".join(b.get("text", DEFAULT_TEXT) for b in _blocks(step) if "tool" not in b)
        calls = [{"index": i, "id": self.next_call_id("call_"), "type": "function",
                  "function": {"name": b["tool"], "arguments": json.dumps(b.get("input", {}))}}
                 for i, b in enumerate(b for b in _blocks(step) if "tool" in b)]
        finish = "tool_calls" if calls else "stop"
        n = len(body.get("messages") or [])
        usage = {"prompt_tokens": 100 + n, "completion_tokens": 7 + max(index, 0),
                 "total_tokens": 107 + n + max(index, 0),
                 "prompt_tokens_details": {"cached_tokens": 10 * (max(index, 0) + 1)}}
        cid = self.next_call_id("chatcmpl-")
        model = body.get("model") or DEFAULT_MODEL
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
        if not body.get("stream"):
            send_json(handler, 200, {"id": cid, "object": "chat.completion", "created": 1700000000, "model": model,
                                     "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                     "usage": usage})
            return
        base = {"id": cid, "object": "chat.completion.chunk", "created": 1700000000, "model": model}
        chunks: list[dict[str, Any]] = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                              "finish_reason": None}]}]
        if text:
            chunks.append({**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})
        if calls:
            chunks.append({**base, "choices": [{"index": 0, "delta": {"tool_calls": calls}, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        chunks.append({**base, "choices": [], "usage": usage})
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        handler.end_headers()
        for chunk in chunks:  # Chat Completions streams ``data:`` lines only, ended by ``[DONE]``
            handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
        handler.close_connection = True


#: The server class of each wire format, by the name a harness's runner gives.
SERVERS: dict[str, type[ScriptedServer]] = {"anthropic": AnthropicMessagesServer, "responses": OpenAIResponsesServer}
SERVERS["gemini"] = GeminiServer


SERVERS["chat"] = ChatCompletionsServer
