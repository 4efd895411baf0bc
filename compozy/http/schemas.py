"""The component schemas of /api/openapi.json: request specs turned into JSON Schema, and the
documents the daemon answers (serialize.py builds them; the scenarios check every answer against them).

Layer 6 (surface). Objects leave room for fields added later; required lists what every answer carries.
"""

from compozy import validate as v
from compozy.errors import ERRORS
from compozy.states import (PERMISSION_SELECTED, TOP_LEVEL_KINDS, BusyMode, Disposition, FirstPrompt, HealthState,
                            LineageKind, NativeState, PermissionDecision, QueueStatus, RuntimeStatus,
                            RuntimeTransition, SessionState, SessionType, SteerDelivery, StopCause, StopReason,
                            TitleState, WaitingOn)

STRING = {"type": "string"}
INTEGER = {"type": "integer"}
BOOLEAN = {"type": "boolean"}
NUMBER = {"type": "number"}
OBJECT = {"type": "object"}
NULL = v.NULL_VALUE  # OpenAPI 3.0 spells "null" this way
TIMESTAMP = {"type": "string", "format": "date-time"}


def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema):
    schema = {**schema, "nullable": True}
    if "enum" in schema:
        schema["enum"] = [*schema["enum"], None]  # an enum admits null only by listing it
    return schema


def enum(values):
    return {"type": "string", "enum": [str(value) for value in values]}


def array(items):
    return {"type": "array", "items": items}


def obj(required=(), **properties):
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def wrapped(key, name):
    return obj([key], **{key: ref(name)})


# -- file checkpoints --------------------------------------------------------------------------

CHANGED_FILE = obj(["path", "status"], path=STRING, status=enum(("added", "deleted", "modified", "renamed")),
                   added=INTEGER, deleted=INTEGER, binary=BOOLEAN, **{"from": STRING})
CHECKPOINT = obj(["checkpoint_id", "kind", "status", "turn_id", "sequence", "created_at"],
                 checkpoint_id=nullable(STRING), kind=enum(("start", "end", "restore")),
                 status=enum(("taken", "failed")), turn_id=nullable(STRING), sequence=INTEGER, created_at=TIMESTAMP,
                 tree=STRING, files_changed=INTEGER, files=array(CHANGED_FILE), files_truncated=BOOLEAN,
                 bytes=INTEGER, skipped=array(obj(["path", "reason"], path=STRING, bytes=nullable(INTEGER),
                                                  reason=STRING)),
                 skipped_count=INTEGER, duration_ms=NUMBER, reason=STRING, message=STRING)
RESTORE = obj(["checkpoint_id", "dry_run", "files", "files_changed"], checkpoint_id=STRING, dry_run=BOOLEAN,
              files=array(CHANGED_FILE), files_changed=INTEGER, undo_checkpoint_id=STRING, patch=STRING,
              truncated=BOOLEAN, other_sessions=array(obj(["session_id", "files"], session_id=STRING,
                                                          files=array(STRING))))


# -- request specs -----------------------------------------------------------------------------

def field_schema(field):
    """One validate.Field as JSON Schema, optional members of nested specs nullable."""
    return v.field_schema(field, nullable)


def spec_schema(spec):
    """A body spec as a closed object whose optional fields are nullable (check_body takes null for absent)."""
    return v.spec_schema(spec, nullable)


# -- answers -------------------------------------------------------------------------------------

RUNTIME_SNAPSHOT = spec_schema(v.RUNTIME_FIELDS)
HEALTH = obj(["state", "health", "active_prompt", "attachable", "eligible_for_wake"],
             state=enum(HealthState), health=enum(("healthy", "degraded", "unknown")), active_prompt=BOOLEAN,
             attachable=BOOLEAN, eligible_for_wake=BOOLEAN, ineligibility_reason=STRING)
RUNTIME = obj(["status", "transition", "generation", "selected", "selection_revision"],
              status=enum(RuntimeStatus), transition=enum(RuntimeTransition), generation=INTEGER,
              selected=nullable(RUNTIME_SNAPSHOT), selection_revision=INTEGER, effective=OBJECT, last_known=OBJECT,
              acp_session_id=STRING, recovery=OBJECT, acp_caps=OBJECT,
              process=obj(["pid"], pid=INTEGER, start_time=nullable(INTEGER)),
              display=obj(["source"], source=enum(("effective", "last_known", "selected", "agent_defaults")),
                          provider=STRING, model=STRING, reasoning_effort=STRING, speed=STRING))
