"""Routes for prompt turns, busy input, runtime selection, permission answers and lifecycle.

Layer 6 (surface).
"""

from flask import request

from compozy.http.guards import json_body, query_args
from compozy.http.routing import S, Route
from compozy.http.sse import sse_response, wants_stream
from compozy.validate import query_bool

Q = S + "/prompt/queue/<entry>"


def prompt(manager, workspace, session_id):
    if wants_stream(request):
        return sse_response(manager.prompt_stream(session_id, workspace, json_body()))
    document = manager.prompt(session_id, workspace, json_body())
    return document, 202 if document["prompt"]["disposition"] == "queued" else 200


def cancel_turn(manager, workspace, session_id):
    return manager.cancel_turn(session_id, workspace, json_body())


def list_inputs(manager, workspace, session_id):
    return manager.list_inputs(session_id, workspace)


def edit_input(manager, workspace, session_id, entry):
    return manager.edit_input(session_id, workspace, entry, json_body())


def steer_input(manager, workspace, session_id, entry):
    return manager.steer_input(session_id, workspace, entry, json_body()), 202


def cancel_input(manager, workspace, session_id, entry):
    return manager.cancel_input(session_id, workspace, entry)


def set_runtime(manager, workspace, session_id):
    return manager.set_runtime(session_id, workspace, json_body())


def clear_runtime(manager, workspace, session_id):
    return manager.clear_runtime(session_id, workspace, query_args().get("expected_revision"))


def approve(manager, workspace, session_id):
    return manager.approve(session_id, workspace, json_body())


def stop(manager, workspace, session_id):
    return manager.stop_session(session_id, workspace, json_body() if request.content_length else None)


def archive(manager, workspace, session_id):
    return manager.archive_session(session_id, workspace, query_bool(query_args().get("stop"), "stop"))


def unarchive(manager, workspace, session_id):
    return manager.unarchive_session(session_id, workspace)


def repair(manager, workspace, session_id):
    return manager.repair_session(session_id, workspace, json_body())


ROUTES = (
    Route("POST", S + "/prompt", "session.prompt", prompt,
          "Send a prompt; JSON admission, or with Accept: text/event-stream the admission then the turn's events",
          body=("message", "message_id", "idempotency_key", "runtime", "mode", "expected_turn_id"),
          statuses=(400, 404, 409, 413, 422, 503)),
    Route("POST", S + "/prompt/cancel", "session.cancel", cancel_turn, "Cancel the current turn",
          statuses=(404, 409)),
    Route("GET", S + "/prompt/queue", "session.input.list", list_inputs, "The daemon-owned input queue"),
    Route("PUT", Q, "session.input.edit", edit_input, "Replace a queued entry's text",
          body=("message", "message_id", "idempotency_key"), statuses=(400, 404, 409)),
    Route("POST", Q + "/steer", "session.input.steer", steer_input, "Promote a queued entry to steer the turn",
          202, body=("expected_turn_id", "message", "message_id", "idempotency_key"), statuses=(400, 404, 409)),
    Route("DELETE", Q, "session.input.cancel", cancel_input, "Cancel a queued entry", statuses=(404, 409)),
    Route("PUT", S + "/runtime", "session.runtime.set", set_runtime, "Select the next prompt's runtime",
          body=("runtime", "expected_revision"), statuses=(400, 404, 409)),
    Route("DELETE", S + "/runtime", "session.runtime.clear", clear_runtime, "Clear the runtime selection",
          query=("expected_revision",), statuses=(400, 404, 409)),
    Route("POST", S + "/approve", "session.approve", approve, "Answer a pending permission request",
          body=("request_id", "decision", "turn_id")),
    Route("POST", S + "/stop", "session.stop", stop, "Stop the session through the verified ladder",
          body=("wait",), statuses=(400, 404, 409)),
    Route("POST", S + "/archive", "session.archive", archive, "Archive a stopped session (stop=true stops first)",
          query=("stop",), statuses=(400, 404, 409)),
    Route("POST", S + "/unarchive", "session.unarchive", unarchive, "Return an archived session to the catalog"),
    Route("POST", S + "/repair", "session.repair", repair, "Append-only transcript repair",
          body=("dry_run", "force"), statuses=(400, 404, 409)),
)
