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
from dataclasses import dataclass, field
from pathlib import Path

from compozy.acp import protocol
from compozy.agents import login
from compozy.agents.directives import log
from compozy.agents.opening import RpcError, SessionMethods, invalid_params
from compozy.agents.sessions import Session, SessionStore
from compozy.agents.settings import Settings, env_flag
from compozy.agents.tools import Connection, connect
from compozy.agents.turn import Turn

DEFERRED = object()


def text_of(blocks) -> str:
    if not isinstance(blocks, list):
        raise invalid_params("prompt must be a list of content blocks")
    texts = (block.get("text") for block in blocks if isinstance(block, dict) and block.get("type") == "text")
    return "".join(text for text in texts if isinstance(text, str))


@dataclass
class PendingRequest:
    request_id: int
    done: threading.Event = field(default_factory=threading.Event)
    response: protocol.Response | None = None


class ReferenceAgent(SessionMethods):
    """Dispatches incoming messages on the main thread; each prompt runs on a worker thread."""

    def __init__(self, endpoint: protocol.StdioEndpoint, settings: Settings):
        self.endpoint, self.settings = endpoint, settings
        self.sessions: dict[str, Session] = {}
        self.pending: dict[object, PendingRequest] = {}
        self.lock = threading.RLock()
        self.store = SessionStore(settings.state_dir, self.lock)
        self.request_ids, self.tool_call_ids = itertools.count(0), itertools.count(1)
        self.boolean_options = self.terminal_auth = self.authenticated = self.questions = False
        self.children: list[subprocess.Popen] = []
        self.lingering: list[tuple[str, int]] = []  # (session id, late chunks to send at stdin EOF)
        self.journal: list[str] = []  # the methods this process was asked, for [methods]
        self.after_answer: list = []  # notifications that follow the answer being sent
        self.handlers = {"initialize": self.initialize, "authenticate": self.authenticate,
                         "session/new": self.new_session, "session/set_config_option": self.set_config_option,
                         "session/set_mode": self.set_mode, "session/prompt": self.start_prompt}
        for method, handler, on in (("session/load", self.load_session, settings.load_session),
                                    ("session/resume", self.resume_session, settings.resume),
                                    ("session/close", self.close_session, settings.close)):
            if on:
                self.handlers[method] = handler
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

    def gate(self, step: str, cwd: str | None = None) -> None:
        """A step COMPOZY_REFERENCE_GATES holds waits here until its gate file exists (tests hold a window open)."""
        name = (self.settings.gates or {}).get(step)
        if not name:
            return
        folder = cwd if isinstance(cwd, str) and os.path.isabs(cwd) else os.getcwd()
        gate = Path(folder, ".compozy-gates", name)
        log(f"{step} waits for {gate}")
        while not gate.exists():
            time.sleep(0.02)

    def on_eof(self) -> int:
        self.gate("exit")
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
        outcome = ""
        try:
            if handler is None:
                raise RpcError(protocol.METHOD_NOT_FOUND, "Method not found", {"method": request.method})
            result = handler(request)
        except RpcError as error:
            outcome = f"!{error.code}"
            self.send(protocol.make_error(request.id, error.code, error.message, error.data))
        except Exception as error:
            outcome = f"!{protocol.INTERNAL_ERROR}"
            log(traceback.format_exc())
            self.send(protocol.make_error(request.id, protocol.INTERNAL_ERROR, f"reference agent error: {error}"))
        else:
            if result is not DEFERRED:
                self.send(protocol.make_result(request.id, result))
        self.remember(request, outcome)
        while self.after_answer:
            self.after_answer.pop(0)()

    def remember(self, request: protocol.Request, outcome: str) -> None:
        """What [methods] reports: every method but prompts, authenticate with its method id, errors by code."""
        if request.method == "session/prompt":
            return
        name = request.method
        if name == "authenticate":
            name += f"({request.params.get('methodId')})"
        with self.lock:
            self.journal.append(name + outcome)

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

    def tools_for(self, session: Session) -> Connection:
        """The session's connection to the tool server its client offered, made on first use."""
        with session.tools_lock:
            if session.tools is None:
                session.tools = connect(session.mcp_servers, session.cwd)
            return session.tools

    def add_cost(self, session: Session, amount: float) -> float:
        """The session's cumulative cost after adding amount (usage_update reports it cumulative)."""
        with self.lock:
            session.cost = round(session.cost + amount, 6)
            self.store.save(session)
            return session.cost

    def session_model(self, session: Session) -> str:
        with self.lock:
            return session.config["model"]

    def thinking_enabled(self, session: Session) -> bool:
        with self.lock:
            return self.boolean_options and session.config.get("thinking") is True


def main(launch_args=None) -> int:
    if env_flag(os.environ, "COMPOZY_REFERENCE_FAIL_START"):
        log("refusing to start (COMPOZY_REFERENCE_FAIL_START=1)")
        return 2
    settings = Settings.from_env(os.environ, sys.argv[1:] if launch_args is None else launch_args)
    if login.wants_login(settings.launch_args, os.environ):
        return login.run_login(settings, settings.launch_args, os.environ)
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
