"""The operation table: every operation of the daemon's API, listed once.

Layer 2 (the wire, as data). An entry names the operation as scenarios and logs spell it, its
HTTP method and rule, the SessionManager method it calls (path parameters, then `body` or
`query`, by keyword), its body and query specs (the ones compozy/validate.py enforces), its
answers, the errors it can return, its CLI command and its native tool. compozy/http registers
the Flask rules and writes /api/openapi.json from it, the CLI builds its requests from it, the
native tool server (compozy/mcp) lists and calls its tools from it, and the scenario harness
derives its in-process, HTTP and CLI calls from it. A new operation is one entry here plus its
façade method. What an entry is made of (its types, shared error groups and answers) is compozy/operation.py.
"""

from compozy import validate as v
from compozy.operation import (ADMISSION, BINDING, COPY_SPELLING, DERIVABLE, DERIVE_ANSWERS, ENTRY_ERRORS,
                               FIRST_PROMPT, FLEET, IDENTITY, OTHERS, OTHERS_AND_CHILDREN, PROMPT_ANSWERS, RESTORING,
                               SESSION, STOP_ANSWERS, Cli, Operation, Success, Tool)

S = "/api/workspaces/<workspace>/sessions/<session_id>"
ENTRY = S + "/prompt/queue/<entry>"
TOOL_SERVER_PATH = "/mcp/"  # the native tool server's endpoint is this path + the caller's binding secret
SESSION_HEADER, SECRET_HEADER = v.IDENTITY_FIELDS  # a bound agent's identity on an HTTP/UDS request
SESSION_ENV, SECRET_ENV = "COMPOZY_SESSION_ID", "COMPOZY_BINDING_SECRET"  # and in its environment


def _flags(*fields):
    return tuple((name, "--" + name.replace("_", "-")) for name in fields)


def _session_cli(command, *arguments, flags=()):
    return Cli(command, ("session_id", *arguments), flags)


