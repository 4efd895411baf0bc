"""The error vocabulary: one exception type, stable codes, one body builder.

Layer 0: imports nothing from compozy. Every surface maps CompozyError the same way:
HTTP via ERRORS[code].status, the CLI as `Error: <code>: <message>`, in-process as the exception.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorKind:
    status: int
    summary: str


ERRORS = {
    # 400
    "invalid_request": ErrorKind(400, "the request is malformed or fails validation"),
    "invalid_query": ErrorKind(400, "a search query is not valid FTS5 syntax"),
    # 401
    "unauthorized": ErrorKind(401, "a TCP request without the daemon's secret or the page's login cookie"),
    "agent_identity_invalid": ErrorKind(401, "the binding secret names no live binding of that session"),
    # 403
    "host_not_allowed": ErrorKind(403, "the Host header is not the daemon's own loopback name"),
    "origin_not_allowed": ErrorKind(403, "the Origin header is not the daemon's own origin"),
    "fleet_secret_refused": ErrorKind(403, "a request relayed by a fleet node carries a wrong fleet secret, names "
                                           "a node the fleet catalog does not know, or reached a daemon in no fleet"),
    "session_is_caller": ErrorKind(403, "a native tool may not aim this at the calling session itself"),
    "tool_call_rejected": ErrorKind(403, "the permission mode or a person rejected the native tool call"),
    "setting_not_editable": ErrorKind(403, "the page and `compozy config set` change only the settings GET "
                                           "/api/settings lists; edit config.toml by hand for the rest"),
    "spawn_depth_exceeded": ErrorKind(403, "a governed session creates no sessions, and agents create them at "
                                           "most 3 levels below their root"),
    # 404
    "endpoint_not_found": ErrorKind(404, "no route matches this method and path"),
    "workspace_not_found": ErrorKind(404, "no workspace with that name or ID"),
    "session_not_found": ErrorKind(404, "no session with that ID in that workspace"),
    "parent_session_not_found": ErrorKind(404, "the parent session does not exist in the target workspace"),
    "agent_not_found": ErrorKind(404, "no agent definition with that name"),
    "node_not_found": ErrorKind(404, "the fleet has no node of that name"),
    "registry_agent_not_found": ErrorKind(404, "the ACP registry lists no agent with that id"),
    "queue_entry_not_found": ErrorKind(404, "no queue entry with that ID in the session"),
    "permission_request_not_found": ErrorKind(404, "no pending permission request with that ID"),
    "route_not_found": ErrorKind(404, "the agent does not declare that 1-based fallback_chain route"),
    "attention_item_not_found": ErrorKind(404, "no attention item with that ID"),
    "message_not_found": ErrorKind(404, "no durable user message with that ID in the session's active transcript"),
    "turn_not_found": ErrorKind(404, "no turn with that ID in the session's active transcript"),
    "checkpoint_not_found": ErrorKind(404, "no usable file checkpoint: no such ID, or the turn has none (checkpoints "
                                           "were off or failed; details.reason says)"),
    # 405
    "method_not_allowed": ErrorKind(405, "the route exists but not for this HTTP method"),
    # 409
    "workspace_conflict": ErrorKind(409, "a workspace with that name or path already exists"),
    "agent_conflict": ErrorKind(409, "config.toml already defines an agent or provider of that name"),
    "session_not_adoptable": ErrorKind(409, "the session cannot be adopted: its node answers, its workspace is not on "
                                            "shared storage, this node lacks the workspace, its folder cannot be "
                                            "read, or the lease was lost (details.reason)"),
    "fleet_not_configured": ErrorKind(409, "the operation needs a fleet and this daemon's config.toml has no [fleet]"),
    "session_archived": ErrorKind(409, "the session is archived"),
    "session_not_stopped": ErrorKind(409, "the operation needs a stopped session"),
    "session_not_active": ErrorKind(409, "the operation needs an active session"),
    "session_not_attachable": ErrorKind(409, "attach needs a live session: this one is stopping or stopped"),
    "session_archive_stop_failed": ErrorKind(409, "the stop before archiving failed; the session stays unarchived"),
    "prompt_not_in_progress": ErrorKind(409, "no prompt turn is running"),
    "active_turn_mismatch": ErrorKind(409, "expected_turn_id does not name the current turn"),
    "idempotency_conflict": ErrorKind(409, "the idempotency key was used for a different request"),
    "message_conflict": ErrorKind(409, "the message ID was used with a different idempotency key"),
    "revision_conflict": ErrorKind(409, "expected_revision is stale; read the session again"),
    "queue_entry_not_queued": ErrorKind(409, "the queue entry already left the queue"),
    "session_stop_in_progress": ErrorKind(409, "the session is stopping"),
    "stop_unverified": ErrorKind(409, "the session's processes could not be proven gone; retry the stop"),
    "repair_requires_force": ErrorKind(409, "the stop reason is not agent_crashed or error; pass force"),
    "session_fence_conflict": ErrorKind(409, "the transcript fences sent are stale; read the session again"),
    "session_turn_in_progress": ErrorKind(409, "a turn is running, input is queued or an approval is pending"),
    "session_not_derivable": ErrorKind(409, "only user sessions can be rewound, continued or forked"),
    "session_daemon_managed": ErrorKind(409, "the daemon manages this session; users do not stop or remove it"),
    "config_not_editable": ErrorKind(409, "config.toml cannot be changed safely now (it has problems, is not "
                                          "yours alone, or sets the key in a form the edit does not change)"),
    "page_unavailable": ErrorKind(409, "the daemon serves no HTTP address (--no-http): there is no page to open"),
    "spawn_limit_reached": ErrorKind(409, "the parent already has 5 live spawned children"),
    "permission_option_unavailable": ErrorKind(409, "the agent offered no option of that decision's kind"),
    "permission_option_not_offered": ErrorKind(409, "option_id names none of the options the agent offered"),
    "session_expired": ErrorKind(409, "a governed child's TTL has passed; it does not run again"),
    "session_tree_limit_reached": ErrorKind(409, "the root's tree already holds 20 sessions created below it"),
    "workspace_busy": ErrorKind(409, "a session working in the same folder has a turn in flight; files are not "
                                     "restored under it"),
    "budget_exceeded": ErrorKind(409, "a budget of this session is spent for its period; override_budget goes past it"),
    "attention_item_resolved": ErrorKind(409, "the attention item is already resolved (its resolution is in details)"),
    "attention_action_not_offered": ErrorKind(409, "option_id names none of the attention item's actions"),
    # 413
    "queue_full": ErrorKind(413, "the session's input queue is at session.busy_input.queue_cap"),
    "body_too_large": ErrorKind(413, "the request body is over the 8 MiB limit"),
    # 415
    "unsupported_media_type": ErrorKind(415, "request bodies must be application/json"),
    # 422
    "model_unavailable": ErrorKind(422, "the provider does not offer that model"),
    "provider_auth_failure": ErrorKind(422, "the provider requires authentication"),
    "provider_unavailable": ErrorKind(422, "the provider process could not be started or did not speak ACP"),
    "runtime_option_unsupported": ErrorKind(422, "the provider does not accept that runtime option or value"),
    "checkpoint_failed": ErrorKind(422, "the folder could not be checkpointed or written (no git, too many files, "
                                        "a timeout; details.reason says), so nothing was restored or copied"),
    "distribution_unavailable": ErrorKind(422, "the registry entry offers no distribution this machine can use"),
    "agent_install_failed": ErrorKind(422, "installing the agent's package or binary failed"),
    # 429
    "tool_call_limit_reached": ErrorKind(429, "the calling session has session.tools.max_concurrent_calls native "
                                              "tool calls in flight"),
    # 500
    "internal_error": ErrorKind(500, "an unexpected error; the daemon log has the details"),
    # 502
    "tool_backend_failed": ErrorKind(502, "the prompted session's agent was lost and recovery was exhausted"),
    "registry_unavailable": ErrorKind(502, "the ACP registry could not be read (an unreachable URL, no such file)"),
    "registry_invalid": ErrorKind(502, "the ACP registry's document is not in the registry's format"),
    # 503
    "new_work_admission_unavailable": ErrorKind(503, "the daemon is shutting down and admits no new work"),
    "daemon_unavailable": ErrorKind(503, "no daemon answers at that address"),
    "node_unreachable": ErrorKind(503, "the fleet node that owns the session (or was asked to hold it) does not "
                                       "answer: its heartbeat lapsed or its address refuses"),
    "fleet_catalog_unavailable": ErrorKind(503, "the fleet catalog (PostgreSQL) cannot be reached"),
    "stream_limit_reached": ErrorKind(503, "daemon.max_streams event streams are open; retry after Retry-After"),
}


class CompozyError(Exception):
    """An error with a stable code from ERRORS; extra keyword arguments become details."""

    def __init__(self, code, message=None, **details):
        if code not in ERRORS:
            raise AssertionError(f"unregistered error code {code!r}")
        self.code = code
        self.message = message or ERRORS[code].summary
        self.details = details
        super().__init__(f"{code}: {self.message}")

    @property
    def status(self):
        return ERRORS[self.code].status

    def to_body(self):
        return error_body(self.code, self.message, self.details)


# Fields the seed names at the top level of an error body, next to details.
TOP_LEVEL_FIELDS = ("child_session_id", "current_turn_id")


def error_body(code, message, details=None):
    """The one error document every surface produces: {"error", "code", "details", ...}."""
    details = dict(details or {})
    body = {"error": message, "code": code, "details": details}
    for name in TOP_LEVEL_FIELDS:
        if name in details:
            body[name] = details[name]
    return body


def invalid(message, **details):
    return CompozyError("invalid_request", message, **details)
