"""AgentClient: everything compozy says to an ACP agent, and what it hears back.

Layer 3 (the ACP seam). launch() spawns the provider's command and runs the initialize
handshake; open_session() binds one ACP session (compozy.acp.opening: resume or load when asked and
advertised, else new, authenticated as compozy.acp.auth says); prompt, cancel and steer drive a turn.
What the agent sends arrives on the process's reader thread and is handed to the session's listener in
the domain's words: translated output, permission asks and file requests (acp.requests), and the exit.
The agent's own state (its commands, its session mode, its config options) is kept here as it announces it.

The listener answers output(client, events), permission(client, ask, reply), write(client,
path, reply), workspace_root(), files_denied() and exited(client).
"""

import logging
import threading
import uuid
from dataclasses import dataclass

from compozy.acp import protocol, requests
from compozy.acp.driver import AcpError, AgentExited, AgentProcess
from compozy.acp.opening import CloneFailed, close_session, fork_session, mcp_servers, open_session
from compozy.acp.options import configure, needs_configuration, take_update
from compozy.acp.refusal import BindFailure, refused
from compozy.acp.translate import DROPPED_VARIANTS, translate
from compozy.errors import CompozyError
from compozy.location import child_environment
from compozy.redact import without_daemon_secrets
from compozy.states import FailureKind

log = logging.getLogger("compozy.acp.client")

INITIALIZE = "initialize"
SESSION_PROMPT = "session/prompt"
SESSION_CANCEL = "session/cancel"
SESSION_UPDATE = "session/update"
STEER = "_compozy/steer"
REFUSED_TERM_GRACE, REFUSED_KILL_GRACE = 0.5, 5.0  # an agent refused at its handshake: stopped at once
STEER_TIMEOUT = 10.0
# auth.terminal: compozy runs an agent's terminal login (`compozy agent login`), never through authenticate.
CLIENT_CAPABILITIES = {"fs": {"readTextFile": True, "writeTextFile": True},
                       "session": {"configOptions": {"boolean": {}}}, "auth": {"terminal": True},
                       "elicitation": {"form": {}}}  # questions: held for a person like a permission request
CLIENT_INFO = {"name": "compozy", "title": "compozy daemon", "version": "0.1"}

__all__ = ["AgentClient", "AcpError", "AgentExited", "BindFailure", "CloneFailed", "PromptAnswer", "close_session",
           "configure", "fork_session", "launch", "mcp_servers", "needs_configuration", "open_session"]


@dataclass(frozen=True)
class PromptAnswer:
    """How the agent ended a prompt turn."""

    stop_reason: str
    usage: dict | None = None


class AgentClient:
    """A live agent process with (after open_session) one ACP session bound to one compozy session."""

    def __init__(self, provider, process=None, listener=None, label="agent"):
        self.provider, self.process, self.listener, self.label = provider, process, listener, label
        self.caps, self.agent_info, self.auth_methods = {}, {}, []
        self.protocol_version = None  # what initialize answered (always 1 once launched)
        self.acp_session_id = None
        self.config_options, self.legacy_models, self.modes = [], None, None
        self.effective = {"provider": provider.name}
        self.available_commands = None  # the agent's slash commands, once it announced them
        self.loading = False
        self.released = False
        self.opened = None  # how its ACP session was opened: new, load or resume
        self.closed = False  # session/close was sent
        self.authenticated = None  # the auth method this process accepted
        self.login_name = provider.name  # what `compozy agent login NAME` takes to log this provider in
        self.early = None  # updates heard while session/new is answered (a list then)
        self._delivery = threading.Lock()
        self.launch_alias = None  # the provider's LaunchAlias this process was started with
        self.identity = {}  # the binding's identity in the agent's environment (secret: kept out of reports)

    @property
    def alive(self):
        return self.process.alive

    @property
    def supports_load(self):
        return self.caps.get("loadSession") is True

    @property
    def supports_fork(self):
        """ACP session/fork (unstable): sessionCapabilities.fork, where {} means yes."""
        capabilities = self.caps.get("sessionCapabilities")
        return isinstance(capabilities, dict) and capabilities.get("fork") not in (None, False)

    @property
    def supports_resume(self):
        return self._session_capability("resume")

    @property
    def supports_close(self):
        return self._session_capability("close")

    def _session_capability(self, name):
        capabilities = self.caps.get("sessionCapabilities")
        return isinstance(capabilities, dict) and capabilities.get(name) not in (None, False)

    def mode_state(self):
        """The agent's session modes: {"current", "available": [{id, name, description?}]}, or None."""
        modes = self.modes
        if not isinstance(modes, dict) or not isinstance(modes.get("availableModes"), list):
            return None
        available = [{k: str(m[k])[:200] for k in ("id", "name", "description") if m.get(k) is not None}
                     for m in modes["availableModes"] if isinstance(m, dict) and m.get("id") is not None]
        return {"current": modes.get("currentModeId"), "available": available}

    @property
    def supports_steering(self):
        return (self.caps.get("_meta") or {}).get("compozy.dev/steering") is True

    def acp_caps(self):
        return dict(self.caps)

    # -- a turn -----------------------------------------------------------------------------

    def prompt(self, text, wake):
        """Send the prompt; the returned PendingCall resolves (and sets wake) when the agent answers."""
        return self.process.request(SESSION_PROMPT, {"sessionId": self.acp_session_id, "prompt": _text(text)},
                                    wake=wake)

    def cancel(self):
        self.process.notify(SESSION_CANCEL, {"sessionId": self.acp_session_id})

    def steer(self, text):
        """Inject text into the running turn (the compozy.dev/steering extension); raises on refusal."""
        self.process.call(STEER, {"sessionId": self.acp_session_id, "prompt": _text(text)}, STEER_TIMEOUT)

    @staticmethod
    def answer(result):
        """The PromptAnswer of a prompt's result."""
        result = result if isinstance(result, dict) else {}
        usage = result.get("usage") if isinstance(result.get("usage"), dict) else None
        return PromptAnswer(str(result.get("stopReason") or "end_turn"), usage)

    # -- what the agent sends (called on its reader thread) -------------------------------------

    def on_updates(self, updates):
        """updates: the params of consecutive session/update notifications. While session/new is answered, the
        agent may speak of the session it just made (its commands) before we know its id: that is kept
        (self.early) until the id is known."""
        with self._delivery:
            if self.acp_session_id is None and self.early is not None:
                self.early.extend(updates)
                return
            self._deliver(updates)

    def opened_as(self, acp_session_id):
        """session/new answered with this id: what the agent said of it meanwhile is delivered first."""
        with self._delivery:
            self.acp_session_id = acp_session_id
            early, self.early = self.early or [], None
            self._deliver(early)

    def _deliver(self, updates):
        events = []
        for params in updates:
            if params.get("sessionId") != self.acp_session_id:
                log.warning("%s: dropped an update for foreign ACP session %r", self.label,
                            str(params.get("sessionId"))[:80])
                continue
            update = params.get("update") if isinstance(params.get("update"), dict) else {}
            take_update(self, update)
            if self.loading:
                continue  # session/load replays history we already hold
            event = translate(update)
            if event is None:
                if update.get("sessionUpdate") not in DROPPED_VARIANTS:
                    log.info("%s: skipped unknown %s %r", self.label, SESSION_UPDATE,
                             str(update.get("sessionUpdate"))[:80])
                continue
            events.append(event)
        if events:
            self.listener.output(self, events)

    def on_request(self, request):
        if request.method in requests.FILE_METHODS:
            self.process.run_aside(lambda: requests.handle(self, self.listener, request))
        else:
            requests.handle(self, self.listener, request)

    def on_notification(self, notification):
        log.info("%s: ignored agent notification %r", self.label, notification.method[:80])

    def on_issue(self, issue):
        log.warning("%s: agent output skipped (%s): %s", self.label, issue.kind, issue.excerpt)

    def on_exit(self, process):
        self.listener.exited(self)


