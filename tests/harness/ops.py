"""The operation table: each scenario op mapped to a manager call, an HTTP request and a CLI argv.

Arguments arrive as one dict: `session`, `workspace` and `entry` are path parameters, the rest
is the request body (or query). CLI builders translate the same dict into flags.
"""

from dataclasses import dataclass

from compozy.client import path_of


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


OPS = {
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
}
