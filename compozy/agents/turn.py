"""One session/prompt turn of the reference agent: runs its directives on a worker thread, then echoes."""

from __future__ import annotations

import math
import os
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from compozy.acp import protocol
from compozy.agents.directives import (
    TITLE_PASS_PREFIX, TurnCancelled, TurnFailed, log, parse_directives, split_context_replay,
    title_of,
)
from compozy.agents.reporting import ProtocolSteps
from compozy.agents.steps import DirectiveSteps
from compozy.agents.sessions import Session

if TYPE_CHECKING:
    from compozy.agents.reference import ReferenceAgent

POLL_SECONDS = 0.02
CANCEL_GRACE_SECONDS = 2.0


def text_update(kind: str, text: str, message_id: str) -> dict:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}, "messageId": message_id}


class Turn(DirectiveSteps, ProtocolSteps):
    """One session/prompt, run on its own thread so cancels and client answers are handled meanwhile."""

    def __init__(self, agent: ReferenceAgent, session: Session, request_id, prompt_text: str):
        self.agent, self.session, self.request_id, self.prompt_text = agent, session, request_id, prompt_text
        self.replay = split_context_replay(prompt_text)
        self.request_text = self.replay.request_text if self.replay else prompt_text
        self.directives, self.clean_text = parse_directives(self.request_text)
        names = [directive.name for directive in self.directives]
        # These change how the whole turn reacts to cancel, EOF, signals and steers, wherever they appear.
        self.ignore_cancel = "hang" in names
        self.slow_cancel = max([float(d.args[0]) for d in self.directives if d.name == "slow-cancel"], default=0.0)
        self.ignores_term = "ignore-term" in names
        self.refuses_steer = "refuse-steer" in names
        self.message_id = uuid.uuid4().hex
        self.reply_parts: list[str] = []
        self.open_tool_calls: list[str] = []
        self.earlier_user_messages: list[str] = []
        self.stop_reason, self.usage, self.recall = "end_turn", None, False
        self.cancel_requested, self.wake = threading.Event(), threading.Event()
        self.steering: list[str] = []
        self.steering_lock = threading.Lock()

    def request_cancel(self) -> None:
        self.cancel_requested.set()
        self.wake.set()

    def steer(self, text: str) -> None:
        with self.steering_lock:
            self.steering.append(text)
        self.wake.set()

    def run(self) -> None:
        try:
            message = protocol.make_result(self.request_id, self.execute())
        except TurnCancelled:
            message = protocol.make_result(self.request_id, self.finish_cancelled())
        except TurnFailed:
            message = protocol.make_error(self.request_id, protocol.INTERNAL_ERROR, "reference failure",
                                          {"details": "the prompt asked for [fail]"})
        except Exception as error:  # answer the prompt rather than leave the client waiting forever
            log(traceback.format_exc())
            message = protocol.make_error(self.request_id, protocol.INTERNAL_ERROR, f"reference agent error: {error}")
        self.agent.finish_turn(self, message)

    def execute(self) -> dict:
        if self.prompt_text.startswith(TITLE_PASS_PREFIX):
            return self.answer_title()
        if self.replay:
            self.agent.store.record_replayed(self.session, self.replay.messages)
        self.earlier_user_messages = self.agent.store.user_messages(self.session)
        self.agent.store.record(self.session, "user", self.request_text)
        if self.agent.thinking_enabled(self.session):
            self.update(text_update("agent_thought_chunk", "thinking about it", uuid.uuid4().hex))
        if self.replay:
            self.say(f"[context replayed: {len(self.replay.messages)} messages] ")
        for directive in self.directives:
            self.checkpoint()
            self.run_directive(directive)
        self.checkpoint()
        self.say(self.final_text())
        return {"stopReason": self.stop_reason, **({"usage": self.usage} if self.usage else {})}

    def answer_title(self) -> dict:
        """A daemon's title pass: a short title from the conversation's first user line (see title_of)."""
        gate = os.environ.get("COMPOZY_REFERENCE_TITLE_GATE")
        if gate:
            self.pause(math.inf, until=Path(self.session.cwd, ".compozy-gates", gate).exists)
        self.say(title_of(self.prompt_text))
        return {"stopReason": "end_turn"}

    def final_text(self) -> str:
        if self.recall:
            return "history: " + " | ".join(self.earlier_user_messages)
        if self.agent.session_model(self.session) == "echo-large":
            return f"echo: {self.clean_text.upper()}"
        return f"echo: {self.clean_text}"

    def finish_cancelled(self) -> dict:
        for call_id in self.open_tool_calls:
            self.update({"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"})
        time.sleep(self.slow_cancel)
        return {"stopReason": "cancelled"}

    def checkpoint(self) -> None:
        """A step boundary: deliver steering, then stop if cancelled."""
        with self.steering_lock:
            steered, self.steering = self.steering, []
        for text in steered:
            self.agent.store.record(self.session, "user", text)
            self.say(f"steered: {text}")
        if self.cancel_requested.is_set() and not self.ignore_cancel:
            raise TurnCancelled()

    def pause(self, seconds: float, until=None) -> None:
        deadline = time.monotonic() + seconds
        while True:
            self.checkpoint()
            remaining = deadline - time.monotonic()
            if (until is not None and until()) or remaining <= 0:
                return
            self.wake.wait(min(POLL_SECONDS, remaining))
            self.wake.clear()

    def update(self, update: dict) -> None:
        self.agent.send_update(self.session.session_id, update)

    def say(self, text: str) -> None:
        if self.reply_parts and self.agent.settings.chunk_delay:
            self.pause(self.agent.settings.chunk_delay)
        self.reply_parts.append(text)
        self.update(text_update("agent_message_chunk", text, self.message_id))

    def absolute(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.session.cwd, path))

    def ask_client(self, method: str, params: dict) -> protocol.Response | None:
        """Send a request to the client and wait; None when cancelled before an answer came."""
        pending = self.agent.send_request(method, {"sessionId": self.session.session_id, **params})
        try:
            while not pending.done.wait(POLL_SECONDS):
                if self.cancel_requested.is_set() and not self.ignore_cancel:
                    # After a cancel the client must still answer (permission: outcome cancelled).
                    pending.done.wait(CANCEL_GRACE_SECONDS)
                    break
            return pending.response
        finally:
            self.agent.forget_request(pending)

    def await_call(self, call):
        """call() on a thread of its own, the turn still cancellable while it runs; its result or error."""
        outcome: dict = {}

        def run() -> None:
            try:
                outcome["result"] = call()
            except Exception as error:  # noqa: BLE001 (handed to the turn, which decides)
                outcome["error"] = error
            done.set()
        done = threading.Event()
        threading.Thread(target=run, name="mcp-call", daemon=True).start()
        while not done.wait(POLL_SECONDS):
            if self.cancel_requested.is_set() and not self.ignore_cancel:
                raise TurnCancelled()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["result"]

    def start_tool_call(self, title: str, kind: str, status: str, **extra) -> str:
        call_id = self.agent.new_tool_call_id()
        self.update({"sessionUpdate": "tool_call", "toolCallId": call_id, "title": title, "kind": kind,
                     "status": status, **extra})
        return call_id
