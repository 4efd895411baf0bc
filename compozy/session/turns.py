"""Prompt turns: one at a time per session, on the session's worker thread.

Layer 4. A turn binds its runtime, records user_message only after the bind succeeded, sends
the prompt, and ends with exactly one done or error. Output arrives on the agent's reader
thread and is committed there (persist, then forward); this thread only waits and decides.
"""

import logging
import threading

from compozy.acp.client import AcpError, AgentClient, AgentExited, BindFailure
from compozy.clock import monotonic
from compozy.session.replay import replay_prompt
from compozy.states import TURN, MarkerKind, RuntimeStatus, SessionState, TurnPhase

log = logging.getLogger("compozy.turns")

WAIT_SLICE = 1.0


class Turn:
    """One prompt turn, from admission to its terminal event."""

    def __init__(self, turn_id, message, message_id, idempotency_key, snapshot, mode=None,
                 entry_id=None, admission_id=None, expected_turn_id=None):
        self.id, self.message, self.message_id = turn_id, message, message_id
        self.idempotency_key, self.snapshot, self.mode = idempotency_key, snapshot or {}, mode
        self.entry_id, self.admission_id, self.expected_turn_id = entry_id, admission_id, expected_turn_id
        self.phase = TurnPhase.BINDING
        self.bound = threading.Event()
        self.bind_error = None
        self.wake = threading.Event()
        self.ended = threading.Event()
        self.cancel_reason = None
        self.cancel_deadline = None
        self.escalate = False
        self.pending = None
        self.recovery = None
        self.injections = []
        self.pending_permissions = 0
        self.open_tools = set()
        self.finished = False
        self.started_at = self.last_progress = self.last_progress_event = monotonic()
        self.deadline_hit = False
        self.quiet_warning = None
        self.recovery_due = None
        self.recovery_ready = False

    def change_phase(self, new):
        """The one way a turn's phase changes: an edge of the turn table."""
        self.phase = TURN.check(self.phase, new)

    @property
    def accepts_output(self):
        return self.phase in (TurnPhase.PROMPTING, TurnPhase.CANCELLING, TurnPhase.RECOVERING)

    @property
    def prompting(self):
        return self.phase == TurnPhase.PROMPTING

    @property
    def waiting_on_agent(self):
        """Silence accrues only while the agent owes us work (not while we owe it an answer)."""
        return self.prompting and self.pending_permissions == 0

    def progress(self):
        self.last_progress = monotonic()

    def request_cancel(self, reason, grace):
        if self.cancel_reason is None:
            self.cancel_reason = reason
            self.cancel_deadline = monotonic() + grace
        self.wake.set()