OPERATIONS: tuple[Operation, ...] = (
    Operation("GET", "/api/health", "daemon.health", "health", "Liveness and version",
              (Success(200, "DaemonHealth"),)),
    Operation("GET", "/api/status", "daemon.status", "daemon_status",
              "Session counts by state and the sessions that need attention (failures)",
              (Success(200, "DaemonStatusAnswer"),), cli=Cli("status")),
    Operation("GET", "/api/openapi.json", "daemon.openapi", None, "This document", (Success(200, "OpenAPI"),)),
    Operation("POST", "/api/login", "daemon.login", None,
              "A one-time URL that logs a browser in to the page (the list, or one session's view); valid once, "
              "for 10 minutes", (Success(201, "LoginAnswer"),), ("invalid_request", "session_not_found",
                                                                  "page_unavailable"),
              body={"session_id": v.identifier("sess")}, cli=Cli("open", ("session_id",))),
    Operation("POST", "/api/gc", "daemon.gc", "gc",
              "Apply the checkpoint retention settings (checkpoints.keep_last, checkpoints.keep_for; the checkpoints "
              "of removed sessions) and prune the objects no checkpoint reaches from the shadow repositories",
              (Success(200, "GcAnswer"),), ("invalid_request", "checkpoint_failed"), body=v.GC_FIELDS, cli=Cli("gc")),
    Operation("GET", "/api/agents", "agent.list", "list_agents",
              "The configured agents: provider, command (and whether its program is installed and runnable), "
              "default runtime", (Success(200, "AgentList"),), cli=Cli("agent list")),
    Operation("POST", "/api/agents/<agent_name>/doctor", "agent.doctor", "doctor_agent",
              "Start the agent in a scratch folder as a session would and report each step (launch, "
              "authentication, opening and closing an ACP session), timed, with the first error's evidence; the "
              "agent is stopped after", (Success(200, "AgentDoctorAnswer"),), ("agent_not_found",),
              cli=Cli("agent doctor", ("agent_name",))),
    Operation("GET", "/api/settings", "settings.list", "list_settings",
              "The settings the page and `compozy config set` change: each one's value, default, kind and help",
              (Success(200, "SettingList"),), cli=Cli("config settings")),
    Operation("PUT", "/api/settings/<setting>", "settings.set", "set_setting",
              "Change one of those settings in config.toml (every other line kept) and reload it",
              (Success(200, "SettingAnswer"),), ("invalid_request", "setting_not_editable", "config_not_editable"),
              body=v.SETTING_FIELDS, cli=Cli("config set", ("setting", "value"))),
    Operation("POST", "/api/workspaces", "workspace.create", "create_workspace",
              "Register a workspace by name and absolute path", (Success(201, "WorkspaceAnswer"),),
              ("invalid_request", "workspace_conflict"), body=v.WORKSPACE_FIELDS,
              cli=Cli("workspace add", ("name", "path"))),
    Operation("GET", "/api/workspaces", "workspace.list", "list_workspaces", "List registered workspaces",
              (Success(200, "WorkspaceList"),), cli=Cli("workspace list")),
    Operation("POST", "/api/sessions", "session.create", "create_session",
              "Create a durable session (active, runtime unbound)", (Success(201, "SessionAnswer"),),
              ("invalid_request", "workspace_not_found", "workspace_conflict", "parent_session_not_found",
               "agent_not_found", "agent_identity_invalid", "spawn_depth_exceeded", "session_tree_limit_reached",
               *ADMISSION, *FLEET, "node_not_found", "node_unreachable"), body=v.CREATE_FIELDS,
              headers=v.IDENTITY_FIELDS, rules=(v.one_of("workspace", "workspace_path"),),
              cli=Cli("session new", flags=(("agent_name", "--agent"), ("workspace", "--workspace"),
                                            ("workspace_path", "--cwd"), ("name", "--name"),
                                            ("parent_session_id", "--parent"), ("lineage_kind", "--lineage-kind"),
                                            ("type", "--type"), ("node", "--node"))),
              tool=Tool("compozy__session_create", "Create a session in your workspace, linked to you as its "
                        "parent (provenance)", ("agent_name", "name"), v.TOOL_CREATE_FIELDS, target="",
                        creates_session=True)),
    Operation("GET", "/api/sessions", "session.list", "list_sessions", "List sessions, newest first",
              (Success(200, "SessionPage"),), ("invalid_request", "workspace_not_found", *FLEET), query=v.LIST_QUERY,
              cli=Cli("session list", flags=_flags(*v.LIST_QUERY)),
              tool=Tool("compozy__session_list", "List the sessions of your workspace, newest first",
                        ("parent", "root", "state", "limit"), target="")),
    Operation("GET", "/api/sessions/stream", "session.catalog_stream", "catalog_stream",
              "Server-Sent Events of catalog changes for list views; resumes after Last-Event-ID",
              (Success(200, None),), ("invalid_request",), query=v.STREAM_QUERY, headers={"Last-Event-ID": v.SEQUENCE},
              stream="always"),
    Operation("GET", "/api/sessions/<session_id>", "session.get", "get_session", "Read a session",
              (Success(200, "SessionAnswer"),), ("invalid_request", "session_not_found"),
              cli=_session_cli("session get")),
    Operation("DELETE", "/api/sessions/<session_id>", "session.remove", "remove_session",
              "Stop a session if live, then delete its record and history", (Success(200, "Removal"),),
              ("invalid_request", "session_not_found", "stop_unverified", "session_daemon_managed"),
              cli=_session_cli("session remove")),
    Operation("GET", S, "session.get.scoped", "get_session", "Read a session in a workspace",
              (Success(200, "SessionAnswer"),), SESSION, cli=_session_cli("session get", flags=_flags("workspace")),
              tool=Tool("compozy__session_describe", "Describe a session of your workspace (default: yourself), "
                        "supervision included", target="caller")),
    Operation("PATCH", S, "session.rename", "rename_session",
              "Rename a session (an explicit name wins over auto titles)",
              (Success(200, "SessionAnswer"),), (*SESSION, "session_daemon_managed"), body=v.RENAME_FIELDS,
              cli=_session_cli("session rename", "name")),
    Operation("DELETE", S, "session.remove.scoped", "remove_session", "Remove a session in a workspace",
              (Success(200, "Removal"),), (*SESSION, "stop_unverified", "session_daemon_managed"),
              cli=_session_cli("session remove", flags=_flags("workspace"))),
    Operation("GET", S + "/status", "session.status", "session_status", "Compact session status",
              (Success(200, "SessionStatusAnswer"),), SESSION, cli=_session_cli("session status")),
    Operation("GET", S + "/health", "session.health", "session_health", "The session's health record",
              (Success(200, "SessionHealthAnswer"),), SESSION, cli=_session_cli("session health")),
    Operation("GET", S + "/inspect", "session.inspect", "inspect_session",
              "Session, files, process, queue, pending requests and recent events",
              (Success(200, "Inspection"),), SESSION, cli=_session_cli("session inspect")),
    Operation("POST", S + "/prompt", "session.prompt", "prompt",
              "Send a prompt; JSON admission, or with Accept: text/event-stream the admission then the turn's events",
              PROMPT_ANSWERS, (*SESSION, *ADMISSION, *IDENTITY, "message_conflict", "session_archived",
                               "session_stop_in_progress", "session_not_active", "active_turn_mismatch",
                               "queue_full", "session_expired", "budget_exceeded", *BINDING),
              body=v.PROMPT_FIELDS, stream="on request", rules=(v.IDENTITY_TOGETHER,),
              cli=_session_cli("session prompt", "message",
                               flags=_flags("mode", "expected_turn_id", "message_id", "idempotency_key",
                                            "override_budget")),
              tool=Tool("compozy__session_prompt", "Prompt another session of your workspace; with wait, the "
                        "result holds the answer's text and how the turn ended", ("message", "mode", "idempotency_key"),
                        v.TOOL_PROMPT_FIELDS, targets=OTHERS)),
    Operation("POST", S + "/prompt/cancel", "session.cancel", "cancel_turn", "Cancel the current turn",
              (Success(200, "CancelAnswer"),), (*SESSION, "prompt_not_in_progress"), body=v.CANCEL_FIELDS,
              cli=_session_cli("session cancel")),
    Operation("GET", S + "/prompt/queue", "session.input.list", "list_inputs", "The daemon-owned input queue",
              (Success(200, "QueueEntryList"),), SESSION, cli=_session_cli("session input list")),
    Operation("PUT", ENTRY, "session.input.edit", "edit_input", "Replace a queued entry's text",
              (Success(200, "QueueEntryEdit"),), (*SESSION, *ENTRY_ERRORS, *IDENTITY), body=v.EDIT_FIELDS,
              rules=(v.IDENTITY_TOGETHER,),
              cli=_session_cli("session input edit", "entry", "message",
                               flags=_flags("message_id", "idempotency_key"))),
    Operation("POST", ENTRY + "/steer", "session.input.steer", "steer_input",
              "Promote a queued entry to steer the turn", (Success(202, "PromptAnswer"),),
              (*SESSION, *ENTRY_ERRORS, *IDENTITY, "prompt_not_in_progress", "active_turn_mismatch"),
              body=v.STEER_FIELDS, rules=(v.IDENTITY_TOGETHER,),
              cli=_session_cli("session input steer", "entry", "message",
                               flags=_flags("expected_turn_id", "message_id", "idempotency_key"))),
    Operation("DELETE", ENTRY, "session.input.cancel", "cancel_input", "Cancel a queued entry",
              (Success(200, "QueueEntryAnswer"),), (*SESSION, *ENTRY_ERRORS),
              cli=_session_cli("session input cancel", "entry")),
    Operation("PUT", S + "/runtime", "session.runtime.set", "set_runtime", "Select the next prompt's runtime",
              (Success(200, "SessionAnswer"),), (*SESSION, "revision_conflict", "model_unavailable"),
              body=v.SELECTION_FIELDS,
              cli=_session_cli("session runtime set", flags=_flags("expected_revision"))),
    Operation("DELETE", S + "/runtime", "session.runtime.clear", "clear_runtime", "Clear the runtime selection",
              (Success(200, "SessionAnswer"),), (*SESSION, "revision_conflict"), query=v.CLEAR_SELECTION_QUERY,
              cli=_session_cli("session runtime clear", flags=_flags("expected_revision"))),
    Operation("POST", S + "/approve", "session.approve", "approve",
              "Answer a pending permission request with one of the options the agent offered (by option_id, or "
              "by decision: the first offered option of that kind); an agent's question (form elicitation) too: its "
              "choices are options, and content carries the form's fields for its accept option", (Success(200, "PermissionAnswer"),),
              (*SESSION, "permission_request_not_found", "permission_option_not_offered",
               "permission_option_unavailable"), body=v.APPROVE_FIELDS, rules=(v.APPROVE_CHOICE,),
              cli=_session_cli("session approve", "request_id", flags=(("option_id", "--option"),
                                                                        *_flags("decision", "content")))),
    Operation("POST", S + "/stop", "session.stop", "stop_session", "Stop the session through the verified ladder",
              STOP_ANSWERS, (*SESSION, "session_daemon_managed"), body=v.STOP_FIELDS,
              cli=_session_cli("session stop", flags=_flags("wait")),
              tool=Tool("compozy__session_stop", "Stop another session of your workspace (never yourself)",
                        ("wait",), defaults={"wait": True}, targets=OTHERS_AND_CHILDREN,
                        deprecated_defaults={"wait": "send wait true or false"})),
    Operation("POST", S + "/archive", "session.archive", "archive_session",
              "Archive a stopped session (stop=true stops first)", (Success(200, "SessionAnswer"),),
              (*SESSION, "session_not_stopped", "session_archive_stop_failed", "session_daemon_managed"),
              query=v.ARCHIVE_QUERY,
              cli=_session_cli("session archive", flags=_flags("stop")),
              tool=Tool("compozy__session_archive", "Archive a stopped session of your workspace (stop: stop it "
                        "first)", ("stop",), targets=OTHERS_AND_CHILDREN)),
    Operation("POST", S + "/unarchive", "session.unarchive", "unarchive_session",
              "Return an archived session to the catalog", (Success(200, "SessionAnswer"),), SESSION,
              cli=_session_cli("session unarchive")),
    Operation("POST", S + "/repair", "session.repair", "repair_session", "Append-only transcript repair",
              (Success(200, "RepairAnswer"),), (*SESSION, "session_not_stopped", "repair_requires_force"),
              body=v.REPAIR_FIELDS, cli=_session_cli("session repair", flags=_flags("dry_run", "force"))),
    Operation("GET", S + "/events", "session.events", "events", "Event records, ascending",
              (Success(200, "EventList"),), SESSION, query=v.EVENTS_QUERY,
              cli=_session_cli("session events", flags=(
                  ("limit", "--last"), ("after_sequence", "--after"), ("before_sequence", "--before"),
                  ("turn_id", "--turn"), ("type", "--type"), ("archive", "--archive")))),
    Operation("GET", S + "/history", "session.history", "history", "User prompts and assistant answers",
              (Success(200, "History"),), SESSION, query=v.HISTORY_QUERY,
              cli=_session_cli("session history", flags=(
                  ("limit", "--limit"), ("before_sequence", "--before"), ("after_sequence", "--after"),
                  ("archive", "--archive"))),
              tool=Tool("compozy__session_history", "The folded history of a session of your workspace "
                        "(default: yourself), a page of messages: the newest 200 unless limit, or before_sequence "
                        "(page.before_sequence) for older ones", ("limit", "before_sequence", "after_sequence"),
                        target="caller")),
    Operation("POST", S + "/rewind", "session.rewind", "rewind",
              "Archive a user message and every later event; its text comes back as draft_text (same session). "
              "With files: restore, the workspace's files also go back to the checkpoint taken when that message's "
              "turn started; dry_run answers what would change and changes nothing",
              (Success(200, "RewindAnswer"),), (*SESSION, *DERIVABLE, *IDENTITY, "message_not_found",
                                                "session_stop_in_progress", "session_turn_in_progress", *RESTORING),
              body=v.REWIND_FIELDS,
              cli=_session_cli("session rewind", flags=_flags("message_id", "idempotency_key", "files", "dry_run",
                                                              *v.FENCE_NAMES))),
    Operation("POST", S + "/clear", "session.clear", "clear_conversation",
              "Archive the whole active transcript and discard a carried context; the next prompt starts a fresh "
              "ACP context (same session)", (Success(200, "ClearAnswer"),),
              (*SESSION, *DERIVABLE, *IDENTITY, "session_stop_in_progress", "session_turn_in_progress"),
              body=v.CLEAR_FIELDS, cli=_session_cli("session clear", flags=_flags("idempotency_key", *v.FENCE_NAMES))),
    Operation("POST", S + "/continue", "session.continue", "continue_session",
              "Continue with another agent in a new session that carries this conversation; the source is untouched; "
              "files: copy (or workspace: copy) gives it a new folder next to the source's holding the files of the last "
              "checkpoint",
              DERIVE_ANSWERS, (*SESSION, *DERIVABLE, *IDENTITY, *FIRST_PROMPT, "checkpoint_not_found",
                               "checkpoint_failed"), body=v.CONTINUE_FIELDS, spellings=COPY_SPELLING,
              rules=(v.not_both("route", "runtime"), v.FENCES_TOGETHER),
              cli=_session_cli("session continue", flags=(
                  ("agent_name", "--agent"), *_flags("message", "route", "name", "idempotency_key", "workspace",
                                                     "files", *v.FENCE_NAMES))),
              tool=Tool("compozy__session_continue", "Continue a session of your workspace with another agent, in "
                        "a new session that carries its conversation (the source is not changed)",
                        ("agent_name", "message", "idempotency_key"), creates_session=True)),
    Operation("POST", S + "/fork", "session.fork", "fork_session",
              "Fork into a new session of the same agent and runtime, whole or through a user message and its turn; "
              "files: copy (or workspace: copy) gives it a new folder next to the source's holding the files of that "
              "turn's end "
              "checkpoint (whole: the last checkpoint)",
              DERIVE_ANSWERS, (*SESSION, *DERIVABLE, *IDENTITY, *ADMISSION, "message_not_found",
                               "session_turn_in_progress", "checkpoint_not_found", "checkpoint_failed"),
              body=v.FORK_FIELDS, spellings=COPY_SPELLING, rules=(v.FENCES_TOGETHER,),
              cli=_session_cli("session fork", flags=_flags("message_id", "name", "idempotency_key", "workspace",
                                                            "files", *v.FENCE_NAMES)),
              tool=Tool("compozy__session_fork", "Fork a session of your workspace into a new session of the same "
                        "agent, whole or through a user message and its turn", ("message_id", "idempotency_key",
                                                                                  "name"), creates_session=True)),
    Operation("GET", S + "/derive/preview", "session.derive.preview", "derive_preview",
              "What a continue or fork would carry right now, and the fences it was measured at (reads only)",
              (Success(200, "DerivePreviewAnswer"),), (*SESSION, "message_not_found"), query=v.PREVIEW_QUERY,
              cli=_session_cli("session preview", flags=_flags("message_id"))),
    Operation("GET", "/api/search", "search.query", "search",
              "Find messages of every session (prompts, answers, tool call and permission titles; thoughts when "
              "search.thoughts is on) with FTS5 syntax: words, \"phrases\", prefix*, AND, OR, NOT; best first",
              (Success(200, "SearchAnswer"),), ("invalid_request", "invalid_query", "workspace_not_found"),
              query=v.SEARCH_QUERY, cli=Cli("search", ("q",), _flags("workspace", "agent", "since", "kind",
                                                                    "archive", "rewound", "limit", "cursor"))),
    Operation("POST", "/api/search/reindex", "search.reindex", "reindex_search",
              "Drop the search index and build it again from every session's events (in the background)",
              (Success(202, "SearchIndexAnswer"),), cli=Cli("search", selector="--reindex")),
    Operation("GET", "/api/storage", "storage.get", "storage",
              "Bytes on disk by kind (events, WAL, checkpoints, crash bundles, logs, the search index), workspace and "
              "session (largest first), the growth of the last 7 days and the disk budget (storage.max_bytes)",
              (Success(200, "StorageAnswer"),), ("invalid_request",), query=v.STORAGE_QUERY,
              cli=Cli("storage", flags=_flags("limit"))),
    Operation("POST", "/api/storage/retention", "storage.retention", "run_retention",
              "Carry out the [retention] policy now: compact and delete archived sessions past their days, rotate "
              "logs, remove old crash bundles; dry_run lists what it would do and changes nothing",
              (Success(200, "RetentionAnswer"),), ("invalid_request",), body=v.RETENTION_FIELDS,
              cli=Cli("storage", flags=_flags("dry_run"), selector="--retention")),
    Operation("GET", "/api/export", "export.archive", "export_archive",
              "Many sessions as one zip archive, one file each in the format asked, and sessions.json: a whole "
              "workspace, or a lineage (a session with its children, continues and forks, however deep)",
              (Success(200, None, summary="the archive (Content-Disposition names it)", media=("application/zip",)),),
              ("invalid_request", "workspace_not_found", "session_not_found"), query=v.ARCHIVE_EXPORT_QUERY,
              cli=Cli("export", flags=_flags("workspace", "lineage", "format"))),
    Operation("GET", S + "/export", "session.export", "export_session",
              "The session as one file, secrets redacted: Markdown for people, a self-contained HTML page, or "
              "JSONL of every stored event (archived ones marked)",
              (Success(200, None, summary="the file (Content-Disposition names it)",
                       media=("text/markdown", "text/html", "application/x-ndjson")),), SESSION,
              query=v.EXPORT_QUERY, cli=_session_cli("session export", flags=_flags("format"))),
    Operation("GET", S + "/checkpoints", "session.checkpoints", "list_checkpoints",
              "The session's file checkpoints, oldest first: one when each turn started and ended (and before "
              "each restore), with the files changed since the previous one, or why none was taken",
              (Success(200, "CheckpointList"),), SESSION, cli=_session_cli("session checkpoints")),
    Operation("GET", S + "/turns/<turn_id>/diff", "session.turn.diff", "turn_diff",
              "The unified diff of what a turn changed in the workspace's files (its start checkpoint to its end "
              "one); against=current: from its start to the folder now; stat: the files without the patch",
              (Success(200, "TurnDiffAnswer"),), (*SESSION, "turn_not_found", "checkpoint_not_found"),
              query=v.DIFF_QUERY, cli=_session_cli("session diff", "turn_id", flags=_flags("against", "stat"))),
    Operation("POST", S + "/checkpoints/<checkpoint_id>/restore", "session.checkpoint.restore", "restore_checkpoint",
              "Put the workspace's files back to a checkpoint (the conversation is untouched), after a checkpoint "
              "of the files as they are (the undo point); dry_run answers what would change, and which of those "
              "files other sessions in the folder changed since", (Success(200, "RestoreAnswer"),),
              (*SESSION, *RESTORING), body=v.RESTORE_FIELDS,
              cli=_session_cli("session restore", "checkpoint_id", flags=_flags("dry_run"))),
    Operation("GET", S + "/stream", "session.stream", "stream",
              "Server-Sent Events of committed records; resumes after Last-Event-ID or ?after_sequence=",
              (Success(200, None),), SESSION, query=v.STREAM_QUERY, headers={"Last-Event-ID": v.SEQUENCE},
              stream="always", cli=_session_cli("session attach")),
)
ATTENTION_OPERATIONS = (
    Operation("GET", "/api/attention", "attention.list", "list_attention",
              "The attention inbox: every item that needs a person across sessions and workspaces (a permission "
              "request, stale supervision, a stuck runtime, a failure, a budget warning), with the actions that "
              "resolve it; status=resolved for the recent resolutions", (Success(200, "AttentionList"),),
              ("invalid_request", "workspace_not_found"), query=v.ATTENTION_QUERY,
              cli=Cli("inbox", flags=(*_flags("kind", "workspace", "status", "limit"), ("session_id", "--session")))),
    Operation("GET", "/api/attention/events", "attention.stream", "attention_stream",
              "Server-Sent Events of the inbox's changes (item_opened, item_resolved), after an `inbox` snapshot of "
              "the open items; resumes after Last-Event-ID, across daemon restarts",
              (Success(200, None),), ("invalid_request",), headers={"Last-Event-ID": v.SEQUENCE}, stream="always"),
    Operation("POST", "/api/attention/<item_id>/answer", "attention.answer", "answer_attention",
              "Resolve an open item with one of its actions: a permission request's option_id (session.approve), "
              "stop (session.stop), or dismiss; content: the form's fields for an action that takes them (a "
              "question's accept)", (Success(200, "AttentionAnswer"),),
              ("invalid_request", "attention_item_not_found", "attention_item_resolved", "attention_action_not_offered",
               "permission_request_not_found", "session_not_found", "workspace_not_found", "session_daemon_managed"),
              body=v.ANSWER_FIELDS, cli=Cli("inbox answer", ("item_id", "option_id"), _flags("content"))),
    Operation("PUT", S + "/attention", "session.attention.set", "watch_turns",
              "Opt the session in (or out): a turn that ends while nobody follows the session's events opens an "
              "attention item turn_finished, resolved once someone looks (a viewer, a prompt)",
              (Success(200, "SessionAttentionAnswer"),), SESSION, body=v.WATCH_TURNS_FIELDS,
              cli=_session_cli("session attention", flags=_flags("turn_finished"))),
)
USAGE_OPERATIONS = (
    Operation("GET", "/api/usage", "usage.summary", "usage_summary",
              "The usage ledger summed: tokens by kind, cost per currency, turns (archived ones counted and marked) "
              "and time, grouped by session, workspace, agent, provider, model or day over [since, until); limit "
              "answers the groups with the most tokens only, biggest first (groups_count: how many matched)",
              (Success(200, "UsageSummaryAnswer"),), ("invalid_request", "workspace_not_found"), query=v.USAGE_QUERY,
              cli=Cli("usage", flags=(("group_by", "--by"), *_flags("since", "until", "workspace", "agent", "limit")))),
    Operation("GET", S + "/usage", "session.usage", "session_usage",
              "A session's turns in the usage ledger and their sums; lineage=true adds the sessions it was "
              "continued or forked from", (Success(200, "SessionUsageAnswer"),), SESSION,
              query=v.SESSION_USAGE_QUERY, cli=_session_cli("session usage", flags=_flags("lineage"))),
)
FLEET_OPERATIONS = (
    Operation("GET", "/api/nodes", "fleet.nodes", "list_nodes",
              "The fleet's nodes (docs/fleet.md): address, version, status (up, stopped, unreachable after 15 s "
              "without a heartbeat), last heartbeat, capacity and load", (Success(200, "NodeList"),), FLEET,
              cli=Cli("nodes")),
    Operation("POST", "/api/sessions/<session_id>/adopt", "session.adopt", "adopt_session",
              "Take over a session whose fleet node stopped heartbeating, when its workspace is on shared storage "
              "(fleet.shared_storage): a new lease and fencing token in the fleet catalog, its folder moved into this "
              "node's home and this node's workspace of the same name, then the boot repair a crash gets",
              (Success(200, "AdoptionAnswer"),), ("invalid_request", "session_not_found", "session_not_adoptable",
                                                  *ADMISSION, *FLEET), cli=_session_cli("session adopt")),
)
OPERATIONS += ATTENTION_OPERATIONS + USAGE_OPERATIONS + FLEET_OPERATIONS
OPS = {operation.name: operation for operation in OPERATIONS}
TOOLS = {operation.tool.name: operation for operation in OPERATIONS if operation.tool}
