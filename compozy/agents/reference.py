"""The compozy reference agent: a real ACP v1 agent on stdin/stdout, steered by directives in prompts.

Run it as `python3 -m compozy.agents.reference`; docs/reference-agent.md describes every behaviour.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass, field

from compozy.acp import protocol
from compozy.agents.directives import log
from compozy.agents.sessions import Session, SessionStore, valid_history
from compozy.agents.settings import Settings, env_flag
from compozy.agents.tools import Connection, connect
from compozy.agents.turn import Turn, text_update

AGENT_INFO = {"name": "compozy-reference", "title": "Compozy reference agent", "version": "1"}
AUTH_METHOD = {"id": "reference-login", "name": "Reference login"}
SELECT_LABELS = {"model": ("Model", "model"), "reasoning_effort": ("Reasoning effort", "thought_level"),
                 "speed": ("Speed", "_speed")}
DEFERRED = object()


class RpcError(Exception):
    def __init__(self, code: int, message: str, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def invalid_params(reason: str) -> RpcError:
    return RpcError(protocol.INVALID_PARAMS, f"Invalid params: {reason}")


def text_of(blocks) -> str:
    if not isinstance(blocks, list):
        raise invalid_params("prompt must be a list of content blocks")
    texts = (block.get("text") for block in blocks if isinstance(block, dict) and block.get("type") == "text")
    return "".join(text for text in texts if isinstance(text, str))


def session_cwd(params: dict) -> str:
    cwd = params.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise invalid_params("cwd must be an absolute path")
    if not isinstance(params.get("mcpServers"), list):
        raise invalid_params("mcpServers must be a list")
    return cwd


@dataclass
class PendingRequest:
    request_id: int
    done: threading.Event = field(default_factory=threading.Event)
    response: protocol.Response | None = None


class ReferenceAgent:
    """Dispatches incoming messages on the main thread; each prompt runs on a worker thread."""

    def __init__(self, endpoint: protocol.StdioEndpoint, settings: Settings):
        self.endpoint, self.settings = endpoint, settings
        self.sessions: dict[str, Session] = {}
        self.pending: dict[object, PendingRequest] = {}
        self.lock = threading.RLock()
        self.store = SessionStore(settings.state_dir, self.lock)
        self.request_ids, self.tool_call_ids = itertools.count(0), itertools.count(1)
        self.boolean_options = self.authenticated = False
        self.children: list[subprocess.Popen] = []
        self.lingering: list[tuple[str, int]] = []  # (session id, late chunks to send at stdin EOF)
        self.handlers = {"initialize": self.initialize, "authenticate": self.authenticate,
                         "session/new": self.new_session, "session/set_config_option": self.set_config_option,
                         "session/set_mode": lambda request: {}, "session/prompt": self.start_prompt}
        if settings.load_session:
            self.handlers["session/load"] = self.load_session
        if settings.steering:
            self.handlers["_compozy/steer"] = self.steer
        if settings.fork:
            self.handlers["session/fork"] = self.fork_session

    def run(self) -> int:
        for message in self.endpoint.messages():
            if isinstance(message, protocol.Request):
                self.handle_request(message)
            elif isinstance(message, protocol.Notification):
                self.handle_notification(message)
            else:
                self.handle_response(message)
        return self.on_eof()

    def on_eof(self) -> int:
        turns = [session.turn for session in list(self.sessions.values()) if session.turn]
        if any(turn.ignore_cancel for turn in turns):
            log("stdin closed, but a [hang] turn ignores that")
            while True:
                time.sleep(1)
        for session_id, count in self.lingering:
            for number in range(1, count + 1):
                self.send_update(session_id, {"sessionUpdate": "agent_message_chunk",
                                              "content": {"type": "text", "text": f"late {number} "}})
        for session in list(self.sessions.values()):
            if session.tools is not None:
                session.tools.close()  # its stdio server goes before we do: nothing of ours outlives us
        log("stdin closed; exiting")
        if turns:
            os._exit(0)  # workers may be mid-write; do not wait for interpreter shutdown
        return 0

    def handle_request(self, request: protocol.Request) -> None:
        handler = self.handlers.get(request.method)
        try:
            if handler is None:
                raise RpcError(protocol.METHOD_NOT_FOUND, "Method not found", {"method": request.method})
            result = handler(request)
        except RpcError as error:
            self.send(protocol.make_error(request.id, error.code, error.message, error.data))
        except Exception as error:
            log(traceback.format_exc())
            self.send(protocol.make_error(request.id, protocol.INTERNAL_ERROR, f"reference agent error: {error}"))
        else:
            if result is not DEFERRED:
                self.send(protocol.make_result(request.id, result))

    def handle_notification(self, notification: protocol.Notification) -> None:
        if notification.method != "session/cancel":
            return  # unknown notifications are ignored, as ACP asks
        session = self.sessions.get(notification.params.get("sessionId"))
        turn = session.turn if session else None
        if turn:
            turn.request_cancel()

    def handle_response(self, response: protocol.Response) -> None:
        with self.lock:
            pending = self.pending.get(response.id)
        if pending is None:
            log(f"response for unknown request id {response.id!r}")
            return
        pending.response = response
        pending.done.set()

    def send(self, message: dict) -> None:
        self.endpoint.send(message)

    def send_update(self, session_id: str, update: dict) -> None:
        self.send(protocol.make_notification("session/update", {"sessionId": session_id, "update": update}))

    def send_request(self, method: str, params: dict) -> PendingRequest:
        with self.lock:
            pending = PendingRequest(next(self.request_ids))
            self.pending[pending.request_id] = pending
        self.send(protocol.make_request(pending.request_id, method, params))
        return pending

    def forget_request(self, pending: PendingRequest) -> None:
        with self.lock:
            self.pending.pop(pending.request_id, None)

    def new_tool_call_id(self) -> str:
        with self.lock:
            return f"call_{next(self.tool_call_ids)}"

    def initialize(self, request: protocol.Request) -> dict:
        self.boolean_options = advertises_boolean_options(request.params.get("clientCapabilities"))
        capabilities = {"loadSession": self.settings.load_session,
                        "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
                        "mcpCapabilities": {"http": self.settings.mcp_http, "sse": False},
                        "sessionCapabilities": {"fork": {}} if self.settings.fork else {}}
        result = {"protocolVersion": protocol.PROTOCOL_VERSION, "agentCapabilities": capabilities,
                  "agentInfo": AGENT_INFO, "authMethods": [AUTH_METHOD] if self.settings.require_auth else []}
        if self.settings.steering:
            # ACP puts custom capabilities in agentCapabilities._meta; the result-level copy is for convenience.
            capabilities["_meta"] = {"compozy.dev/steering": True}
            result["_meta"] = {"compozy.dev/steering": True}
        return result

    def authenticate(self, request: protocol.Request) -> dict:
        method_id = request.params.get("methodId")
        if self.settings.require_auth and method_id != AUTH_METHOD["id"]:
            raise invalid_params(f"unknown auth method {method_id!r}")
        self.authenticated = True
        return {}

    def require_auth(self) -> None:
        if self.settings.require_auth and not self.authenticated:
            raise RpcError(protocol.AUTH_REQUIRED, "Authentication required")

    def new_session(self, request: protocol.Request) -> dict:
        cwd = session_cwd(request.params)
        self.require_auth()
        session = Session(f"ref_{uuid.uuid4().hex}", cwd, self.default_config(),
                          mcp_servers=request.params["mcpServers"])
        with self.lock:
            self.sessions[session.session_id] = session
            self.store.save(session)
        log(f"new session {session.session_id} in {cwd}")
        return {"sessionId": session.session_id, "configOptions": self.config_options(session)}

    def load_session(self, request: protocol.Request) -> dict:
        cwd = session_cwd(request.params)
        self.require_auth()
        session_id = request.params.get("sessionId")
        stored = self.store.read(session_id)
        if stored is None:
            raise RpcError(protocol.RESOURCE_NOT_FOUND, "Resource not found", {"sessionId": session_id})
        with self.lock:
            current = self.sessions.get(session_id)
            if current and current.turn:
                raise RpcError(protocol.INTERNAL_ERROR, "prompt already running")
            session = Session(session_id, cwd, self.sanitized_config(stored.get("config")),
                              valid_history(stored.get("history")), mcp_servers=request.params["mcpServers"])
            self.sessions[session_id] = session
            self.store.save(session)
        for entry in session.history:
            kind = "user_message_chunk" if entry["role"] == "user" else "agent_message_chunk"
            self.send_update(session_id, text_update(kind, entry["text"], entry["message_id"]))
        log(f"loaded session {session_id} ({len(session.history)} messages)")
        return {"configOptions": self.config_options(session)}

    def fork_session(self, request: protocol.Request) -> dict:
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
            clone = Session(f"ref_{uuid.uuid4().hex}", cwd, dict(source.config), [dict(e) for e in source.history])
            self.sessions[clone.session_id] = clone
            self.store.save(clone)
        log(f"forked session {source.session_id} into {clone.session_id}")
        return {"sessionId": clone.session_id, "configOptions": self.config_options(clone)}

    def claim_crash_marker(self, session_id: str, prompt_text: str) -> bool:
        """The [crash N once] directive asks the agent; the marker lives with the session state."""
        return self.store.claim_crash_marker(session_id, prompt_text)

    def finish_turn(self, turn: Turn, message: dict) -> None:
        session = turn.session
        with self.lock:
            if turn.reply_parts:
                session.history.append({"role": "agent", "text": "".join(turn.reply_parts),
                                        "message_id": turn.message_id})
            self.store.save(session)
            session.turn = None  # before answering, so the client may prompt again at once
        self.send(message)

    def session_for(self, params: dict) -> Session:
        session = self.sessions.get(params.get("sessionId"))
        if session is None:
            raise RpcError(protocol.RESOURCE_NOT_FOUND, "Resource not found", {"sessionId": params.get("sessionId")})
        return session

    def start_prompt(self, request: protocol.Request) -> object:
        session = self.session_for(request.params)
        turn = Turn(self, session, request.id, text_of(request.params.get("prompt")))
        with self.lock:
            if session.turn:
                raise RpcError(protocol.INTERNAL_ERROR, "prompt already running")
            session.turn = turn
        if turn.ignores_term:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        threading.Thread(target=turn.run, name=f"turn-{request.id}", daemon=True).start()
        return DEFERRED

    def steer(self, request: protocol.Request) -> dict:
        session = self.session_for(request.params)
        text = text_of(request.params.get("prompt"))
        with self.lock:
            if session.turn is None:
                raise RpcError(protocol.INTERNAL_ERROR, "no prompt running")
            if session.turn.refuses_steer:
                raise RpcError(protocol.INTERNAL_ERROR, "steering refused")
            session.turn.steer(text)
        return {}

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

    def set_config_option(self, request: protocol.Request) -> dict:
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

    def tools_for(self, session: Session) -> Connection:
        """The session's connection to the tool server its client offered, made on first use."""
        with session.tools_lock:
            if session.tools is None:
                session.tools = connect(session.mcp_servers, session.cwd)
            return session.tools

    def session_model(self, session: Session) -> str:
        with self.lock:
            return session.config["model"]

    def thinking_enabled(self, session: Session) -> bool:
        with self.lock:
            return self.boolean_options and session.config.get("thinking") is True


def advertises_boolean_options(capabilities) -> bool:
    """clientCapabilities.session.configOptions.boolean, where {} means supported."""
    node = capabilities
    for key in ("session", "configOptions"):
        node = node.get(key) if isinstance(node, dict) else None
    return isinstance(node, dict) and node.get("boolean") not in (None, False)


def main(launch_args=None) -> int:
    if env_flag(os.environ, "COMPOZY_REFERENCE_FAIL_START"):
        log("refusing to start (COMPOZY_REFERENCE_FAIL_START=1)")
        return 2
    settings = Settings.from_env(os.environ, sys.argv[1:] if launch_args is None else launch_args)
    endpoint = protocol.StdioEndpoint(sys.stdin.buffer, sys.stdout.buffer,
                                      on_issue=lambda issue: log(f"skipped input: {issue.kind}: {issue.excerpt}"))
    log(f"started; state in {settings.state_dir}")
    try:
        return ReferenceAgent(endpoint, settings).run()
    except (BrokenPipeError, ConnectionResetError):
        log("stdout closed; exiting")
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
