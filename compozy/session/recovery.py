"""Recovery: an agent lost mid-turn is replaced (1, 2, 4 s; its ACP session loaded, else bounded replay)
and the interrupted turn resumes under its own ID; an agent lost outside a turn is recorded.

Layer 4. Only exhausted recovery ends the turn with one terminal error and stops the session.
"""

import logging
import threading

from compozy.acp.client import BindFailure
from compozy.clock import iso_from_epoch, monotonic, now_iso, wall
from compozy.session.crash import exit_summary, write_bundle
from compozy.session.replay import replay_prompt
from compozy.states import FailureKind, RuntimeStatus, RuntimeTransition, SessionState, StopReason

log = logging.getLogger("compozy.recovery")

DELAYS = (1.0, 2.0, 4.0)
WAIT_SLICE = 1.0


class Recovery:
    def __init__(self, services, binder):
        self.services, self.binder = services, binder

    def recover(self, session, turn, worker):
        """For a turn already recovering: True when a replacement agent took the turn over; False when
        the turn has ended."""
        lost = session.runtime
        error = exit_summary(lost)
        self._forget(session, lost)
        state = turn.recovery = turn.recovery or {"attempt": 0, "max_attempts": len(DELAYS),
                                                  "started_at": now_iso(), "generation": 0}
        while state["attempt"] < len(DELAYS):
            state["attempt"] += 1
            if not self._wait_backoff(session, turn, state, error):
                worker.finish(session, turn, "done", {"stop_reason": "cancelled"})
                return False
            try:
                replay_reason = self.binder.bind(session, turn, RuntimeTransition.AUTOMATIC_RECOVERY)
            except BindFailure as failure:
                error = f"{failure.error.code}: {failure.error.message}"
                state["last_error"] = error[:500]
                continue
            self._resume(session, turn, worker, replay_reason)
            return True
        self._exhausted(session, turn, worker, state, error, lost)
        return False

    def _forget(self, session, runtime):
        with session.lock:
            if session.runtime is runtime:
                session.runtime = None
        if runtime is not None:
            threading.Thread(target=runtime.process.kill_tree, args=(0.5, 5.0), daemon=True).start()

    def _wait_backoff(self, session, turn, state, error):
        delay = DELAYS[state["attempt"] - 1]
        generation = int(session.document["runtime"].get("generation") or 0) + 1
        state.update(generation=generation, last_attempt_at=now_iso(),
                     next_attempt_at=iso_from_epoch(wall() + delay), last_error=error[:500])
        with session.lock:  # a stop that began owns the runtime status: no new attempt after it
            if session.stop_operation is not None or turn.cancel_reason:
                return False
            session.update_runtime(status=RuntimeStatus.RECOVERING, transition=RuntimeTransition.AUTOMATIC_RECOVERY,
                                   generation=generation, recovery=dict(state), process=None)
        session.append_event("runtime_recovery_started", {"attempt": state["attempt"],
                                                          "max_attempts": state["max_attempts"],
                                                          "delay_seconds": delay, "generation": generation,
                                                          "error": error[:500]}, turn.id)
        turn.recovery_ready = False
        turn.recovery_due = monotonic() + delay  # the supervision sweeper fires it
        while not turn.recovery_ready:
            if session.stop_operation is not None or turn.cancel_reason:
                return False
            turn.wake.wait(WAIT_SLICE)
            turn.wake.clear()
        turn.recovery_due = None
        return True

    def _resume(self, session, turn, worker, replay_reason):
        runtime = session.runtime
        text = turn.message
        if replay_reason:
            # The interrupted turn's own partial output stays in the log; the context is what came before.
            prior = [e for e in session.log.read_all() if e["turn_id"] != turn.id]
            text, _ = replay_prompt(prior, turn.message, self.services.config, session.id, "automatic_recovery")
        session.append_event("runtime_recovery_succeeded", {"attempt": turn.recovery["attempt"],
                                                            "generation": turn.recovery["generation"],
                                                            "session_load": replay_reason is None}, turn.id)
        session.update_runtime(status=RuntimeStatus.READY, transition="", recovery=None)
        worker.send_prompt(session, turn, runtime, text)

    def _exhausted(self, session, turn, worker, state, error, lost):
        session.append_event("runtime_recovery_exhausted", {"attempts": state["attempt"], "error": error[:500]},
                             turn.id)
        bundle = write_bundle(self.services.home, session, lost, FailureKind.PROCESS_EXIT.value, error)
        failure = {"kind": FailureKind.PROCESS_EXIT.value, "summary": error[:500], "crash_bundle_path": bundle}
        with session.lock:
            runtime = session.runtime_with(status=RuntimeStatus.UNBOUND, transition="", recovery=None,
                                           process=None, effective=None)
            # The stopped state is durable before the terminal error is visible: whoever sees the
            # turn end sees a stopped session.
            session.change_state(SessionState.STOPPING)
            session.change_state(SessionState.STOPPED, stop_reason=StopReason.AGENT_CRASHED.value,
                                 stop_detail="automatic recovery exhausted", failure=failure, verified=True,
                                 runtime=runtime)
            worker.finish(session, turn, "error", {"error": f"agent recovery exhausted after {state['attempt']} "
                                                            f"attempts: {error}"[:1000], "failure": failure})
            session.append_event("session_stopped", {"stop_reason": StopReason.AGENT_CRASHED.value,
                                                     "stop_detail": "automatic recovery exhausted",
                                                     "failure": failure})


def lost_outside_turn(services, session, runtime):
    """The agent died while idle (not released, not stopped): record a failure, keep the session."""
    with session.lock:
        if session.runtime is not runtime or session.turn is not None or session.stop_operation is not None \
                or runtime.released:
            return
        session.runtime = None
    error = exit_summary(runtime)
    bundle = write_bundle(services.home, session, runtime, FailureKind.PROCESS_EXIT.value, error)
    failure = {"kind": FailureKind.PROCESS_EXIT.value, "summary": error, "crash_bundle_path": bundle}
    session.append_event("runtime_warning", {"text": f"agent process exited outside a turn: {error}",
                                             "failure": failure})
    session.update_runtime(status=RuntimeStatus.UNBOUND, transition="", process=None)
    session.save(failure=failure)
    log.warning("session %s: agent exited outside a turn (%s)", session.id, error)
    threading.Thread(target=runtime.process.kill_tree, args=(0.5, 5.0), daemon=True).start()
