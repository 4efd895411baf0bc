"""The operation table: each scenario op mapped to a manager call, an HTTP request and a CLI argv.

Arguments arrive as one dict: `session`, `workspace` and `entry` are path parameters, the rest
is the request body (or query). CLI builders translate the same dict into flags.
"""

from dataclasses import dataclass

from compozy.client import path_of

STREAM = "STREAM"  # POST with Accept: text/event-stream, collected


@dataclass(frozen=True)
class Op:
    call: object                 # (manager, args) -> document
    http: object                 # args -> (method, path, query, body)
    cli: object                  # args -> argv (without -o json)
    cli_command: str             # the click command it exercises, for the coverage check
    unwrap: str | None = None    # key whose value scenarios match against
    scoped: bool = False         # path needs the session's workspace


def scoped_path(args, *rest):
    return path_of("api", "workspaces", args.pop("workspace"), "sessions", args.pop("session"), *rest)


def flags(args, mapping):
    """--flag value pairs for the args present (booleans become bare flags)."""
    argv = []
    for key, flag in mapping.items():
        value = args.get(key)
        if value is None or value is False:
            continue
        argv += [flag] if value is True else [flag, str(value)]
    return argv


def _create_session_cli(args):
    argv = ["session", "new"]
    if "workspace_path" in args:
        argv += ["--cwd", args["workspace_path"]]
    return argv + flags(args, {"agent_name": "--agent", "workspace": "--workspace", "name": "--name",
                               "parent_session_id": "--parent", "lineage_kind": "--lineage-kind",
                               "type": "--type"})


def _list_query(args):
    return {k: v for k, v in args.items() if v is not None}


def _runtime_flags(runtime):
    argv = flags(runtime or {}, {"provider": "--provider", "model": "--model",
                                 "reasoning_effort": "--reasoning-effort", "speed": "--speed"})
    for option in (runtime or {}).get("acp_options", []):
        if "bool_value" in option:
            argv += ["--acp-toggle", f"{option['id']}={'true' if option['bool_value'] else 'false'}"]
        else:
            argv += ["--acp-option", f"{option['id']}={option['value_id']}"]
    return argv


def _prompt_cli(args, detach=True):
    argv = ["session", "prompt", args["session"], args["message"]] + _runtime_flags(args.get("runtime"))
    argv += flags(args, {"mode": "--mode", "expected_turn_id": "--expected-turn-id", "message_id": "--message-id",
                         "idempotency_key": "--idempotency-key"})
    return argv + (["--detach"] if detach else [])


def _body(args, *names):
    return {k: args[k] for k in names if k in args}


def _session_call(method):
    """(manager, args) -> manager.method(session, workspace, ...) for scoped operations."""
    return lambda m, a: getattr(m, method)(a["session"], a.get("workspace"))


