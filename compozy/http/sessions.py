"""Routes for workspaces and the session catalog: create, read, list, status, remove.

Layer 6 (surface). Each view is a thin adapter from HTTP to one manager method.
"""

from compozy.http.guards import json_body, query_args
from compozy.http.routing import S, Route


def create_workspace(manager):
    return manager.create_workspace(json_body()), 201


def list_workspaces(manager):
    return manager.list_workspaces()


def create_session(manager):
    return manager.create_session(json_body()), 201


def list_sessions(manager):
    return manager.list_sessions(query_args(), encoded=True)


def get_session(manager, session_id, workspace=None):
    return manager.get_session(session_id, workspace)


def remove_session(manager, session_id, workspace=None):
    return manager.remove_session(session_id, workspace)


def session_status(manager, session_id, workspace):
    return manager.session_status(session_id, workspace)


def session_health(manager, session_id, workspace):
    return manager.session_health(session_id, workspace)


def inspect_session(manager, session_id, workspace):
    return manager.inspect_session(session_id, workspace)


ROUTES = (
    Route("POST", "/api/workspaces", "workspace.create", create_workspace,
          "Register a workspace by name and absolute path", 201, body=("name", "path"), statuses=(400, 409)),
    Route("GET", "/api/workspaces", "workspace.list", list_workspaces, "List registered workspaces", statuses=()),
    Route("POST", "/api/sessions", "session.create", create_session,
          "Create a durable session (active, runtime unbound)", 201,
          body=("agent_name", "name", "workspace", "workspace_path", "parent_session_id", "lineage_kind", "type"),
          statuses=(400, 404, 503)),
    Route("GET", "/api/sessions", "session.list", list_sessions, "List sessions, newest first",
          query=("workspace", "parent", "root", "state", "agent", "archive", "limit", "cursor")),
    Route("GET", "/api/sessions/<session_id>", "session.get", get_session, "Read a session"),
    Route("DELETE", "/api/sessions/<session_id>", "session.remove", remove_session,
          "Stop a session if live, then delete its record and history"),
    Route("GET", S, "session.get.scoped", get_session, "Read a session in a workspace"),
    Route("DELETE", S, "session.remove.scoped", remove_session, "Remove a session in a workspace"),
    Route("GET", S + "/status", "session.status", session_status, "Compact session status"),
    Route("GET", S + "/health", "session.health", session_health, "The session's health record"),
    Route("GET", S + "/inspect", "session.inspect", inspect_session,
          "Session, files, process, queue, pending requests and recent events"),
)
