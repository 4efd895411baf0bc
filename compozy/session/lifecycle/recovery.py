"""Recovery: an agent lost mid-turn is replaced (1, 2, 4 s; its ACP session loaded, else bounded replay)
and the interrupted turn resumes under its own ID; an agent lost outside a turn is recorded.

Layer 4. Only exhausted recovery ends the turn with one terminal error and stops the session.
"""

import logging
from dataclasses import dataclass

from compozy.acp.client import BindFailure
from compozy.clock import iso_from_epoch
from compozy.session.lifecycle.crash import exit_failure, exit_summary
from compozy.session.records.replay import replay_prompt
from compozy.states import RuntimeStatus, RuntimeTransition, SessionState, StopReason

log = logging.getLogger("compozy.recovery")

DELAYS = (1.0, 2.0, 4.0)
WAIT_SLICE = 1.0


@dataclass(frozen=True)
class Resume:
    """A replacement agent took the turn over: send it this prompt."""

    text: str


@dataclass(frozen=True)
class GiveUp:
    """Every attempt failed: the turn ends with an error and the session stops."""

    attempts: int
    error: str
    lost: object  # the runtime that died


class Recovery:
    def __init__(self, services, binder):
        self.services, self.binder = services, binder

    def recover(self, session, turn):
        """For a turn already recovering: Resume, GiveUp, or None when it was cancelled or stopped meanwhile."""
        lost = session.runtime
        error = exit_summary(lost)
        self._forget(session, lost)
        state = turn.recovery_state(self._now_iso(), len(DELAYS))
        while state["attempt"] < len(DELAYS):
            state["attempt"] += 1
            if not self._wait_backoff(session, turn, state, error):
                return self._abandon(session)
            try:
                replay_reason = self.binder.bind(session, turn, RuntimeTransition.AUTOMATIC_RECOVERY)
            except BindFailure as failure:
                error = f"{failure.error.code}: {failure.error.message}"
                state["last_error"] = error[:500]
                continue
            return self._resume(session, turn, replay_reason)
        if turn.cancel_reason or session.stop_operation is not None:  # a person's cancel wins over exhaustion
            return self._abandon(session)
        return GiveUp(state["attempt"], error, lost)

    @staticmethod
    def _abandon(session):
        """Cancelled or stopped during recovery (even before its first backoff began, the lost process's
        `ready` still stored): no process serves the session and none is being bound, so the runtime is
        unbound (the next prompt binds afresh, loading the agent's session); None for the runner."""
        with session.lock:
            if session.runtime is None and session.record.runtime.status != RuntimeStatus.UNBOUND:
                session.update_runtime(status=RuntimeStatus.UNBOUND, transition="", recovery=None, process=None)
        return None

    def _forget(self, session, runtime):
        with session.lock:
            if session.runtime is runtime:
                session.detach_runtime()
        if runtime is not None:
            self.services.threads.start(f"kill-{session.id}", runtime.process.kill_tree, 0.5, 5.0)

    def _wait_backoff(self, session, turn, state, error):
        delay = DELAYS[state["attempt"] - 1]
        generation = int(session.record.runtime.generation or 0) + 1
        clock = self.services.clock
        state.update(generation=generation, last_attempt_at=self._now_iso(),
                     next_attempt_at=iso_from_epoch(clock.wall() + delay), last_error=error[:500])
        with session.lock:  # a stop that began owns the runtime status: no new attempt after it
            if session.stop_operation is not None or turn.cancel_reason:
                return False
            session.update_runtime(status=RuntimeStatus.RECOVERING, transition=RuntimeTransition.AUTOMATIC_RECOVERY,
                                   generation=generation, recovery=dict(state), process=None)
        session.append_event("runtime_recovery_started", {"attempt": state["attempt"],
                                                          "max_attempts": state["max_attempts"],
                                                          "delay_seconds": delay, "generation": generation,
                                                          "error": error[:500]}, turn.id)
        turn.await_recovery(clock.monotonic() + delay)  # the supervision sweeper fires it
        while not turn.recovery_ready:
            if session.stop_operation is not None or turn.cancel_reason:
                return False
            turn.nap(WAIT_SLICE)
        turn.recovery_waited()
        return True

    def _now_iso(self):
        return iso_from_epoch(self.services.clock.wall())

    def _resume(self, session, turn, replay_reason):
        text = turn.message
        if replay_reason:
            # The interrupted turn's own partial output stays in the log; the context is what came before.
            prior = [e for e in session.log.read_all() if e["turn_id"] != turn.id]
            text, _ = replay_prompt(prior, turn.message, self.services.config, session.id, "automatic_recovery",
                                    session.carried(), self.services.identities.endpoints is not None,
                                    secrets=session.read_secrets())
        session.append_event("runtime_recovery_succeeded", {"attempt": turn.recovery["attempt"],
                                                            "generation": turn.recovery["generation"],
                                                            "session_load": replay_reason is None}, turn.id)
        session.update_runtime(status=RuntimeStatus.READY, transition="", recovery=None)
        return Resume(text)

    def stop_exhausted(self, session, turn, give_up):
        """With session.lock held: record the exhaustion and stop the session, before the turn's terminal
        error is visible (whoever sees the turn end sees a stopped session). Returns the contents of
        that error and of the session_stopped event that follows it."""
        error = give_up.error
        session.append_event("runtime_recovery_exhausted", {"attempts": give_up.attempts, "error": error[:500]},
                             turn.id)
        failure = exit_failure(self.services.home, session, give_up.lost, error)
        runtime = session.runtime_with(status=RuntimeStatus.UNBOUND, transition="", recovery=None, process=None,
                                       effective=None)
        session.change_state(SessionState.STOPPING)
        session.change_state(SessionState.STOPPED, stop_reason=StopReason.AGENT_CRASHED.value,
                             stop_detail="automatic recovery exhausted", failure=failure, verified=True, runtime=runtime)
        return ({"error": f"agent recovery exhausted after {give_up.attempts} attempts: {error}"[:1000],
                 "failure": failure},
                {"stop_reason": StopReason.AGENT_CRASHED.value, "stop_detail": "automatic recovery exhausted",
                 "failure": failure})


def lost_outside_turn(services, session, runtime):
    """The agent died while idle (not released, not stopped): record a failure, keep the session."""
    with session.lock:
        if session.runtime is not runtime or session.turn is not None or session.stop_operation is not None \
                or runtime.released:
            return
        session.detach_runtime()  # with its status: a prompt binding from now on finds both unbound
        session.update_runtime(status=RuntimeStatus.UNBOUND, transition="", process=None)
    error = exit_summary(runtime)
    failure = exit_failure(services.home, session, runtime, error)
    session.append_event("runtime_warning", {"text": f"agent process exited outside a turn: {error}",
                                             "failure": failure})
    session.save(failure=failure)
    log.warning("session %s: agent exited outside a turn (%s)", session.id, error)
    services.threads.start(f"kill-{session.id}", runtime.process.kill_tree, 0.5, 5.0)
