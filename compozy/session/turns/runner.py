"""The runner: a session's turns, one at a time, on the session's worker thread.

Layer 4. A turn binds its runtime, records user_message only after the bind succeeded, sends
the prompt, and ends with exactly one done or error. Output arrives on the agent's reader
thread and is committed there (persist, then forward); this thread only waits and decides.
When the agent dies mid-turn, recovery rebinds and the runner re-sends the prompt; when recovery
gives up, the runner ends the turn and the session stops.
"""

import json
import logging

from compozy.acp.client import AcpError, AgentClient, AgentExited, BindFailure
from compozy.acp.evidence import agent_error, reason_of
from compozy.clock import iso_from_epoch
from compozy.errors import CompozyError
from compozy.redact import redact
from compozy.session.lifecycle.crash import refusal_failure
from compozy.session.lifecycle import safety
from compozy.session.lifecycle.recovery import Resume
from compozy.session.records.replay import replay_prompt
from compozy.session.turns.ledger import ledger_row
from compozy.session.turns.usage import cost_before, turn_usage
from compozy.states import FailureKind, MarkerKind, RuntimeStatus, SessionState, TurnPhase

log = logging.getLogger("compozy.runner")

WAIT_SLICE = 1.0
# Events an idle session keeps in memory for viewers (a turn may fill the whole ring): without
# this, RSS grew with every turn until each live session's ring was full (bench_memory.py).
IDLE_FEED_ITEMS = 64
# A session's worker waits this long for the next turn before its thread ends (a new thread per
# turn cost ~0.3 ms of every warm prompt's admission).
PARKED_WORKER_SECONDS = 30.0


