"""The reference agent's MCP client: it reaches the tool server its ACP client offered in session/new
or session/load (streamable HTTP, or a stdio command it launches) and calls tools on it.

Stdlib only. A session connects on its first tool call and keeps the connection for its process.
"""

from __future__ import annotations

import http.client
import itertools
import json
import os
import subprocess
import threading
from urllib.parse import urlsplit

from compozy.acp import protocol

PROTOCOL_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "compozy-reference", "version": "1"}
ACCEPT = "application/json, text/event-stream"
CLOSE_GRACE = 5.0


class ToolError(Exception):
    """The server refused the request (a JSON-RPC error) or could not be reached."""


def connect(servers: list, cwd: str) -> Connection:
    """An initialized connection to the first offered server this agent can use."""
    for server in servers:
        if not isinstance(server, dict):
            continue
        if server.get("type") == "http" and isinstance(server.get("url"), str):
            connection = HttpConnection(server["url"], pairs(server.get("headers")))
        elif server.get("type") in (None, "stdio") and isinstance(server.get("command"), str):
            connection = StdioConnection([server["command"], *map(str, server.get("args") or [])],
                                         pairs(server.get("env")), cwd)
        else:
            continue
        connection.initialize()
        return connection
    raise ToolError("no MCP server was offered in mcpServers")


def pairs(entries) -> dict:
    """ACP's [{"name", "value"}] lists as a dict."""
    return {str(e.get("name")): str(e.get("value")) for e in entries or [] if isinstance(e, dict)}


class Connection:
    def __init__(self):
        self.ids = itertools.count(1)
        self.lock = threading.Lock()

    def next_id(self) -> int:
        with self.lock:
            return next(self.ids)

    def initialize(self) -> None:
        self.request("initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {},
                                    "clientInfo": CLIENT_INFO})
        self.notify("notifications/initialized")

    def call_tool(self, name: str, arguments: dict) -> dict:
        return self.request("tools/call", {"name": name, "arguments": arguments})

    def request(self, method: str, params: dict) -> dict:
        request_id = self.next_id()
        answer = self.exchange(protocol.make_request(request_id, method, params), request_id)
        if not isinstance(answer, dict):
            raise ToolError(f"{method}: no answer")
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise ToolError(f"{method}: {error.get('code')} {error.get('message')}")
        return answer.get("result") if isinstance(answer.get("result"), dict) else {}

    def notify(self, method: str) -> None:
        self.exchange(protocol.make_notification(method), None)

    def exchange(self, message: dict, request_id) -> dict | None:
        raise NotImplementedError

    def close(self) -> None:
        """Nothing to release: every exchange has its own HTTP connection."""


class HttpConnection(Connection):
    """Streamable HTTP: one POST per message; the answer is one JSON object or an event stream."""

    def __init__(self, url: str, headers: dict):
        super().__init__()
        self.url, self.headers = urlsplit(url), headers
        self.version = None

    def exchange(self, message: dict, request_id) -> dict | None:
        connection = http.client.HTTPConnection(self.url.hostname, self.url.port or 80)
        headers = {**self.headers, "Content-Type": "application/json", "Accept": ACCEPT}
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        try:
            connection.request("POST", self.url.path + (f"?{self.url.query}" if self.url.query else ""),
                               body=json.dumps(message), headers=headers)
            response = connection.getresponse()
            if request_id is None:
                response.read()
                return None
            if "text/event-stream" in (response.getheader("Content-Type") or ""):
                return next((m for m in events(response) if m.get("id") == request_id), None)
            answer = json.loads(response.read() or b"null")
        except (OSError, ValueError, http.client.HTTPException) as error:
            raise ToolError(f"{message.get('method')}: {error}") from None
        finally:
            connection.close()
        if message.get("method") == "initialize" and isinstance(answer, dict):
            self.version = (answer.get("result") or {}).get("protocolVersion")
        return answer


def events(response):
    """The JSON messages of an event stream."""
    data = []
    for raw in response:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            try:
                message = json.loads("\n".join(data))
            except ValueError:
                message = None
            data = []
            if isinstance(message, dict):
                yield message


class StdioConnection(Connection):
    """A server process of ours on stdin/stdout, newline-delimited; answers are matched by id."""

    def __init__(self, argv: list, env: dict, cwd: str):
        super().__init__()
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd,
                                        env={**os.environ, **env})
        self.waiting: dict = {}
        self.write_lock = threading.Lock()
        threading.Thread(target=self.read, name="mcp-stdio", daemon=True).start()

    def exchange(self, message: dict, request_id) -> dict | None:
        slot = [threading.Event(), None]
        if request_id is not None:
            self.waiting[request_id] = slot
        try:
            with self.write_lock:
                self.process.stdin.write(json.dumps(message).encode() + b"\n")
                self.process.stdin.flush()
        except OSError as error:
            raise ToolError(f"{message.get('method')}: {error}") from None
        if request_id is None:
            return None
        slot[0].wait()
        return slot[1]

    def close(self) -> None:
        """End the server as MCP's stdio transport says: close its input, wait, then terminate it."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(CLOSE_GRACE)
        except subprocess.TimeoutExpired:
            self.process.terminate()
            self.process.wait(CLOSE_GRACE)

    def read(self) -> None:
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            slot = self.waiting.pop(message.get("id"), None) if isinstance(message, dict) else None
            if slot is not None:
                slot[1] = message
                slot[0].set()
        for slot in list(self.waiting.values()):  # the server ended: nobody answers these
            slot[0].set()