class Worker:
    """Runs the current turn, then queued input, until there is nothing left to run."""

    def __init__(self, services, binder, requests, recovery, inputs):
        self.services, self.binder, self.requests = services, binder, requests
        self.recovery, self.inputs = recovery, inputs

    def start(self, session, turn):
        """Call with session.lock held: turn becomes current and a worker thread runs it."""
        session.turn = turn
        session.idle_since = None
        if session.worker is None:
            session.worker = threading.Thread(target=self._loop, args=(session,), name=f"turns-{session.id}",
                                              daemon=True)
            session.worker.start()

    def cancel(self, session, reason):
        """Cooperative cancel of the current turn: the agent is asked to cancel, pending requests answered."""
        turn = session.turn
        if turn is None:
            return None
        with session.lock:  # against a turn whose agent just died turning to recovery
            turn.request_cancel(reason, self.services.config["session.stop.cooperative_grace"])
            runtime = session.runtime
            if turn.prompting and runtime is not None and runtime.alive:
                turn.change_phase(TurnPhase.CANCELLING)
                runtime.cancel()
        self.requests.cancel_all(session, turn.id)
        return turn

    def _loop(self, session):
        turn = session.turn
        while turn is not None:
            try:
                self._run(session, turn)
            except Exception:  # noqa: BLE001 (a bug must still end the turn)
                log.exception("session %s: turn %s failed unexpectedly", session.id, turn.id)
                self._crash_safe_end(session, turn)
            finally:
                turn.change_phase(TurnPhase.DONE)
                turn.bound.set()
                turn.ended.set()
            with session.lock:
                self._advance(session, turn)
                turn = session.turn
                if turn is None:
                    session.worker = None
                    session.idle_since = monotonic()

    def _advance(self, session, turn):
        """With session.lock held: the turn is over, so the next queued entry (or nothing) is current."""
        if session.turn is turn:
            idle = session.stop_operation is not None or session.state != SessionState.ACTIVE
            session.turn = None if idle else self.inputs.next_turn(session)
            if session.turn is not None:
                session.idle_since = None

    def _crash_safe_end(self, session, turn):
        if turn.bind_error is None and not turn.bound.is_set():
            from compozy.errors import CompozyError
            turn.bind_error = CompozyError("internal_error", "the turn failed before it started")
            self.inputs.refused(session, turn, turn.bind_error)
        elif turn.bound.is_set() and turn.bind_error is None:
            self.finish(session, turn, "error", {"error": "internal error; see the daemon log"})

    def _run(self, session, turn):
        try:
            replay_reason = self.binder.bind(session, turn)
        except BindFailure as failure:
            turn.bind_error = failure.error
            self.inputs.refused(session, turn, failure.error)
            return
        runtime = session.runtime
        session.append_event("user_message", {"text": turn.message, "message_id": turn.message_id,
                                              "prompt_runtime": turn.snapshot, "effective_runtime": runtime.effective},
                             turn.id)
        self.inputs.started(session, turn)
        turn.bound.set()
        if turn.cancel_reason or session.stop_operation:
            self.finish(session, turn, "done", {"stop_reason": "cancelled"})
            return
        text = turn.message
        if replay_reason:
            prior = [e for e in session.log.read_all() if e["turn_id"] != turn.id]
            text, _ = replay_prompt(prior, turn.message, self.services.config, session.id, replay_reason)
        self.send_prompt(session, turn, runtime, text)
        self._await_answer(session, turn)

    def send_prompt(self, session, turn, runtime, text):
        turn.change_phase(TurnPhase.PROMPTING)
        turn.progress()
        turn.pending = runtime.prompt(text, turn.wake)
        if turn.cancel_reason:  # a cancel that arrived while the prompt was being sent
            turn.change_phase(TurnPhase.CANCELLING)
            runtime.cancel()

    def _await_answer(self, session, turn):
        while True:
            turn.wake.clear()
            pending = turn.pending
            if pending.done:
                if not isinstance(pending.error, AgentExited):
                    return self._answered(session, turn, pending)
                if not self._agent_lost(session, turn):
                    return None
                continue
            if turn.escalate:
                return self._force_cancel(session, turn)
            self._deliver_injections(session, turn)
            turn.wake.wait(WAIT_SLICE)

    def _answered(self, session, turn, pending):
        if isinstance(pending.error, AcpError):
            return self.finish(session, turn, "error", {"error": pending.error.message, "code": pending.error.code})
        answer = AgentClient.answer(pending.result)
        content = {"stop_reason": answer.stop_reason}
        if answer.usage is not None:
            content["usage"] = answer.usage
            session.log.record_usage(turn.id, answer.usage)
        return self.finish(session, turn, "done", content)

    def _agent_lost(self, session, turn):
        """The agent died mid-turn: True when recovery re-sent the prompt, False when the turn ended."""
        with session.lock:  # a cancel arriving from now on finds the turn recovering, and recovery sees it
            cancelled = bool(session.stop_operation or turn.cancel_reason)
            if not cancelled:
                turn.change_phase(TurnPhase.RECOVERING)
        if cancelled:
            self._drop_runtime(session)
            self.finish(session, turn, "done", {"stop_reason": "cancelled"})
            return False
        return self.recovery.recover(session, turn, self)

    def _force_cancel(self, session, turn):
        """The agent ignored the cancel for the whole grace: end the turn through the ladder."""
        report = self.binder.retire(session)
        session.marker(MarkerKind.PROMPT_CANCEL, "the agent ignored the cancel; its process was stopped",
                       turn.id, escalated=bool(report and report.escalated),
                       verified=bool(report and report.verified))
        if report is not None and report.escalated:
            session.save(escalated=True)
        self.finish(session, turn, "done", {"stop_reason": "cancelled", "forced": True})

    def _drop_runtime(self, session):
        with session.lock:
            runtime = session.runtime
            if runtime is not None and not runtime.alive:
                session.runtime = None
                session.update_runtime(status=RuntimeStatus.UNBOUND, transition="", process=None)

    def _deliver_injections(self, session, turn):
        """Steers wait as durable queue entries; one the turn never takes runs next as its own turn."""
        runtime = session.runtime
        while turn.injections and runtime is not None and runtime.alive and turn.prompting:
            steer = turn.injections.pop(0)
            with session.lock:
                if not self.inputs.claim_steer(session, turn, steer):
                    continue
            try:
                runtime.steer(steer["message"])
            except (AcpError, AgentExited, TimeoutError) as exc:
                log.warning("session %s: steering into turn %s failed: %s", session.id, turn.id, exc)
                self.inputs.steer_failed(session, turn, steer, str(exc))

    def finish(self, session, turn, kind, content):
        """The turn's one terminal event; pending requests of the turn are answered cancelled.

        The event and the hand-over to the next turn happen under the session lock, so a prompt
        sent by someone who just saw `done` finds the session idle, never a finished turn.
        """
        if turn.finished:
            return
        turn.finished = True
        turn.change_phase(TurnPhase.DONE)
        self.requests.cancel_all(session, turn.id)
        with session.lock:
            session.append_event(kind, content, turn.id)
            self._advance(session, turn)
        session.touch(kind)
        self.inputs.ended(session, turn, kind, content)