class Runner:
    """Runs the current turn, then queued input, until there is nothing left to run."""

    def __init__(self, services, binder, requests, queue, recovery, budgets):
        self.services, self.binder, self.requests = services, binder, requests
        self.queue, self.recovery, self.budgets = queue, recovery, budgets

    def start(self, session, turn):
        """Call with session.lock held: turn becomes current and a worker thread runs it."""
        session.begin_turn(turn)
        if session.worker is None:
            session.run_by(self.services.threads.start(f"turns-{session.id}", self._loop, session))
        else:
            session.wake_worker()  # the worker is parked, or about to park: it takes this turn

    def cancel(self, session, reason):
        """Cooperative cancel of the current turn: the agent is asked to cancel, pending requests answered."""
        turn = session.turn
        if turn is None:
            return None
        with session.lock:  # against a turn whose agent just died turning to recovery
            turn.request_cancel(reason, self.services.config["session.stop.cooperative_grace"])
            runtime = session.runtime
            if runtime is not None and runtime.alive and turn.begin_cancelling():
                runtime.cancel()
        self.requests.cancel_all(session, turn.id)
        return turn

    def _loop(self, session):
        while self._run_turns(session):
            pass

    def _parked(self, session):
        """Wait for a next turn on this thread; False (and no worker) when none came in time."""
        session.worker_wake.wait(PARKED_WORKER_SECONDS)
        with session.lock:
            session.worker_woke()
            if session.turn is not None:
                return True
            session.run_by(None)
            return False

    def _run_turns(self, session):
        """The current turn and whatever follows it; then park. True when a new turn came meanwhile."""
        turn = session.turn
        while turn is not None:
            try:
                self._run(session, turn)
            except Exception as error:  # noqa: BLE001 (a bug must still end the turn, and never wedge the session)
                self._crash_safe_end(session, turn, error)
            finally:
                turn.change_phase(TurnPhase.DONE)
                turn.end()
            with session.lock:
                self._advance(session, turn)
                turn = session.turn
                if turn is None:
                    session.went_idle(self.services.clock.monotonic())
                    session.feed.trim(IDLE_FEED_ITEMS)
        return self._parked(session)

    def _advance(self, session, turn):
        """With session.lock held: the turn is over, so the next queued entry (or nothing) is current."""
        if session.turn is turn:
            idle = session.stop_operation is not None or session.state != SessionState.ACTIVE
            session.advance_to(None if idle else self.queue.next_turn(session))

    def _crash_safe_end(self, session, turn, error):
        """A bug broke the turn: logged once and stored, the runtime stopped and unbound for a rebind, and
        the turn ends with an error (or, before its user_message, is refused) so the next prompt works."""
        failure = safety.report(session, error, f"running turn {turn.id}")
        safety.unbind(session, self.binder, failure)
        if turn.bind_error is not None or turn.finished:
            return
        if turn.opened:
            self._finish(session, turn, "error", {"error": failure["summary"], "code": "internal_error",
                                                  "failure": failure})
            return
        session.append_event("runtime_warning", {"text": f"a turn could not start: {failure['summary']}",
                                                 "failure": failure}, turn.id)
        turn.refused(CompozyError("internal_error", f"the turn failed before it started: {failure['summary']}",
                                  **({"transition": failure["transition"]} if "transition" in failure else {})))
        self._refused(session, turn, turn.bind_error)

    def _run(self, session, turn):
        try:
            replay_reason = self.binder.bind(session, turn)
        except BindFailure as failure:
            turn.refused(failure.error)
            self._refused(session, turn, failure.error, failure.failure_kind, failure)
            with session.lock:  # no longer current before the refusal is answered: a retry is not busy input
                self._advance(session, turn)
            return
        runtime = session.runtime
        overridden = {"budget_override": json.loads(turn.budget_override)} if turn.budget_override else {}
        session.append_event("user_message", {"text": turn.message, "message_id": turn.message_id,
                                              "prompt_runtime": turn.snapshot, "effective_runtime": runtime.effective,
                                              **overridden}, turn.id)
        turn.opened_in_log()
        self._started(session, turn)
        turn.mark_bound()
        if turn.cancel_reason or session.stop_operation:
            self._finish(session, turn, "done", {"stop_reason": "cancelled"})
            return
        if self.services.checkpoints is not None:
            turn.mark_checkpointed()
            self.services.checkpoints.turn_started(session, turn)  # the files as they were before the agent acts
        text = turn.message
        if replay_reason:
            prior = [e for e in session.log.read_all() if e["turn_id"] != turn.id]
            text, _ = replay_prompt(prior, turn.message, self.services.config, session.id, replay_reason,
                                    session.carried(), self.services.identities.endpoints is not None,
                                    secrets=session.read_secrets())
        self._send_prompt(session, turn, runtime, text)
        self._await_answer(session, turn)

    def _started(self, session, turn):
        self.queue.started(session, turn)
        session.forget_inflight(turn.idempotency_key)  # after the result is durable: a retry replays it
        if session.state == SessionState.STARTING:
            session.change_state(SessionState.ACTIVE, stop_reason=None, stop_detail=None, verified=None)

    def _refused(self, session, turn, error, failure_kind=FailureKind.STARTUP_FAILURE, refusal=None):
        """A restart that did not bind stops the session again with the failure kind the evidence shows; a bind
        refused with an agent's evidence (its error's data, its stderr) keeps it as the session's failure."""
        session.forget_inflight(turn.idempotency_key)
        self.queue.refused(session, turn, error)
        failure = refusal_failure(self.services.home, session, refusal) if refusal is not None else None
        if session.state == SessionState.STARTING:
            session.change_state(SessionState.STOPPED, stop_reason="error",
                                 stop_detail=f"start did not complete: {error.code}",
                                 failure=failure or {"kind": str(failure_kind), "summary": error.message[:500]})
        elif failure is not None:
            session.save(failure=failure)

    def _send_prompt(self, session, turn, runtime, text):
        turn.change_phase(TurnPhase.PROMPTING)
        turn.progress()
        turn.prompt_sent(cost_before(session.cost_seen, runtime.acp_session_id, runtime.opened == "new"))
        turn.awaiting(runtime.prompt(text, turn.wake))
        if turn.cancel_reason:  # a cancel that arrived while the prompt was being sent
            turn.change_phase(TurnPhase.CANCELLING)
            runtime.cancel()

    def _await_answer(self, session, turn):
        while True:
            turn.clear_wake()
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
            env = session.runtime.process.env if session.runtime is not None else None
            reason = reason_of(pending.error.data)
            text = pending.error.message + (f": {reason}" if reason else "")
            return self._finish(session, turn, "error", {"error": redact(text, env), "code": pending.error.code,
                                                         "agent_error": agent_error(pending.error, env)})
        answer = AgentClient.answer(pending.result)
        content = {"stop_reason": answer.stop_reason}
        if answer.usage is not None:
            content["usage"] = answer.usage
        return self._finish(session, turn, "done", content, answer.usage)

    def _agent_lost(self, session, turn):
        """The agent died mid-turn: True when recovery re-sent the prompt, False when the turn ended."""
        with session.lock:  # a cancel arriving from now on finds the turn recovering, and recovery sees it
            cancelled = bool(session.stop_operation or turn.cancel_reason)
            if not cancelled:
                turn.change_phase(TurnPhase.RECOVERING)
        if cancelled:
            self._drop_runtime(session)
            self._finish(session, turn, "done", {"stop_reason": "cancelled"})
            return False
        outcome = self.recovery.recover(session, turn)
        if isinstance(outcome, Resume):
            self._send_prompt(session, turn, session.runtime, outcome.text)
            return True
        if outcome is None:  # cancelled or stopped during the backoff
            self._finish(session, turn, "done", {"stop_reason": "cancelled"})
            return False
        with session.lock:  # whoever sees the turn end sees a stopped session
            error, stopped = self.recovery.stop_exhausted(session, turn, outcome)
            self._finish(session, turn, "error", error)
            session.append_event("session_stopped", stopped)
        return False

    def _force_cancel(self, session, turn):
        """The agent ignored the cancel for the whole grace: end the turn through the ladder."""
        report = self.binder.retire(session)
        session.marker(MarkerKind.PROMPT_CANCEL, "the agent ignored the cancel; its process was stopped",
                       turn.id, escalated=bool(report and report.escalated),
                       verified=bool(report and report.verified))
        if report is not None and report.escalated:
            session.save(escalated=True)
        self._finish(session, turn, "done", {"stop_reason": "cancelled", "forced": True})

    def _drop_runtime(self, session):
        with session.lock:
            runtime = session.runtime
            if runtime is not None and not runtime.alive:
                session.detach_runtime()
                session.update_runtime(status=RuntimeStatus.UNBOUND, transition="", process=None)

    def _deliver_injections(self, session, turn):
        """Steers wait as durable queue entries; one the turn never takes runs next as its own turn."""
        runtime = session.runtime
        while turn.injections and runtime is not None and runtime.alive and turn.prompting:
            steer = turn.next_injection()
            with session.lock:
                if not self.queue.claim_steer(session, turn, steer):
                    continue
            try:
                runtime.steer(steer["message"])
            except (AcpError, AgentExited, TimeoutError) as exc:
                log.warning("session %s: steering into turn %s failed: %r", session.id, turn.id, exc)
                self.queue.steer_failed(session, turn, steer, str(exc))

    def _account(self, session, turn, kind, usage):
        """The turn's row in the usage ledger; then the budgets it counts against are checked."""
        duration_ms = round((self.services.clock.monotonic() - turn.started_at) * 1000)
        row = ledger_row(session.record, turn, kind, usage, iso_from_epoch(self.services.clock.wall()), duration_ms)
        self.services.catalog.ledger.record(row)
        self.budgets.turn_ended(session.record)

    def _finish(self, session, turn, kind, content, answered_usage=None):
        """The turn's one terminal event; pending requests of the turn are answered cancelled. The usage the
        agent reported for the turn is kept with it.

        The event and the hand-over to the next turn happen under the session lock, so a prompt
        sent by someone who just saw `done` finds the session idle, never a finished turn.
        """
        if not turn.mark_finished():
            return
        with session.lock:  # a cancel checks the phase and moves it under this lock too
            turn.change_phase(TurnPhase.DONE)
        self.requests.cancel_all(session, turn.id)
        usage = turn_usage(answered_usage, turn.last_usage, turn.cost_before)
        if usage is not None:
            session.log.record_usage(turn.id, usage)
        if turn.opened or usage is not None:
            self._account(session, turn, kind, usage)
        # The end checkpoint is taken before the terminal event and committed with it: whoever sees `done` can diff.
        ended = self.services.checkpoints.turn_ended(session, turn) if turn.checkpointed else None
        agent = session.record.agent_name
        with session.lock:
            session.append(([("checkpoint", turn.id, ended, agent)] if ended is not None else [])
                           + [(kind, turn.id, content, agent)])
            self._advance(session, turn)
        session.touch(kind)
        session.save(activity=dict(session.activity))
