"""A fake model server on loopback for the real adapters: Anthropic Messages, OpenAI Chat Completions and
Responses, and Gemini generateContent, each streaming when asked, answering every prompt with one short text.

It binds 127.0.0.1 only. Every request is recorded (path, the names of its headers, its body) so a test can
say what an adapter asked for. A prompt holding WRITE_MARKER is answered, once per conversation, with a tool
call that writes the file named after the marker (Anthropic's `Write`), so the adapter asks its client for permission.
"""

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWER = "pong from the fake model"
WRITE_MARKER = "please write the file"
MAX_BODY = 32 * 1024 * 1024
MODEL_PATH = re.compile(r"/models/([^/:]+):(\w+)")


class ModelServer:
    """ThreadingHTTPServer on 127.0.0.1:0; `url` is its base address, `requests` what it heard."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="fake-models", daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def record(self, method, path, headers, body):
        with self.lock:
            self.requests.append({"method": method, "path": path, "headers": sorted(headers), "body": body})

    def paths(self):
        with self.lock:
            return [r["path"] for r in self.requests]


def _handler(owner):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802 (http.server's name)
            owner.record("GET", self.path, dict(self.headers), None)
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}],
                                 "models": [{"name": "models/fake-model"}]})
            else:
                self._json(404, {"error": {"message": f"no such route {self.path}", "type": "not_found"}})

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(min(length, MAX_BODY)) if length else self._chunked()
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"raw": raw[:200].decode("utf-8", "replace")}
            owner.record("POST", self.path, dict(self.headers), body)
            path = self.path.split("?", 1)[0]
            if path.endswith("/messages/count_tokens"):
                return self._json(200, {"input_tokens": 12})
            if path.endswith("/messages"):
                return anthropic(self, body)
            if path.endswith("/chat/completions"):
                return chat(self, body)
            if path.endswith("/responses"):
                return responses(self, body)
            match = MODEL_PATH.search(path)
            if match and match.group(2) == "countTokens":
                return self._json(200, {"totalTokens": 12})
            if match:
                return gemini(self, body, match.group(1), stream=match.group(2) == "streamGenerateContent")
            self._json(404, {"error": {"message": f"no such route {self.path}", "type": "not_found"}})

        def _chunked(self):
            if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                return b""
            data = b""
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()

        def _json(self, status, document):
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def sse(self, events):
            """events: (name or None, document or str) pairs, written as one Server-Sent Events stream."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for name, document in events:
                data = document if isinstance(document, str) else json.dumps(document)
                self.wfile.write(((f"event: {name}\n" if name else "") + f"data: {data}\n\n").encode())
                self.wfile.flush()
            self.close_connection = True

    return Handler


def last_user_text(body):
    """The text of the conversation's last user message, in any of the three APIs' shapes."""
    for key in ("messages", "input", "contents"):
        items = body.get(key)
        if isinstance(items, str):
            return items
        if isinstance(items, list):
            for item in reversed(items):
                if isinstance(item, dict) and item.get("role") == "user":
                    return _text_of(item.get("content", item.get("parts")))
    return ""


def _text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_text_of(part.get("text") if isinstance(part, dict) and "text" in part else
                                 part.get("content") if isinstance(part, dict) else part) for part in content)
    return ""


def _has_tool_result(body):
    return any(isinstance(m, dict) and isinstance(m.get("content"), list) and any(
        isinstance(p, dict) and p.get("type") == "tool_result" for p in m["content"]) for m in body.get("messages", []))


# -- Anthropic Messages --------------------------------------------------------------------------------------

