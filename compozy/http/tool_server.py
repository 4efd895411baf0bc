"""The native tool server's streamable HTTP endpoint: POST TOOL_SERVER_PATH + <binding secret>.

Layer 6 (surface). Behind the same guards as every route (Host, Origin, token, body size, JSON).
Each POST carries one JSON-RPC message: a request is answered as one application/json object, a
notification or response with 202 Accepted. The server keeps no MCP session and opens no event
stream, so GET and DELETE are 405, as the transport allows. A secret that names no live binding
is 401 with a JSON-RPC error whose data is the error body (agent_identity_invalid).
"""

import json

from flask import Response, jsonify, request

from compozy import jsonrpc
from compozy.jsonrpc import INVALID_REQUEST, PARSE_ERROR
from compozy.api import TOOL_SERVER_PATH
from compozy.errors import CompozyError, error_body
from compozy.mcp import server

VERSION_HEADER = "MCP-Protocol-Version"
IDENTITY_REFUSED = -32001  # a server error code: the JSON-RPC range leaves -32000..-32099 to servers


def register(app, manager):
    def endpoint(secret):
        return _answer(manager, secret)
    app.add_url_rule(TOOL_SERVER_PATH + "<secret>", endpoint="mcp.endpoint", methods=["POST"], view_func=endpoint)


def _answer(manager, secret):
    try:
        caller = manager.identify(secret)
    except CompozyError as exc:
        return _refused(401, IDENTITY_REFUSED, exc.message, exc.to_body())
    version = request.headers.get(VERSION_HEADER)
    if version is not None and version not in server.PROTOCOL_VERSIONS:
        return _refused(400, INVALID_REQUEST, f"unsupported {VERSION_HEADER} {version[:40]!r}",
                        {"supported": list(server.PROTOCOL_VERSIONS)})
    try:
        message = json.loads(request.get_data())
    except (ValueError, UnicodeDecodeError, RecursionError):
        return _refused(400, PARSE_ERROR, "the body is not JSON", error_body("invalid_request", "not JSON"))
    answer = server.handle(manager, caller, message)
    if answer is None:
        return Response(status=202)
    return jsonify(answer), 200


def _refused(status, code, message, data):
    return jsonify(jsonrpc.error(None, code, message, data)), status