OPS = {
    "daemon.status": Op(
        call=lambda m, a: m.daemon_status(),
        http=lambda a: ("GET", "/api/status", None, None),
        cli=lambda a: ["status"], cli_command="status", unwrap="status"),
    "workspace.create": Op(
        call=lambda m, a: m.create_workspace(a),
        http=lambda a: ("POST", "/api/workspaces", None, a),
        cli=lambda a: ["workspace", "add", a["name"], a["path"]],
        cli_command="workspace add", unwrap="workspace"),
    "workspace.list": Op(
        call=lambda m, a: m.list_workspaces(),
        http=lambda a: ("GET", "/api/workspaces", None, None),
        cli=lambda a: ["workspace", "list"], cli_command="workspace list"),
    "session.create": Op(
        call=lambda m, a: m.create_session(a),
        http=lambda a: ("POST", "/api/sessions", None, a),
        cli=_create_session_cli, cli_command="session new", unwrap="session"),
    "session.list": Op(
        call=lambda m, a: m.list_sessions({k: str(v) for k, v in a.items()}),
        http=lambda a: ("GET", "/api/sessions", _list_query(a), None),
        cli=lambda a: ["session", "list"] + flags(a, {k: f"--{k}" for k in
                                                      ("workspace", "parent", "root", "state", "agent",
                                                       "archive", "limit", "cursor")}),
        cli_command="session list"),
    "session.get": Op(
        call=lambda m, a: m.get_session(a["session"]),
        http=lambda a: ("GET", path_of("api", "sessions", a["session"]), None, None),
        cli=lambda a: ["session", "inspect", a["session"]], cli_command="session inspect", unwrap="session"),
    "session.get.scoped": Op(
        call=lambda m, a: m.get_session(a["session"], a["workspace"]),
        http=lambda a: ("GET", scoped_path(a), None, None),
        cli=lambda a: ["session", "inspect", a["session"]], cli_command="session inspect",
        unwrap="session", scoped=True),
    "session.status": Op(
        call=lambda m, a: m.session_status(a["session"], a.get("workspace")),
        http=lambda a: ("GET", scoped_path(a, "status"), None, None),
        cli=lambda a: ["session", "status", a["session"]], cli_command="session status",
        unwrap="session", scoped=True),
    "session.health": Op(
        call=lambda m, a: m.session_health(a["session"], a.get("workspace")),
        http=lambda a: ("GET", scoped_path(a, "health"), None, None),
        cli=lambda a: ["session", "health", a["session"]], cli_command="session health",
        unwrap="health", scoped=True),
    "session.inspect": Op(
        call=lambda m, a: m.inspect_session(a["session"], a.get("workspace")),
        http=lambda a: ("GET", scoped_path(a, "inspect"), None, None),
        cli=lambda a: ["session", "inspect", a["session"]], cli_command="session inspect", scoped=True),
    "session.remove": Op(
        call=lambda m, a: m.remove_session(a["session"]),
        http=lambda a: ("DELETE", path_of("api", "sessions", a["session"]), None, None),
        cli=lambda a: ["session", "remove", a["session"]], cli_command="session remove", unwrap="removed"),
    "session.remove.scoped": Op(
        call=lambda m, a: m.remove_session(a["session"], a["workspace"]),
        http=lambda a: ("DELETE", scoped_path(a), None, None),
        cli=lambda a: ["session", "remove", a["session"]], cli_command="session remove",
        unwrap="removed", scoped=True),
    "session.prompt": Op(
        call=lambda m, a: m.prompt(a.pop("session"), a.pop("workspace", None), a),
        http=lambda a: ("POST", scoped_path(a, "prompt"), None, a),
        cli=_prompt_cli, cli_command="session prompt", unwrap="prompt", scoped=True),
    "session.prompt.stream": Op(
        call=lambda m, a: collect(m.prompt_stream(a.pop("session"), a.pop("workspace", None), a)),
        http=lambda a: (STREAM, scoped_path(a, "prompt"), None, a),
        cli=lambda a: _prompt_cli(a, detach=False) + ["-o", "json"], cli_command="session prompt", scoped=True),
    "session.cancel": Op(
        call=lambda m, a: m.cancel_turn(a["session"], a.get("workspace"), {}),
        http=lambda a: ("POST", scoped_path(a, "prompt", "cancel"), None, {}),
        cli=lambda a: ["session", "cancel", a["session"]], cli_command="session cancel", unwrap="cancel",
        scoped=True),
    "session.input.list": Op(
        call=_session_call("list_inputs"),
        http=lambda a: ("GET", scoped_path(a, "prompt", "queue"), None, None),
        cli=lambda a: ["session", "input", "list", a["session"]], cli_command="session input list", scoped=True),
    "session.input.edit": Op(
        call=lambda m, a: m.edit_input(a.pop("session"), a.pop("workspace", None), a.pop("entry"), a),
        http=lambda a: ("PUT", scoped_path(a, "prompt", "queue", a.pop("entry")), None, a),
        cli=lambda a: ["session", "input", "edit", a["session"], a["entry"], a["message"]]
        + flags(a, {"message_id": "--message-id", "idempotency_key": "--idempotency-key"}),
        cli_command="session input edit", scoped=True),
    "session.input.steer": Op(
        call=lambda m, a: m.steer_input(a.pop("session"), a.pop("workspace", None), a.pop("entry"), a),
        http=lambda a: ("POST", scoped_path(a, "prompt", "queue", a.pop("entry"), "steer"), None, a),
        cli=lambda a: ["session", "input", "steer", a["session"], a["entry"]] + ([a["message"]] if "message" in a else [])
        + flags(a, {"expected_turn_id": "--expected-turn-id", "message_id": "--message-id",
                    "idempotency_key": "--idempotency-key"}),
        cli_command="session input steer", unwrap="prompt", scoped=True),
    "session.input.cancel": Op(
        call=lambda m, a: m.cancel_input(a["session"], a.get("workspace"), a["entry"]),
        http=lambda a: ("DELETE", scoped_path(a, "prompt", "queue", a.pop("entry")), None, None),
        cli=lambda a: ["session", "input", "cancel", a["session"], a["entry"]], cli_command="session input cancel",
        unwrap="entry", scoped=True),
    "session.runtime.set": Op(
        call=lambda m, a: m.set_runtime(a.pop("session"), a.pop("workspace", None), a),
        http=lambda a: ("PUT", scoped_path(a, "runtime"), None, a),
        cli=lambda a: ["session", "runtime", "set", a["session"]] + _runtime_flags(a.get("runtime"))
        + flags(a, {"expected_revision": "--expected-revision"}),
        cli_command="session runtime set", unwrap="session", scoped=True),
    "session.runtime.clear": Op(
        call=lambda m, a: m.clear_runtime(a["session"], a.get("workspace"), _body(a, "expected_revision")),
        http=lambda a: ("DELETE", scoped_path(a, "runtime"), _body(a, "expected_revision"), None),
        cli=lambda a: ["session", "runtime", "clear", a["session"]]
        + flags(a, {"expected_revision": "--expected-revision"}),
        cli_command="session runtime clear", unwrap="session", scoped=True),
    "session.approve": Op(
        call=lambda m, a: m.approve(a.pop("session"), a.pop("workspace", None), a),
        http=lambda a: ("POST", scoped_path(a, "approve"), None, a),
        cli=lambda a: ["session", "approve", a["session"], a["request_id"]] + flags(a, {"decision": "--decision"}),
        cli_command="session approve", unwrap="permission", scoped=True),
    "session.stop": Op(
        call=lambda m, a: m.stop_session(a.pop("session"), a.pop("workspace", None), a),
        http=lambda a: ("POST", scoped_path(a, "stop"), None, a),
        cli=lambda a: ["session", "stop", a["session"]] + (["--wait"] if a.get("wait") else []),
        cli_command="session stop", scoped=True),
    "session.archive": Op(
        call=lambda m, a: m.archive_session(a["session"], a.get("workspace"), {"stop": a.get("stop", False)}),
        http=lambda a: ("POST", scoped_path(a, "archive"), {"stop": "true"} if a.get("stop") else None, None),
        cli=lambda a: ["session", "archive", a["session"]] + (["--stop"] if a.get("stop") else []),
        cli_command="session archive", unwrap="session", scoped=True),
    "session.unarchive": Op(
        call=_session_call("unarchive_session"),
        http=lambda a: ("POST", scoped_path(a, "unarchive"), None, None),
        cli=lambda a: ["session", "unarchive", a["session"]], cli_command="session unarchive", unwrap="session",
        scoped=True),
    "session.repair": Op(
        call=lambda m, a: m.repair_session(a.pop("session"), a.pop("workspace", None), a),
        http=lambda a: ("POST", scoped_path(a, "repair"), None, a),
        cli=lambda a: ["session", "repair", a["session"]] + flags(a, {"dry_run": "--dry-run", "force": "--force"}),
        cli_command="session repair", unwrap="repair", scoped=True),
    "session.events": Op(
        call=lambda m, a: m.events(a.pop("session"), a.pop("workspace", None), {k: str(v) for k, v in a.items()}),
        http=lambda a: ("GET", scoped_path(a, "events"), a or None, None),
        cli=lambda a: ["session", "events", a["session"]] + flags(a, {
            "limit": "--last", "after_sequence": "--after", "before_sequence": "--before", "turn_id": "--turn",
            "type": "--type", "archive": "--archive"}),
        cli_command="session events", scoped=True),
    "session.history": Op(
        call=lambda m, a: m.history(a.pop("session"), a.pop("workspace", None), a),
        http=lambda a: ("GET", scoped_path(a, "history"), a or None, None),
        cli=lambda a: ["session", "history", a["session"]] + flags(a, {"archive": "--archive"}),
        cli_command="session history", scoped=True),
}


def collect(pairs):
    """The streaming form collected: the admission plus the turn's records."""
    admission, events = None, []
    for event, data in pairs:
        if event == "prompt":
            admission = data
        elif event is not None:
            events.append(data)
    return {"prompt": admission, "terminal_event": events[-1] if events else None}