def launch(provider, session_id, cwd, listener, agent_home, identity=None, alias=None, login_name=None,
           spawned=None, threads=None):
    """Spawn the provider's command and run the initialize handshake; identity: the binding's secret
    environment (compozy.session.turns.identity), given to the agent as is; alias: a LaunchAlias whose
    arguments follow the command; login_name: what `compozy agent login` takes for this provider;
    spawned(client): called once the process runs, before the handshake; threads: the daemon's
    (compozy.threads), which start the process's reader and writer threads."""
    marker = f"COMPOZY_AGENT_MARK={uuid.uuid4().hex}"
    name, value = marker.split("=", 1)
    # The marker and COMPOZY_AGENT_HOME let a later daemon find this agent (and its descendants) if we crash.
    env = {**agent_environment(provider, agent_home), "COMPOZY_SESSION_ID": session_id, **(identity or {}),
           name: value, "COMPOZY_AGENT_HOME": agent_home}
    label = f"{session_id}/{provider.name}"
    client = AgentClient(provider, listener=listener, label=label)
    client.identity = dict(identity or {})
    client.launch_alias = alias
    client.login_name = login_name or provider.name
    command = provider.command + (alias.args if alias is not None else ())
    client.process = AgentProcess(command, cwd, env, client, marker=marker, label=label, threads=threads)
    try:
        client.process.start()
    except OSError as exc:
        raise BindFailure(CompozyError("provider_unavailable", f"cannot start provider {provider.name!r}: {exc}"),
                          "startup_failure") from None
    if spawned is not None:
        spawned(client)
    try:
        result = _initialize(client)
    except BindFailure:
        # Nobody else holds this process yet: an agent that never answered would outlive us.
        client.process.close_stdin()
        client.process.kill_tree(REFUSED_TERM_GRACE, REFUSED_KILL_GRACE)
        raise
    client.protocol_version = result.get("protocolVersion")
    client.caps = result.get("agentCapabilities") or {}
    client.agent_info = result.get("agentInfo") or {}
    client.auth_methods = result.get("authMethods") or []
    return client


def agent_environment(provider, agent_home):
    """What an agent of this provider runs with. COMPOZY_HOME lets the built-in agent keep its state beside the
    daemon's. The daemon's own credentials (COMPOZY_TOKEN and other COMPOZY_* secrets) never reach an agent;
    everything else of the daemon's environment does (API keys included), then the provider's env."""
    return {**without_daemon_secrets(child_environment()), "COMPOZY_HOME": agent_home, **provider.env}


def _initialize(client):
    provider = client.provider
    try:
        result = client.process.call(INITIALIZE, {"protocolVersion": protocol.PROTOCOL_VERSION,
                                                  "clientCapabilities": CLIENT_CAPABILITIES,
                                                  "clientInfo": CLIENT_INFO}, provider.handshake_timeout)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise refused(client, FailureKind.HANDSHAKE_FAILURE, f"provider {provider.name!r} failed {INITIALIZE}",
                      exc=exc) from None
    if not isinstance(result, dict) or result.get("protocolVersion") != protocol.PROTOCOL_VERSION:
        raise refused(client, FailureKind.HANDSHAKE_FAILURE,
                      f"provider {provider.name!r} speaks ACP {result and result.get('protocolVersion')!r}, not 1")
    return result


def _text(text):
    return [{"type": "text", "text": text}]
