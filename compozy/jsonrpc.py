"""JSON-RPC 2.0 framing, the one place it is written: ACP (compozy.acp.protocol), the native tool
server (compozy.mcp.server, compozy.http.tool_server) and its stdio relay (compozy.cli.relay) build
and recognise their messages here.

Layer 0: stdlib and compozy.text only.
"""

from compozy.text import json_line

ENVELOPE, VERSION = "jsonrpc", "2.0"  # the key every message carries, and its value
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

RequestId = int | str | None  # None: the answer to a message whose ID could not be read


def encode(message: object) -> bytes:
    """One message as a single UTF-8 line ending in a newline (compozy.text.json_line)."""
    return json_line(message)


def request(request_id: RequestId, method: str, params: dict) -> dict:
    return {ENVELOPE: VERSION, "id": request_id, "method": method, "params": params}


def notification(method: str, params: dict | None = None) -> dict:
    """A message that wants no answer; params None leaves them out."""
    return {ENVELOPE: VERSION, "method": method, **({"params": params} if params is not None else {})}


def result(request_id: RequestId, value: object) -> dict:
    return {ENVELOPE: VERSION, "id": request_id, "result": value}


def error(request_id: RequestId, code: int, message: str, data: object = None) -> dict:
    body = {"code": code, "message": message, **({"data": data} if data is not None else {})}
    return {ENVELOPE: VERSION, "id": request_id, "error": body}


def is_message(payload: object) -> bool:
    """A JSON-RPC 2.0 message (of any kind), as far as its envelope says."""
    return isinstance(payload, dict) and payload.get(ENVELOPE) == VERSION


def wants_answer(payload: object) -> bool:
    """A request: a method and an ID (a notification or a response needs no answer)."""
    return isinstance(payload, dict) and "method" in payload and "id" in payload
