"""The reference agent's connection and session methods: initialize, authenticate, session/new, load, resume,
close and fork, session modes and config options. Mixed into ReferenceAgent (compozy/agents/reference.py).
"""

from __future__ import annotations

import os
import sys
import time
import uuid

from compozy.acp import protocol
from compozy.agents import login
from compozy.agents.directives import log
from compozy.agents.sessions import Session, valid_history
from compozy.agents.turn import text_update

AGENT_INFO = {"name": "compozy-reference", "title": "Compozy reference agent", "version": "1"}
SELECT_LABELS = {"model": ("Model", "model"), "reasoning_effort": ("Reasoning effort", "thought_level"),
                 "speed": ("Speed", "_speed")}
MODES = [{"id": "default", "name": "Default", "description": "Echo as usual"},
         {"id": "plan", "name": "Plan", "description": "Plan before acting"}]
COMMANDS = [{"name": "echo", "description": "Echo the text back", "input": {"hint": "text to echo"}},
            {"name": "recall", "description": "List the earlier user messages"}]
FAIL_OPEN_STDERR = "\x1b[31mfatal:\x1b[0m cannot reach the model with key {key}\n"


class RpcError(Exception):
    def __init__(self, code: int, message: str, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def invalid_params(reason: str) -> RpcError:
    return RpcError(protocol.INVALID_PARAMS, f"Invalid params: {reason}")


def session_cwd(params: dict) -> str:
    cwd = params.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise invalid_params("cwd must be an absolute path")
    if not isinstance(params.get("mcpServers"), list):
        raise invalid_params("mcpServers must be a list")
    return cwd


def advertises(capabilities, *path) -> bool:
    """A client capability at path, where {} (or true) means supported."""
    node = capabilities
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    return isinstance(node, dict) and node.get(path[-1]) not in (None, False)


class SessionMethods:
    """Relies on ReferenceAgent's settings, sessions, lock, store, after_answer and send_update."""

    def initialize(self, request) -> dict:
        capabilities = request.params.get("clientCapabilities")
        self.boolean_options = advertises(capabilities, "session", "configOptions", "boolean")
        self.terminal_auth = advertises(capabilities, "auth", "terminal")
        self.questions = advertises(capabilities, "elicitation", "form")
        self.gate("initialize")
        time.sleep(self.settings.start_delay)
        settings = self.settings
        sessions = {name: {} for name, on in (("fork", settings.fork), ("resume", settings.resume),
                                                ("close", settings.close)) if on}
        capabilities = {"loadSession": settings.load_session,
                        "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
                        "mcpCapabilities": {"http": settings.mcp_http, "sse": False},
                        "sessionCapabilities": sessions}
        result = {"protocolVersion": protocol.PROTOCOL_VERSION, "agentCapabilities": capabilities,
                  "agentInfo": AGENT_INFO, "authMethods": login.advertised(settings, self.terminal_auth)}
        if settings.steering:
            # ACP puts custom capabilities in agentCapabilities._meta; the result-level copy is for convenience.
            capabilities["_meta"] = {"compozy.dev/steering": True}
            result["_meta"] = {"compozy.dev/steering": True}
        return result

    def authenticate(self, request) -> dict:
        refused = login.refusal(self.settings, request.params.get("methodId"), os.environ)
        if refused is not None:
            raise RpcError(*refused)
        self.authenticated = True
        return {}

    def gate_opening(self) -> None:
        """Authentication first; then the COMPOZY_REFERENCE_FAIL_OPEN failure, which carries its reason in data."""
        if self.settings.require_auth and not self.authenticated and not login.logged_in_by_terminal(self.settings):
            raise RpcError(protocol.AUTH_REQUIRED, "Authentication required")
        if self.settings.fail_open:
            sys.stderr.write(FAIL_OPEN_STDERR.format(key=os.environ.get(login.KEY_VARIABLE, "(none)")))
            sys.stderr.flush()
            raise RpcError(protocol.INTERNAL_ERROR, "Internal error",
                           {"details": "Reference process exited with code 1 (COMPOZY_REFERENCE_FAIL_OPEN)"})

    def new_session(self, request) -> dict:
        cwd = session_cwd(request.params)
        self.gate("session/new", cwd)
        self.gate_opening()
        session = Session(f"ref_{uuid.uuid4().hex}", cwd, self.default_config(),
                          mcp_servers=request.params["mcpServers"])
        with self.lock:
            self.sessions[session.session_id] = session
            self.store.save(session)
        log(f"new session {session.session_id} in {cwd}")
        return {"sessionId": session.session_id, **self.opened(session)}

    def load_session(self, request) -> dict:
        self.gate("session/load", request.params.get("cwd"))
        session = self.restore(request.params, servers_required=True)
        for entry in session.history:
            kind = "user_message_chunk" if entry["role"] == "user" else "agent_message_chunk"
            self.send_update(session.session_id, text_update(kind, entry["text"], entry["message_id"]))
        log(f"loaded session {session.session_id} ({len(session.history)} messages)")
        return self.opened(session)

    def resume_session(self, request) -> dict:
        """Like session/load, without replaying the history (ACP forbids it)."""
        session = self.restore(request.params, servers_required=False)
        log(f"resumed session {session.session_id} ({len(session.history)} messages)")
        return self.opened(session)

    def restore(self, params, servers_required) -> Session:
        cwd = session_cwd(params if servers_required else {**params, "mcpServers": params.get("mcpServers") or []})
        self.gate_opening()
        session_id = params.get("sessionId")
        stored = self.store.read(session_id)
        if stored is None:
            raise RpcError(protocol.RESOURCE_NOT_FOUND, "Resource not found", {"sessionId": session_id})
        with self.lock:
            current = self.sessions.get(session_id)
            if current and current.turn:
                raise RpcError(protocol.INTERNAL_ERROR, "prompt already running")
            session = Session(session_id, cwd, self.sanitized_config(stored.get("config")),
                              valid_history(stored.get("history")), mcp_servers=params.get("mcpServers") or [],
                              mode=self.known_mode(stored.get("mode")), closes=_count(stored.get("closes")),
                              cost=_amount(stored.get("cost")))
            self.sessions[session_id] = session
            self.store.save(session)
        return session

    def close_session(self, request) -> dict:
        """session/close: cancel what runs, record the close in the session's state, then forget it."""
        session = self.session_for(request.params)
        turn = session.turn
        if turn:
            turn.request_cancel()
        with self.lock:
            session.closes += 1
            self.store.save(session)
            if session.tools is not None:
                session.tools.close()
            self.sessions.pop(session.session_id, None)
        log(f"closed session {session.session_id}")
        return {}

    def fork_session(self, request) -> dict:
        """A clone of an idle session under a new id: its config and history, saved like any session."""
        source = self.session_for(request.params)
        cwd = request.params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise invalid_params("cwd must be an absolute path")
        if self.settings.fork_fails:
            raise RpcError(protocol.INTERNAL_ERROR, "fork refused (COMPOZY_REFERENCE_FORK_FAIL)")
        with self.lock:
            if source.turn:
                raise RpcError(protocol.INTERNAL_ERROR, "prompt already running")
            clone = Session(f"ref_{uuid.uuid4().hex}", cwd, dict(source.config), [dict(e) for e in source.history],
                            mode=source.mode)
            self.sessions[clone.session_id] = clone
            self.store.save(clone)
        log(f"forked session {source.session_id} into {clone.session_id}")
        return {"sessionId": clone.session_id, "configOptions": self.config_options(clone)}

    def opened(self, session: Session) -> dict:
        """What session/new, load and resume answer besides the id; the commands follow the answer."""
        if self.settings.commands:
            self.after_answer.append(lambda: self.send_update(session.session_id, {
                "sessionUpdate": "available_commands_update", "availableCommands": COMMANDS}))
        result = {"configOptions": self.config_options(session)}
        if self.settings.modes:
            result["modes"] = {"currentModeId": session.mode, "availableModes": MODES}
        return result

    def set_mode(self, request) -> dict:
        """Without COMPOZY_REFERENCE_MODES any call is accepted (and changes nothing)."""
        if not self.settings.modes:
            return {}
        session = self.session_for(request.params)
        mode = request.params.get("modeId")
        if mode not in [m["id"] for m in MODES]:
            raise invalid_params(f"unknown mode {mode!r} (one of {', '.join(m['id'] for m in MODES)})")
        with self.lock:
            session.mode = mode
            self.store.save(session)
        return {}

    def known_mode(self, mode) -> str:
        return mode if mode in [m["id"] for m in MODES] else "default"

    def default_config(self) -> dict:
        return {"model": self.settings.models[0], "reasoning_effort": "medium", "speed": "normal", "thinking": False}

    def sanitized_config(self, stored) -> dict:
        config, stored = self.default_config(), stored if isinstance(stored, dict) else {}
        for config_id, choices in self.settings.choices().items():
            if stored.get(config_id) in choices:
                config[config_id] = stored[config_id]
        config["thinking"] = stored.get("thinking") is True
        return config

    def config_options(self, session: Session) -> list[dict]:
        options = []
        for config_id, choices in self.settings.choices().items():
            name, category = SELECT_LABELS[config_id]
            options.append({"id": config_id, "name": name, "category": category, "type": "select",
                            "currentValue": session.config[config_id],
                            "options": [{"value": value, "name": value} for value in choices]})
        if self.boolean_options:
            options.append({"id": "thinking", "name": "Thinking", "type": "boolean",
                            "currentValue": session.config["thinking"]})
        return options

    def set_config_option(self, request) -> dict:
        session = self.session_for(request.params)
        config_id, value = request.params.get("configId"), request.params.get("value")
        self.validate_option(config_id, value, request.params.get("type"))
        with self.lock:
            session.config[config_id] = value
            self.store.save(session)
        return {"configOptions": self.config_options(session)}

    def validate_option(self, config_id, value, value_type) -> None:
        if config_id == "thinking" and self.boolean_options:
            if not isinstance(value, bool) or value_type not in (None, "boolean"):
                raise invalid_params(f"thinking takes a boolean value, not {value!r}")
            return
        choices = self.settings.choices().get(config_id)
        if choices is None:
            raise invalid_params(f"unknown config option {config_id!r}")
        if value_type not in (None, "select") or value not in choices:
            raise invalid_params(f"{value!r} is not a value of {config_id} (one of {', '.join(choices)})")


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _amount(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else 0.0
