"""ACP authentication: the agent's authMethods by type, the method compozy may send to `authenticate`, and the
refusal that says what remains to do.

Layer 3 (the ACP seam). A provider's `auth_method` is authenticated before the first session is opened;
otherwise a session/new, load or resume answered `auth required` (-32000) is retried once after
authenticating with the one env_var method whose variables the agent's environment holds (or the only
agent-type method). A terminal method is never sent to `authenticate`: a person runs it with
`compozy agent login` (the agent's own program with the method's args and env, in their terminal).
"""

import logging

from compozy.acp import protocol
from compozy.acp.driver import AcpError, AgentExited
from compozy.acp.evidence import agent_error, described
from compozy.acp.refusal import refused
from compozy.states import FailureKind

log = logging.getLogger("compozy.acp.auth")

AUTHENTICATE = "authenticate"
AUTHENTICATE_TIMEOUT = 60.0
AGENT, ENV_VAR, TERMINAL = "agent", "env_var", "terminal"
TEXT_LIMIT = 200


def methods(client):
    """The advertised authMethods, each as {id, name, type, description?, vars?, args?, env?} with strings bounded."""
    found = []
    for entry in client.auth_methods if isinstance(client.auth_methods, list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        method = {"id": entry["id"][:TEXT_LIMIT], "name": str(entry.get("name") or entry["id"])[:TEXT_LIMIT],
                  "type": str(entry.get("type") or AGENT)}
        if entry.get("description"):
            method["description"] = str(entry["description"])[:TEXT_LIMIT]
        if method["type"] == ENV_VAR:
            method["vars"] = variables(entry)
        if method["type"] == TERMINAL:
            method["args"] = [str(a) for a in entry.get("args") or [] if isinstance(a, (str, int, float))]
            env = entry.get("env") if isinstance(entry.get("env"), dict) else {}
            method["env"] = {str(k): str(v) for k, v in env.items()}
        found.append(method)
    return found


def variables(entry):
    """The variables an env_var method needs: `vars` ({name, optional?}), or an older single `varName`."""
    names = [v["name"] for v in entry.get("vars") or [] if isinstance(v, dict) and isinstance(v.get("name"), str)
             and not v.get("optional")]
    if isinstance(entry.get("varName"), str):
        names.append(entry["varName"])
    return names


def chosen(client):
    """The method to authenticate with after `auth required`: the first env_var method whose variables are
    all set in the agent's environment, else the only agent-type method, else None."""
    offered = methods(client)
    env = client.process.env
    ready = [m for m in offered if m["type"] == ENV_VAR and m["vars"] and all(env.get(v) for v in m["vars"])]
    if ready:
        return ready[0]
    agents = [m for m in offered if m["type"] == AGENT]
    return agents[0] if len(agents) == 1 else None


def before_opening(client):
    """The provider's auth_method, authenticated before any session is opened (a terminal one is left to
    `compozy agent login`); one the agent does not offer is refused at once."""
    wanted = client.provider.auth_method
    if not wanted or client.authenticated is not None:
        return
    method = next((m for m in methods(client) if m["id"] == wanted), None)
    if method is None:
        raise auth_refused(client, problem=f"provider {client.provider.name!r} sets auth_method = {wanted!r}, "
                                           "which the agent does not offer")
    if method["type"] != TERMINAL:
        authenticate(client, method)


def opening(client, call):
    """call() (a session/new, load or resume), authenticated and tried once more when it answers
    `auth required`; BindFailure (provider_auth_failure) when that does not help."""
    try:
        return call()
    except AcpError as exc:
        if exc.code != protocol.AUTH_REQUIRED:
            raise
        if client.authenticated is not None:
            raise auth_refused(client, tried=client.authenticated, exc=exc) from None
        method = chosen(client)
        if method is None:
            raise auth_refused(client, exc=exc) from None
    authenticate(client, method)
    try:
        return call()
    except AcpError as exc:
        if exc.code != protocol.AUTH_REQUIRED:
            raise
        raise auth_refused(client, tried=method, exc=exc) from None


def authenticate(client, method):
    try:
        client.process.call(AUTHENTICATE, {"methodId": method["id"]}, AUTHENTICATE_TIMEOUT)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise auth_refused(client, tried=method, exc=exc) from None
    client.authenticated = method
    log.info("%s: authenticated with %r", client.label, method["id"])


def auth_refused(client, tried=None, exc=None, problem=None):
    """provider_auth_failure naming the methods the agent offers, the one tried (and how it failed), and the
    next step: `compozy agent login NAME --method ID`, or the variable to set."""
    offered = methods(client)
    name = client.provider.name
    text = problem or f"provider {name!r} requires authentication"
    if offered:
        text += "; it offers: " + "; ".join(_offer(m) for m in offered)
    if tried is not None:
        text += f". Tried {tried['id']!r}" + (f": {described(exc, client.process.env)}" if exc is not None else "")
    step = next_step(client, offered, tried)
    details = {"auth_methods": offered, "tried": tried["id"] if tried else None, "next_step": step["text"]}
    if step.get("command"):
        details["next_command"] = step["command"]
    failure = refused(client, FailureKind.PROVIDER_AUTH_FAILURE, f"{text}. Next: {step['text']}",
                      code="provider_auth_failure", **details)
    if isinstance(exc, AcpError):
        failure.error.details.setdefault("agent_error", agent_error(exc, client.process.env))
    return failure


def next_step(client, offered, tried):
    """{"text", "command"?}: what a person does next, as exactly as the methods allow."""
    login = f"compozy agent login {client.login_name}"
    terminal = next((m for m in offered if m["type"] == TERMINAL), None)
    if terminal is not None:
        command = f"{login} --method {terminal['id']}"
        return {"text": f"run `{command}` in a terminal, then prompt again", "command": command}
    env = client.process.env
    missing = next((m for m in offered if m["type"] == ENV_VAR and not all(env.get(v) for v in m["vars"])), None)
    if missing is not None and missing["vars"]:
        names = ", ".join(v for v in missing["vars"] if not env.get(v))
        command = "compozy daemon reload"
        return {"text": f"set {names} in providers.{client.provider.name}.env of config.toml (or the daemon's "
                        f"environment), then run `{command}` and prompt again", "command": command}
    agent = next((m for m in offered if m["type"] == AGENT and m is not tried), None) or tried
    if agent is not None:
        command = f"{login} --method {agent['id']}"
        return {"text": f"run `{command}` (or set auth_method = \"{agent['id']}\" in providers."
                        f"{client.provider.name}), then prompt again", "command": command}
    return {"text": "log in with the agent's own command, or set its API key in the provider's env, then prompt "
                    "again"}


def _offer(method):
    text = f"{method['name']} ({method['id']})"
    return text + (f": {method['description']}" if method.get("description") else "")
