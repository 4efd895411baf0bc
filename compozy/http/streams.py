"""Routes that read or follow event stores: events, history, and Server-Sent Events streams.

Layer 6 (surface).
"""

from flask import request

from compozy.errors import invalid
from compozy.http.guards import query_args
from compozy.http.routing import S, Route
from compozy.http.sse import records_as_pairs, sse_response
from compozy.validate import query_int


def events(manager, workspace, session_id):
    return manager.events(session_id, workspace, query_args())


def history(manager, workspace, session_id):
    return manager.history(session_id, workspace, query_args())


def stream(manager, workspace, session_id):
    query = query_args()
    unknown = sorted(set(query) - {"after_sequence"})
    if unknown:
        raise invalid(f"unknown parameter(s): {', '.join(unknown)}")
    after = query_int(request.headers.get("Last-Event-ID") or query.get("after_sequence"), "Last-Event-ID")
    return sse_response(records_as_pairs(manager.stream(session_id, workspace, after)))


def catalog_stream(manager):
    return sse_response(records_as_pairs(manager.catalog_stream()))


ROUTES = (
    Route("GET", S + "/events", "session.events", events, "Event records, ascending",
          query=("after_sequence", "before_sequence", "turn_id", "type", "limit", "archive")),
    Route("GET", S + "/history", "session.history", history, "User prompts and assistant answers",
          query=("archive",)),
    Route("GET", S + "/stream", "session.stream", stream,
          "Server-Sent Events of committed records; resumes after Last-Event-ID or ?after_sequence=",
          query=("after_sequence",), streams=True),
    Route("GET", "/api/sessions/stream", "session.catalog_stream", catalog_stream,
          "Server-Sent Events of catalog changes for list views", streams=True, statuses=()),
)
