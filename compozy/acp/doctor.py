"""`compozy agent doctor`: one agent started as a session would start it, each step timed and reported.

Layer 3 (the ACP seam). The steps are launch (spawn and initialize: the protocol version, capabilities,
agent info and auth methods), authenticate (as a binding does: the provider's auth_method first, else only
after `auth required`, so an agent that needs no login is never sent one), session/new, and session/close
when advertised. The first failure ends the run and is reported with its evidence (the agent's error data
and its last stderr lines). The agent is always stopped by the ladder and the report says whether that
was verified: a doctor never leaves a process behind.
"""

from compozy.acp import auth
from compozy.acp.client import BindFailure, launch
from compozy.acp.login import Unattended
from compozy.acp.opening import close_session, open_session
from compozy.clock import monotonic

LABEL = "doctor"
STDIN_GRACE, TERM_GRACE, KILL_GRACE = 2.0, 2.0, 5.0
STDERR_LINES = 12


def examine(provider, agent_name, cwd, agent_home, threads=None):
    """The report: {agent, provider, command, ok, steps: [{step, ok, seconds, detail}], agent: {...},
    error?, stderr_tail, stopped}."""
    report = {"agent": agent_name, "provider": provider.name, "command": list(provider.command), "ok": False,
              "steps": [], "protocol_version": None, "agent_info": None, "capabilities": None,
              "auth_methods": None, "authenticated": None, "error": None, "stderr_tail": [], "stopped": True}
    started = monotonic()
    try:
        client = launch(provider, LABEL, cwd, Unattended(), agent_home, login_name=agent_name, threads=threads)
    except BindFailure as failure:
        _failed(report, "launch", started, failure)
        report["stderr_tail"] = failure.error.details.get("stderr_tail", [])
        if failure.runtime is not None:  # launch stopped it already: the ladder proves nothing of it is left
            report["stopped"] = _stop(failure.runtime)
        return report
    try:
        _launched(report, client, started)
        _opened(report, client, cwd)
    finally:
        report["stderr_tail"] = client.process.stderr_tail(STDERR_LINES).splitlines()
        report["stopped"] = _stop(client)
    return report


def _launched(report, client, started):
    report.update(protocol_version=client.protocol_version, agent_info=client.agent_info,
                  capabilities=client.caps, auth_methods=auth.methods(client))
    name = client.agent_info.get("name") if isinstance(client.agent_info, dict) else None
    detail = f"ACP {client.protocol_version}" + (f", {name} {client.agent_info.get('version', '')}".rstrip()
                                                  if name else "")
    _step(report, "launch", started, True, detail)


def _opened(report, client, cwd):
    started = monotonic()
    try:
        open_session(client, cwd)
    except BindFailure as failure:
        kind = "authenticate" if failure.error.code == "provider_auth_failure" else "session/new"
        _failed(report, kind, started, failure)
        return
    method = client.authenticated
    report["authenticated"] = method["id"] if method else None
    methods = report["auth_methods"] or []
    _step(report, "authenticate", None, True, f"with {method['id']} ({method['type']})" if method else
          "not needed" if not methods else "not needed: the agent opened a session without a login")
    modes = client.mode_state()
    detail = f"session {client.acp_session_id}; {len(client.config_options)} config options" + (
        f"; modes {', '.join(m['id'] for m in modes['available'])}" if modes else "")
    _step(report, "session/new", started, True, detail)
    if client.supports_close:
        closed_at = monotonic()
        confirmed = close_session(client)
        _step(report, "session/close", closed_at, confirmed, "confirmed" if confirmed else "not confirmed")
    report["ok"] = all(step["ok"] for step in report["steps"])


def _step(report, name, started, ok, detail):
    seconds = round(monotonic() - started, 3) if started is not None else None
    report["steps"].append({"step": name, "ok": ok, "seconds": seconds, "detail": detail})


def _failed(report, name, started, failure):
    error = failure.error
    _step(report, name, started, False, error.message)
    report["error"] = {"step": name, "code": error.code, "failure_kind": failure.failure_kind,
                       "message": error.message,
                       **{key: error.details[key] for key in ("agent_error", "stderr_tail", "auth_methods", "tried",
                                                               "next_command") if key in error.details}}


def _stop(client):
    """Close stdin, let the agent leave, then the ladder's signals; True when no process of it is left."""
    client.process.close_stdin()
    client.process.wait_exit(STDIN_GRACE)
    return bool(client.process.kill_tree(TERM_GRACE, KILL_GRACE).verified)