LINEAGE = obj(["kind", "parent_session_id", "root_session_id", "spawn_depth"],
              kind=enum(LineageKind), parent_session_id=nullable(STRING), root_session_id=nullable(STRING),
              spawn_depth=INTEGER, spawn_role=STRING, origin_agent_name=STRING, origin_message_id=STRING)
STUCK = obj(["status", "since", "seconds", "bound_seconds"], status=enum(RuntimeStatus), since=TIMESTAMP,
            seconds=NUMBER, bound_seconds=NUMBER, owned_by_turn=BOOLEAN)
SUPERVISION = obj(["work_signals", "sources", "quiet_warning"], work_signals=array(obj(["kind"], kind=STRING)),
                  sources=OBJECT, quiet_warning=nullable(OBJECT), stuck=nullable(STUCK))
FAILURE = obj(["kind"], kind=STRING, summary=STRING, code=STRING, crash_bundle_path=nullable(STRING),
              agent_error=obj(["code", "message"], code=INTEGER, message=STRING), stderr_tail=array(STRING))
ACTIVITY = obj(["last_activity_at"], last_activity_at=nullable(STRING), last_activity_kind=nullable(STRING),
               waiting=obj(["on", "since"], on=enum(WaitingOn), since=TIMESTAMP,
                           session_id=STRING, request_id=STRING))
FENCES = obj(["epoch", "generation", "max_sequence"], epoch=INTEGER, generation=INTEGER, max_sequence=INTEGER)
SESSION_FIELDS = dict(
    id=STRING, name=nullable(STRING), type=enum(SessionType), agent_name=STRING, workspace_id=STRING,
    cwd=nullable(STRING), created_at=TIMESTAMP, updated_at=TIMESTAMP, archived=BOOLEAN, archived_at=TIMESTAMP,
    fences=FENCES, runtime=RUNTIME, lineage=LINEAGE, activity=ACTIVITY,
    health=HEALTH, supervision=SUPERVISION, escalated=BOOLEAN, verified=nullable(BOOLEAN),
    stop_reason=enum(StopReason), stop_detail=STRING, failure=FAILURE, attention=nullable(STRING),
    derivation=ref("Derivation"),
    spawn=obj(["role", "ttl", "expires_at", "permissions"], role=STRING, ttl=STRING, expires_at=TIMESTAMP,
              permissions=obj(["mode", "parent_mode"], mode=STRING, parent_mode=STRING)),
    auto_title=obj(["state", "at"], state=enum(TitleState), at=TIMESTAMP),
    node=obj(["name", "status"], name=STRING, status=enum(("up", "node_unreachable"))))  # a fleet list's rows
NODE = obj(["name", "address", "version", "status", "this_node", "started_at", "last_heartbeat", "heartbeat_age",
            "capacity", "load"], name=STRING, address=STRING, version=STRING,
           status=enum(("up", "stopped", "unreachable")), this_node=BOOLEAN, started_at=TIMESTAMP,
           last_heartbeat=TIMESTAMP, heartbeat_age=NUMBER,
           capacity=obj(["max_agents", "free_memory"], max_agents=INTEGER, free_memory=INTEGER),
           load=obj(["live_agents", "sessions"], live_agents=INTEGER, sessions=INTEGER),
           workspaces=array(obj(["name", "path", "shared_storage"], name=STRING, path=STRING, shared_storage=BOOLEAN)))
SESSION_REQUIRED = ("id", "name", "type", "state", "agent_name", "workspace_id", "cwd", "created_at", "updated_at",
                    "archived", "fences", "runtime", "lineage", "activity", "health", "supervision", "escalated")
EVENT = obj(["id", "session_id", "sequence", "turn_id", "type", "agent_name", "workspace_id", "content", "timestamp"],
            id=STRING, session_id=STRING, sequence=INTEGER, turn_id=nullable(STRING), type=STRING,
            agent_name=nullable(STRING), workspace_id=nullable(STRING), content=OBJECT, timestamp=TIMESTAMP,
            archived=BOOLEAN)
