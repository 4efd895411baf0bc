"""The native tools: the operation table's tool entries, listed with their JSON Schemas and called
as the bound agent that calls them, with the documents and error bodies of the HTTP routes.

Layer 6 (surface). A call is the operation itself: its arguments are parsed once, here, into the
operation's request and the tool's own options (Operation.parse_tool), the caller's workspace fills the
workspace (so a session of another workspace is session_not_found, as on a scoped route), the target
defaults to the caller where the tool allows it, and the façade method the table names does the work
on that request, parsing nothing again. The governed rules are the entry's (Tool.targets,
creates_session, deprecated_defaults), applied here without naming any tool: a tool that aims at others
never targets its caller (session_is_caller), one that may also reach the caller's own spawned children
tells the façade its caller, one that creates a session tells it its creator. Every call is decided by
the permission mode (reads as reads, anything else as an edit) before it runs. A caller has at most
session.tools.max_concurrent_calls calls in flight; a prompt's `wait` ends when its caller's binding does.
"""

import json
import logging

from compozy import api
from compozy import validate as v
from compozy.errors import CompozyError, error_body
from compozy.operation import ANY, OTHERS_AND_CHILDREN

log = logging.getLogger("compozy.mcp")


def listing():
    """tools/list: every tool of the table with the JSON Schema of its arguments."""
    return [{"name": operation.tool.name, "description": operation.tool.description,
             "inputSchema": v.spec_schema(operation.tool.arguments(operation)),
             "annotations": {"readOnlyHint": operation.method == "GET"}}
            for operation in api.TOOLS.values()]


def call(manager, caller, operation, arguments):
    """The CallToolResult of one call: the HTTP document, or isError with the HTTP error body."""
    try:
        with manager.tool_call_slot(caller):
            return result(_call(manager, caller, operation, arguments))
    except CompozyError as exc:
        return result(exc.to_body(), error=True)
    except Exception:  # noqa: BLE001 (a tool call answers, it never takes the server down)
        log.exception("native tool %s failed unexpectedly", operation.tool.name)
        return result(error_body("internal_error", "unexpected error; see the daemon log"), error=True)


def result(document, error=False):
    return {"content": [{"type": "text", "text": json.dumps(document, separators=(",", ":"))}],
            "structuredContent": document, "isError": error}


def _call(manager, caller, operation, arguments):
    tool = operation.tool
    call = operation.parse_tool(arguments, caller.id, caller.workspace_id)  # the call's one parse
    target = call.target
    if target == caller.id and tool.targets != ANY:
        raise CompozyError("session_is_caller", f"{tool.name} cannot target the calling session itself",
                           session_id=target)
    facade, request, keywords = getattr(manager, operation.facade), (call.request,), _extras(operation, caller)
    if call.options.get("spawn") is not None:  # a governed child: the daemon's own path, never the public create
        facade, request, keywords = manager.spawn_session, (), {"caller": caller, "body": call.request,
                                                                 "spawn": call.options["spawn"]}
    with manager.serving_tool_call(caller, f"{tool.name} {target or ''}".strip(), target or caller.workspace_id,
                                   changes=operation.method != "GET"):
        document = dict(facade(*request, **keywords))
        if call.options.get("notify_on_complete") and "prompt" in document:  # the wake comes when the turn ends
            manager.observers["messaging"].watch(caller, target, document["prompt"]["turn_id"])
        if call.options.get("wait") and "prompt" in document:
            document["answer"] = manager.turn_answer(target, caller.workspace_id, document["prompt"]["turn_id"],
                                                     wanted=lambda: manager.still_bound(caller))
    deprecation = tool.deprecation(call.defaulted)
    if deprecation:
        document["deprecation"] = deprecation  # the previous answer (a stop's synchronous outcome), with a note
    return document


def _extras(operation, caller):
    """What the façade takes beside the request: the caller's identity and the governed rules' caller."""
    keywords = {}
    if api.SESSION_HEADER in operation.headers:
        keywords["identity"] = (caller.id, caller.secret)  # a create's: the caller is its parent and creator
    if operation.tool.targets == OTHERS_AND_CHILDREN:
        keywords["caller_id"] = caller.id  # a parent's agent may stop (or archive --stop) its own spawned children
    if operation.tool.creates_session and "identity" not in keywords:
        keywords["creator"] = caller.session.record  # held to the limits on what agents create
    return keywords