def anthropic(handler, body):
    model = body.get("model") or "fake-model"
    asked = last_user_text(body)
    wants_write = WRITE_MARKER in asked and not _has_tool_result(body) and _offers_tool(body, "Write")
    usage = {"input_tokens": 12, "output_tokens": 5}
    if wants_write:
        block = {"type": "tool_use", "id": "toolu_fake_1", "name": "Write",
                 "input": {"file_path": asked.split(WRITE_MARKER, 1)[1].split()[0], "content": "hello\n"}}
        stop = "tool_use"
    else:
        block, stop = {"type": "text", "text": ANSWER}, "end_turn"
    message = {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [block],
               "stop_reason": stop, "stop_sequence": None, "usage": usage}
    if not body.get("stream"):
        return handler._json(200, message)
    start = dict(message, content=[], stop_reason=None, usage={"input_tokens": 12, "output_tokens": 0})
    if block["type"] == "text":
        opened, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": ANSWER}
    else:
        opened = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    handler.sse([
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": opened}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                           "usage": {"output_tokens": 5}}),
        ("message_stop", {"type": "message_stop"}),
    ])


def _offers_tool(body, name):
    return any(isinstance(t, dict) and t.get("name") == name for t in body.get("tools") or [])


# -- OpenAI Chat Completions ---------------------------------------------------------------------------------

def chat(handler, body):
    model = body.get("model") or "fake-model"
    text = schema_answer(_chat_schema(body)) if _chat_schema(body) else ANSWER
    usage = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
    if not body.get("stream"):
        return handler._json(200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": text}}],
                                   "usage": usage})

    def chunk(delta, finish=None, **extra):
        return (None, {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})
    handler.sse([chunk({"role": "assistant", "content": ""}), chunk({"content": text}), chunk({}, "stop"),
                 (None, {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                         "choices": [], "usage": usage}),
                 (None, "[DONE]")])


def _chat_schema(body):
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        return (response_format.get("json_schema") or {}).get("schema") or {}
    return None


# -- OpenAI Responses ----------------------------------------------------------------------------------------

def responses(handler, body):
    model = body.get("model") or "fake-model"
    item = {"type": "message", "id": "msg_fake", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}
    usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 17}
    done = {"id": "resp_fake", "object": "response", "created_at": 0, "status": "completed", "model": model,
            "output": [item], "usage": usage}
    if not body.get("stream"):
        return handler._json(200, done)
    started = dict(done, status="in_progress", output=[], usage=None)
    part = {"type": "output_text", "text": "", "annotations": []}
    handler.sse([
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": started}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                        "output_index": 0, "item": dict(item, status="in_progress", content=[])}),
        ("response.content_part.added", {"type": "response.content_part.added", "sequence_number": 2,
                                         "item_id": "msg_fake", "output_index": 0, "content_index": 0, "part": part}),
        ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 3,
                                        "item_id": "msg_fake", "output_index": 0, "content_index": 0,
                                        "delta": ANSWER}),
        ("response.output_text.done", {"type": "response.output_text.done", "sequence_number": 4,
                                       "item_id": "msg_fake", "output_index": 0, "content_index": 0,
                                       "text": ANSWER}),
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 5,
                                       "output_index": 0, "item": item}),
        ("response.completed", {"type": "response.completed", "sequence_number": 6, "response": done}),
    ])


# -- Gemini generateContent ----------------------------------------------------------------------------------

def gemini(handler, body, model, stream):
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    text = schema_answer(schema) if schema or config.get("responseMimeType") == "application/json" else ANSWER
    answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP",
                              "index": 0}],
              "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17},
              "modelVersion": model}
    if stream:
        return handler.sse([(None, answer)])
    handler._json(200, answer)


def schema_answer(schema):
    """A JSON text that satisfies a (simple) JSON schema: what a router or checker asking for JSON gets."""
    return json.dumps(_instance(schema or {"type": "object"}))


def _instance(schema):
    kind = str(schema.get("type") or "object").lower()
    if schema.get("enum"):
        return schema["enum"][0]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {name: _instance(sub) for name, sub in properties.items()}
    if kind == "array":
        return []
    if kind == "boolean":
        return False
    if kind in ("integer", "number"):
        return 0
    return "fake"