QUEUE_ENTRY = obj(["id", "session_id", "status", "mode", "message", "message_id", "idempotency_key", "turn_id",
                   "runtime", "position", "created_at", "updated_at"],
                  id=STRING, session_id=STRING, status=enum(QueueStatus), mode=nullable(enum(BusyMode)), message=STRING,
                  message_id=STRING, idempotency_key=STRING, turn_id=STRING, runtime=OBJECT, position=INTEGER,
                  created_at=TIMESTAMP, updated_at=TIMESTAMP, waiting=OBJECT)
PROMPT_ADMISSION = obj(["disposition", "turn_id", "message_id", "idempotency_key", "replayed"],
                       disposition=enum(Disposition), turn_id=STRING, message_id=STRING, idempotency_key=STRING,
                       entry_id=STRING, steer_delivery=enum(SteerDelivery), interrupted_turn_id=STRING,
                       promoted_entry_id=STRING, note=STRING, replayed=BOOLEAN)
STOP_OUTCOME = obj(["state", "verified", "escalated", "stop_cause", "phase", "stopped_after"],
                   state=enum((SessionState.STOPPING, SessionState.STOPPED)), verified=BOOLEAN, escalated=BOOLEAN,
                   stop_cause=nullable(enum(StopCause)), phase=STRING, stopped_after=NUMBER, attention=STRING)
CARRIED = dict(message_count=INTEGER, replay_bytes=INTEGER, truncated=BOOLEAN, omitted_count=INTEGER,
               source_turn_in_progress=BOOLEAN, through_turn_id=nullable(STRING))
PREVIEW = obj(["message_count", "replay_bytes", "truncated", "omitted_count", "source_turn_in_progress",
               "source_message_count", "through_turn_id", "fences", "native_fork_possible"],
              **CARRIED, source_message_count=INTEGER, fences=FENCES, native_fork_possible=BOOLEAN,
              cut=obj(["message_id", "turn_id", "turn_settled"], message_id=STRING, turn_id=STRING,
                      turn_settled=BOOLEAN))
DERIVATION = obj(
    ["kind", "source_session_id", "source_agent_name", "seed", "first_prompt", "idempotency_key", "through_turn_id",
     "message_count", "replay_bytes", "truncated", "omitted_count", "source_turn_in_progress", "created_at"],
    kind=enum(TOP_LEVEL_KINDS), source_session_id=STRING, source_agent_name=STRING,
    seed=enum(("replay", "native_fork")), first_prompt=enum(FirstPrompt), idempotency_key=STRING,
    **CARRIED, created_at=TIMESTAMP, first_message_id=STRING, route=INTEGER, origin_message_id=STRING,
    native_state=enum(NativeState), native_fork_error=STRING, acp_session_id=STRING)
ERROR = obj(["error", "code", "details"], error=STRING, code=enum(ERRORS), details=OBJECT,
            child_session_id=STRING, current_turn_id=STRING)

DAEMON_ATTENTION = obj(["kind", "used_bytes", "max_bytes", "percent", "summary"], kind=enum(("storage_budget",)),
                       used_bytes=INTEGER, max_bytes=INTEGER, percent=NUMBER, summary=STRING)
PLANNED = obj(["session_id", "workspace_id", "archived_at", "bytes"], session_id=STRING, workspace_id=STRING,
              archived_at=nullable(STRING), bytes=INTEGER)
SEARCH_INDEX = obj(["bytes", "sessions", "messages", "pending_sessions"], bytes=INTEGER, sessions=INTEGER,
                   messages=INTEGER, pending_sessions=INTEGER)

