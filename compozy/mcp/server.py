"""The MCP server `compozy`: one JSON-RPC message in, its answer out, for a caller already identified.

Layer 6 (surface). Stateless: every message stands alone (no MCP session ID), so the same function
answers the streamable HTTP endpoint and, through it, the stdio relay. It speaks the lifecycle
(`initialize`, `notifications/initialized`, `ping`) and tools (`tools/list`, `tools/call`).
"""

from compozy import __version__, api, jsonrpc
from compozy.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from compozy.mcp import tools

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")  # newest first
SERVER_INFO = {"name": "compozy", "title": "compozy sessions", "version": __version__}
INSTRUCTIONS = ("Tools over the compozy daemon's sessions. You are the calling session: tools act inside your "
                "workspace, a session you create is linked to you, and you cannot stop or prompt yourself.")


class Refusal(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


def handle(manager, caller, message):
    """The JSON-RPC response to one message; None for a notification or a response (nothing to answer)."""
    if not jsonrpc.is_message(message):
        return jsonrpc.error(None, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
    if not jsonrpc.wants_answer(message):
        return None  # notifications (initialized, cancelled) and responses need no answer
    method, params = message["method"], message.get("params") or {}
    if not isinstance(method, str) or not isinstance(params, dict):
        return jsonrpc.error(message["id"], INVALID_REQUEST, "method must be a string and params an object")
    handler = METHODS.get(method)
    if handler is None:
        return jsonrpc.error(message["id"], METHOD_NOT_FOUND, f"Method not found: {method[:100]}")
    try:
        return jsonrpc.result(message["id"], handler(manager, caller, params))
    except Refusal as refusal:
        return jsonrpc.error(message["id"], refusal.code, refusal.message)


def negotiated(version):
    """The protocol version to answer: the client's when we speak it, else our newest."""
    return version if version in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]


def _initialize(manager, caller, params):
    return {"protocolVersion": negotiated(params.get("protocolVersion")),
            "capabilities": {"tools": {"listChanged": False}}, "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS}


def _ping(manager, caller, params):
    return {}


def _list_tools(manager, caller, params):
    return {"tools": tools.listing()}


def _call_tool(manager, caller, params):
    operation = api.TOOLS.get(params.get("name"))
    if operation is None:
        raise Refusal(INVALID_PARAMS, f"Unknown tool: {str(params.get('name'))[:100]}")
    arguments = params.get("arguments")
    if not isinstance(arguments, (dict, type(None))):
        raise Refusal(INVALID_PARAMS, "arguments must be an object")
    return tools.call(manager, caller, operation, arguments or {})


METHODS = {"initialize": _initialize, "ping": _ping, "tools/list": _list_tools, "tools/call": _call_tool}
