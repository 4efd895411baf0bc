"""Opening, cloning and closing an agent's ACP session.

Layer 3 (the ACP seam). open_session() binds one ACP session: an earlier one is taken up again with
session/resume when the agent advertises it (no history replayed), else session/load (its replay is
not new output), else a fresh session/new; each is authenticated as compozy.acp.auth says. close_session()
frees it (session/close, when advertised) before the process is stopped.
"""

import logging

from compozy.acp import auth
from compozy.acp.driver import AcpError, AgentExited
from compozy.acp.evidence import described
from compozy.acp.options import take_options
from compozy.acp.refusal import refused
from compozy.redact import redact
from compozy.states import FailureKind

log = logging.getLogger("compozy.acp.client")

SESSION_NEW = "session/new"
SESSION_LOAD = "session/load"
SESSION_RESUME = "session/resume"
SESSION_CLOSE = "session/close"
SESSION_FORK = "session/fork"
SESSION_TIMEOUT = 60.0
LOAD_TIMEOUT = 120.0
FORK_TIMEOUT = 30.0
CLOSE_TIMEOUT = 5.0
NEW, LOADED, RESUMED = "new", "load", "resume"


class CloneFailed(Exception):
    """The agent did not clone its session; the message is redacted."""


def open_session(client, cwd, load_id=None, tools=None):
    """session/resume or session/load of load_id when advertised, else session/new, offering the native tool
    server (a compozy.session.turns.identity.ToolServer, or None). True when the agent kept the history
    (resumed or loaded); client.opened says how."""
    params = {"cwd": cwd, "mcpServers": mcp_servers(client, tools)}
    auth.before_opening(client)
    if load_id and client.supports_resume and _take_up(client, SESSION_RESUME, {**params, "sessionId": load_id}):
        return True
    if load_id and client.supports_load:
        client.loading = True  # history replayed by session/load is not new output
        try:
            if _take_up(client, SESSION_LOAD, {**params, "sessionId": load_id}):
                return True
        finally:
            client.loading = False
    client.early = []
    try:
        result = auth.opening(client, lambda: client.process.call(SESSION_NEW, params, SESSION_TIMEOUT))
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise refused(client, "startup_failure", f"{SESSION_NEW} failed", exc=exc) from None
    if not isinstance(result, dict) or not isinstance(result.get("sessionId"), str):
        raise refused(client, FailureKind.PROTOCOL_FAILURE, f"{SESSION_NEW} answered without a sessionId")
    client.opened = NEW
    take_options(client, result)
    client.opened_as(result["sessionId"])
    return False


def _take_up(client, method, params):
    """An earlier ACP session resumed or loaded: True, or False (logged) when the agent could not."""
    client.acp_session_id = params["sessionId"]  # what it says meanwhile (a load's replay) is of this session
    try:
        result = auth.opening(client, lambda: client.process.call(method, params, LOAD_TIMEOUT))
    except (AcpError, TimeoutError) as exc:
        client.acp_session_id = None
        log.warning("%s: %s of %r failed (%s); trying another way", client.label, method, params["sessionId"],
                    described(exc, client.process.env))  # the agent's reason, often only in the error's data
        return False
    except AgentExited as exc:
        raise refused(client, FailureKind.LOAD_SESSION_FAILURE, f"agent exited during {method}", exc=exc) from None
    except BaseException:
        client.acp_session_id = None
        raise
    client.opened = RESUMED if method == SESSION_RESUME else LOADED
    take_options(client, result)
    return True


def close_session(client, timeout=CLOSE_TIMEOUT):
    """Free the agent's ACP session (session/close, when advertised) before its process is stopped; True when
    the agent confirmed. Sent once, never to a process that is gone."""
    if not client.supports_close or not client.acp_session_id or client.closed or not client.alive or timeout <= 0:
        return False
    client.closed = True
    try:
        client.process.call(SESSION_CLOSE, {"sessionId": client.acp_session_id}, timeout)
    except (AcpError, AgentExited, TimeoutError) as exc:
        log.info("%s: %s not confirmed (%s)", client.label, SESSION_CLOSE, redact(str(exc), client.process.env))
        return False
    return True


def mcp_servers(client, tools):
    """The tool server as this agent can reach it: over HTTP when it advertises mcpCapabilities.http, else
    as a stdio command (ACP's McpServer shapes)."""
    if tools is None:
        return []
    capabilities = client.caps.get("mcpCapabilities")
    if tools.url and isinstance(capabilities, dict) and capabilities.get("http") is True:
        return [{"type": "http", "name": tools.name, "url": tools.url, "headers": _pairs(tools.headers)}]
    return [{"name": tools.name, "command": tools.command[0], "args": tools.command[1:], "env": _pairs(tools.env)}]


def _pairs(mapping):
    return [{"name": name, "value": value} for name, value in mapping.items()]


def fork_session(client, cwd):
    """The agent's own clone of the bound session (ACP session/fork): the clone's sessionId. Nothing of
    the clone is routed to the source: its updates carry another sessionId and are dropped."""
    try:
        result = client.process.call(SESSION_FORK, {"sessionId": client.acp_session_id, "cwd": cwd, "mcpServers": []},
                                     FORK_TIMEOUT)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise CloneFailed(redact(f"{SESSION_FORK} failed: {exc}", client.provider.env)) from None
    if not isinstance(result, dict) or not isinstance(result.get("sessionId"), str):
        raise CloneFailed(f"{SESSION_FORK} answered without a sessionId")
    return result["sessionId"]