SCHEMAS = {
    "Error": ERROR,
    "RuntimeSnapshot": RUNTIME_SNAPSHOT,
    "Session": obj(SESSION_REQUIRED, state=enum(SessionState), **SESSION_FIELDS),
    "SessionAnswer": wrapped("session", "Session"),
    "SessionPage": obj(["sessions", "page"], sessions=array(ref("Session")), page=obj(
        ["limit", "total", "has_more", "next_cursor"], limit=INTEGER, total=INTEGER, has_more=BOOLEAN,
        next_cursor=nullable(STRING)), open_items={"type": "object", "additionalProperties": INTEGER},
        scope=enum(("fleet",))),
    "NodeList": obj(["nodes"], nodes=array(NODE)),
    "AdoptionAnswer": obj(["session", "adoption"], session=ref("Session"),
                          adoption=obj(["from_node", "lease_token"], from_node=STRING, lease_token=INTEGER)),
    "SessionStatus": obj((*SESSION_REQUIRED, "lifecycle_state", "verified", "attention"),
                         state=enum(HealthState), lifecycle_state=enum(SessionState), **SESSION_FIELDS),
    "SessionStatusAnswer": wrapped("session", "SessionStatus"),
    "SessionHealthAnswer": obj(["health"], health={**HEALTH, "required": ["session_id", *HEALTH["required"]],
                                                   "properties": {"session_id": STRING, **HEALTH["properties"]}}),
    "Inspection": obj(["session", "paths", "process", "queue", "pending_interactions", "hook_runs",
                       "recent_events"],
                      session=ref("Session"), paths=obj(["directory", "meta", "events"], directory=STRING,
                                                         meta=STRING, events=STRING),
                      process=nullable(OBJECT), queue=array(ref("QueueEntry")),
                      pending_interactions=array(obj(["request_id", "kind", "status"], request_id=STRING,
                                                     kind=STRING, status=STRING)),
                      hook_runs=array(obj(["id", "event", "command", "started_at", "duration_ms", "exit_code",
                                           "timed_out", "output", "truncated"], id=STRING, event=STRING,
                                          command=array(STRING), started_at=TIMESTAMP, duration_ms=INTEGER,
                                          exit_code=nullable(INTEGER), timed_out=BOOLEAN, output=STRING,
                                          truncated=BOOLEAN, error=nullable(STRING))),
                      recent_events=array(ref("Event")),
                      threads=obj(["started", "running", "named"], started=INTEGER, running=INTEGER,
                                  named=array(STRING)),
                      agent_stderr=nullable(obj(["source", "text"], source=enum(("serving", "last_agent",
                                                                                  "crash_bundle")),
                                                text=STRING, provider=STRING, pid=INTEGER, path=STRING)),
                      usage=obj(["turns", "total"], turns=array(obj(["turn_id"], turn_id=STRING)),
                                total=obj(["turns", "tokens", "cost"], turns=INTEGER, tokens=OBJECT,
                                          cost=array(OBJECT)))),
    "Removal": obj(["removed"], removed=obj(["session_id", "workspace_id"], session_id=STRING, workspace_id=STRING)),
    "Workspace": obj(["id", "name", "path", "created_at"], id=STRING, name=STRING, path=STRING, created_at=TIMESTAMP),
    "WorkspaceAnswer": wrapped("workspace", "Workspace"),
    "WorkspaceList": obj(["workspaces"], workspaces=array(ref("Workspace"))),
    "PromptAdmission": PROMPT_ADMISSION,
    "PromptAnswer": wrapped("prompt", "PromptAdmission"),
    "CancelAnswer": obj(["cancel"], cancel=obj(["turn_id", "status"], turn_id=STRING, status=enum(("cancelling",)))),
    "QueueEntry": QUEUE_ENTRY,
    "QueueEntryAnswer": wrapped("entry", "QueueEntry"),
    "QueueEntryEdit": obj(["entry", "replayed"], entry=ref("QueueEntry"), replayed=BOOLEAN),
    "QueueEntryList": obj(["entries"], entries=array(ref("QueueEntry"))),
    "PermissionAnswer": obj(["permission"], permission=obj(
        ["request_id", "decision", "option", "status"], request_id=STRING,
        decision=enum((*PermissionDecision, PERMISSION_SELECTED)), status=STRING,
        option=obj(["option_id"], option_id=STRING, name=STRING, kind=STRING, content=OBJECT))),
    "StopAccepted": obj(["status", "session_id"], status=enum((SessionState.STOPPING,)), session_id=STRING),
    "StopOutcome": STOP_OUTCOME,
    "RepairAnswer": obj(["repair"], repair=obj(
        ["session_id", "dry_run", "turn_id", "actions", "issues", "applied"], session_id=STRING, dry_run=BOOLEAN,
        turn_id=nullable(STRING), actions=array(obj(["action"], action=STRING)), issues=array(STRING),
        applied=BOOLEAN, appended_sequences=array(INTEGER))),
    "Event": EVENT,
    "EventList": obj(["events"], events=array(ref("Event"))),
    "History": obj(["messages", "page"], messages=array(obj(
        ["message_id", "turn_id", "role", "text", "timestamp"], message_id=nullable(STRING),
        turn_id=nullable(STRING), role=enum(("user", "assistant", "tool")), text=STRING, timestamp=TIMESTAMP,
        carried=BOOLEAN)),
        page=obj(["has_more", "before_sequence", "has_newer", "after_sequence"], has_more=BOOLEAN,
                 before_sequence=nullable(INTEGER), has_newer=BOOLEAN, after_sequence=nullable(INTEGER),
                 carried_count=INTEGER)),
    "DaemonHealth": obj(["status", "version"], status=enum(("ok",)), version=STRING),
    "LoginAnswer": wrapped("login", "Login"),
    "Login": obj(["url", "expires_at"], url=STRING, expires_at=STRING),
    "AgentList": obj(["agents", "default_agent"], default_agent=STRING, agents=array(obj(
        ["name", "provider", "command", "found", "installed", "install_detail", "runtime", "default"], name=STRING,
        provider=STRING, command=array(STRING), found=BOOLEAN, installed=BOOLEAN, install_detail=STRING,
        runtime=OBJECT, default=BOOLEAN, fallback_chain=array(OBJECT), env=array(STRING),
        handshake_timeout=nullable(NUMBER)))),
    "AgentDoctorAnswer": obj(["doctor"], doctor=obj(
        ["agent", "provider", "command", "ok", "steps", "error", "stderr_tail", "stopped"], agent=STRING,
        provider=STRING, command=array(STRING), ok=BOOLEAN, stopped=BOOLEAN, stderr_tail=array(STRING),
        steps=array(obj(["step", "ok", "seconds", "detail"], step=STRING, ok=BOOLEAN, seconds=nullable(NUMBER),
                        detail=STRING)),
        protocol_version=nullable(INTEGER), agent_info=nullable(OBJECT), capabilities=nullable(OBJECT),
        auth_methods=nullable(array(OBJECT)), authenticated=nullable(STRING),
        error=nullable(obj(["step", "code", "failure_kind", "message"], step=STRING, code=STRING,
                           failure_kind=STRING, message=STRING, agent_error=OBJECT, stderr_tail=array(STRING),
                           auth_methods=array(OBJECT), tried=nullable(STRING), next_command=STRING)))),
    "SettingList": obj(["settings", "path"], path=STRING, settings=array(ref("Setting"))),
    "SettingAnswer": wrapped("setting", "Setting"),
    "Setting": obj(["name", "title", "description", "value", "default", "set", "kind", "help"], name=STRING,
                   title=STRING, description=STRING,
                   value=STRING, default=STRING, set=BOOLEAN, kind=enum(("duration", "choice")), help=STRING,
                   choices=array(STRING)),
    "DaemonStatusAnswer": obj(["status"], status=obj(
        ["version", "accepting", "sessions", "live", "attention"], version=STRING, accepting=BOOLEAN,
        sessions={"type": "object", "additionalProperties": INTEGER}, live=INTEGER,
        attention=array(obj(["id", "state", "workspace_id"], id=STRING, name=nullable(STRING),
                            state=enum(SessionState), workspace_id=STRING, stop_reason=nullable(STRING),
                            stop_detail=nullable(STRING), failure=nullable(OBJECT), attention=nullable(STRING),
                            stuck=nullable(STUCK))), inbox=ref("AttentionOpen"),
        notifier_runs=array(ref("NotifierRun")), daemon_attention=array(DAEMON_ATTENTION))),
    "DerivePreviewAnswer": obj(["preview"], preview=PREVIEW),
    "SearchIndex": SEARCH_INDEX,
    "StorageAnswer": obj(["storage"], storage=obj(
        ["total_bytes", "kinds", "workspaces", "sessions", "session_count", "growth", "max_bytes", "attention"],
        total_bytes=INTEGER, kinds={"type": "object", "additionalProperties": INTEGER},
        workspaces=array(obj(["workspace_id", "bytes", "checkpoints"], workspace_id=STRING, bytes=INTEGER,
                             checkpoints=INTEGER)),
        sessions=array(obj(["session_id", "workspace_id", "archived", "bytes", "kinds"], session_id=STRING,
                           workspace_id=nullable(STRING), archived=BOOLEAN, bytes=INTEGER, kinds=OBJECT)),
        session_count=INTEGER, growth=obj(["days", "bytes", "since"], days=INTEGER, bytes=INTEGER, since=STRING),
        max_bytes=INTEGER, attention=nullable(DAEMON_ATTENTION))),
    "RetentionAnswer": obj(["retention"], retention=obj(
        ["dry_run", "compact", "delete", "logs", "crash_bundles"], dry_run=BOOLEAN,
        compact=array(PLANNED), delete=array(PLANNED), compacted=array(OBJECT),
        logs=obj(["rotate", "remove"], rotate=BOOLEAN, remove=array(OBJECT)), crash_bundles=array(OBJECT))),
    "SearchIndexAnswer": wrapped("index", "SearchIndex"),
    "SearchAnswer": obj(["search"], search=obj(["hits", "page", "index"], index=ref("SearchIndex"), hits=array(obj(
        ["session_id", "workspace_id", "agent_name", "kind", "message_id", "turn_id", "sequence", "timestamp",
         "snippet", "score", "archived", "rewound"], session_id=STRING, workspace_id=STRING,
        agent_name=nullable(STRING), kind=enum(v.SEARCH_KINDS), message_id=nullable(STRING),
        turn_id=nullable(STRING), sequence=INTEGER, timestamp=TIMESTAMP, snippet=STRING, score=NUMBER,
        archived=BOOLEAN, rewound=BOOLEAN)),
        page=obj(["limit", "has_more", "next_cursor", "order"], limit=INTEGER, has_more=BOOLEAN,
                 next_cursor=nullable(STRING), order=enum(("best", "newest"))))),
    "Checkpoint": CHECKPOINT,
    "CheckpointList": obj(["checkpoints"], checkpoints=array(ref("Checkpoint"))),
    "TurnDiffAnswer": obj(["diff"], diff=obj(
        ["turn_id", "against", "from", "to", "files", "files_changed"], turn_id=STRING,
        against=enum(("end", "current")), files=array(CHANGED_FILE), files_changed=INTEGER, patch=STRING,
        truncated=BOOLEAN, **{"from": obj(["checkpoint_id", "tree"], checkpoint_id=nullable(STRING), tree=STRING),
                              "to": obj(["checkpoint_id", "tree", "current"], checkpoint_id=nullable(STRING),
                                        tree=STRING, current=BOOLEAN)})),
    "RestoreAnswer": obj(["restore"], restore=RESTORE),
    "GcAnswer": obj(["gc"], gc=obj(["repositories", "checkpoints_dropped", "checkpoints_kept", "bytes_before",
                                    "bytes_after"], repositories=INTEGER, checkpoints_dropped=INTEGER,
                                   checkpoints_kept=INTEGER, bytes_before=INTEGER, bytes_after=INTEGER)),
    "OpenAPI": obj(["openapi", "info", "paths"], openapi=STRING, info=OBJECT, paths=OBJECT, components=OBJECT),
    "RewindAnswer": obj(["session", "rewind"], session=ref("Session"), rewind=obj(
        ["draft_text", "target_message_id", "target_turn_id", "archived_from_sequence", "archived_through_sequence",
         "archived_event_count", "transcript_epoch", "generation", "max_sequence", "idempotency_key", "note",
         "replayed"], draft_text=STRING, target_message_id=STRING, target_turn_id=STRING,
        archived_from_sequence=INTEGER, archived_through_sequence=INTEGER, archived_event_count=INTEGER,
        transcript_epoch=INTEGER, generation=INTEGER, max_sequence=INTEGER, idempotency_key=STRING, note=STRING,
        replayed=BOOLEAN, dry_run=BOOLEAN, files=nullable(RESTORE))),
    "ClearAnswer": obj(["session", "clear"], session=ref("Session"), clear=obj(
        ["archived_from_sequence", "archived_through_sequence", "archived_event_count", "carried_context_discarded",
         "transcript_epoch", "generation", "max_sequence", "idempotency_key", "note", "replayed"],
        archived_from_sequence=INTEGER, archived_through_sequence=INTEGER, archived_event_count=INTEGER,
        carried_context_discarded=BOOLEAN, transcript_epoch=INTEGER, generation=INTEGER, max_sequence=INTEGER,
        idempotency_key=STRING, note=STRING, replayed=BOOLEAN)),
    "Derivation": DERIVATION,
    "DerivationAnswer": obj(["session", "derivation", "replayed"], session={"anyOf": [ref("Session"), NULL]},
                            derivation=ref("Derivation"), replayed=BOOLEAN, child_deleted=BOOLEAN),
}
