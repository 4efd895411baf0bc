"""The reference agent's authentication: the methods it advertises (agent, env_var and terminal types), what
`authenticate` accepts, and the terminal login it runs when started with the terminal method's args and env.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from compozy.acp import protocol
from compozy.agents.sessions import private_dir
from compozy.agents.settings import Settings, env_flag

KEY_VARIABLE = "REFERENCE_API_KEY"
LOGIN_ARG = "--login"
LOGIN_ENV = "COMPOZY_REFERENCE_LOGIN"
LOGIN_FILE = "terminal-login"
AGENT_METHOD = {"id": "reference-login", "name": "Reference login"}
ENV_METHOD = {"type": "env_var", "id": "reference-key", "name": f"Use {KEY_VARIABLE}",
              "description": f"Requires setting the `{KEY_VARIABLE}` environment variable.",
              "vars": [{"name": KEY_VARIABLE}]}
TERMINAL_METHOD = {"type": "terminal", "id": "reference-terminal", "name": "Reference terminal login",
                   "description": "Run the agent in a terminal to log in", "args": [LOGIN_ARG], "env": {LOGIN_ENV: "1"}}
METHODS = {"agent": AGENT_METHOD, "env": ENV_METHOD, "terminal": TERMINAL_METHOD}


def advertised(settings: Settings, terminal_client: bool) -> list[dict]:
    """authMethods for initialize: only with REQUIRE_AUTH; a terminal method only to a client that runs one."""
    if not settings.require_auth:
        return []
    return [METHODS[kind] for kind in settings.auth_methods if kind != "terminal" or terminal_client]


def refusal(settings: Settings, method_id, env) -> tuple | None:
    """None when `authenticate {methodId}` succeeds, else the (code, message, data) of its error."""
    if not settings.require_auth:
        return None
    kind = {METHODS[kind]["id"]: kind for kind in settings.auth_methods}.get(method_id)
    if kind is None:
        return protocol.INVALID_PARAMS, f"Invalid params: unknown auth method {method_id!r}", None
    if kind == "terminal":
        return protocol.INVALID_PARAMS, "Invalid params: a terminal method is run, never authenticated", None
    if kind == "env" and not env.get(KEY_VARIABLE):
        return protocol.INTERNAL_ERROR, "Internal error", f"{KEY_VARIABLE} is not set"
    if kind == "agent" and settings.auth_refuse:
        return protocol.AUTH_REQUIRED, "Authentication failed", {"details": "the reference login is switched off"}
    return None


def logged_in_by_terminal(settings: Settings) -> bool:
    return settings.require_auth and "terminal" in settings.auth_methods and (
        settings.state_dir / LOGIN_FILE).exists()


def wants_login(launch_args, env) -> bool:
    return LOGIN_ARG in launch_args or env_flag(env, LOGIN_ENV)


def run_login(settings: Settings, launch_args, env) -> int:
    """The terminal login: started with both the method's args and its env, it records the login and exits 0."""
    if not (LOGIN_ARG in launch_args and env_flag(env, LOGIN_ENV)):
        sys.stderr.write(f"reference login needs both {LOGIN_ARG} and {LOGIN_ENV}=1\n")
        return 3
    private_dir(settings.state_dir)
    Path(settings.state_dir, LOGIN_FILE).write_text(f"logged in by pid {os.getpid()}\n", encoding="ascii")
    sys.stdout.write("Reference agent: logged in\n")
    sys.stdout.flush()
    return 0
