"""The verified stop ladder: active -> stopping -> stopped only when no agent process survives.

Layer 4. Cooperative first (the agent asked to cancel, its ACP session closed when it offers that, then
stdin closed) for session.stop.cooperative_grace,
then SIGTERM+SIGCONT to the group (5 s), then SIGKILL (5 s), all on monotonic deadlines. Exit is
proven by PID plus start time; when it cannot be, the session stays stopping with attention.
"""

import logging
import threading
from dataclasses import dataclass, field

from compozy.acp.client import close_session
from compozy.clock import iso_from_epoch
from compozy.session.lifecycle.recorded import prove_exit
from compozy.states import (STOP_REASON_BY_CAUSE, Attention, RuntimeStatus, SessionState, StopCause)

log = logging.getLogger("compozy.stop")

TERM_GRACE = 5.0
CLOSE_GRACE = 5.0  # at most this much of the cooperative grace waits for the ACP session to close
KILL_GRACE = 5.0
WORKER_SETTLE = 5.0
STOP_DETAILS = {StopCause.INACTIVITY: "inactivity", StopCause.SHUTDOWN: "daemon shutdown",
                StopCause.PROMPT_DEADLINE: "prompt deadline", StopCause.REMOVAL: "removed",
                StopCause.ARCHIVE: "stopped to archive", StopCause.USER: "stop requested",
                StopCause.TTL_EXPIRED: "spawn ttl expired", StopCause.PARENT_STOPPED: "parent session stopped"}


@dataclass
class StopOperation:
    cause: StopCause
    started: float  # on the services' monotonic clock
    detail: str | None = None
    done: threading.Event = field(default_factory=threading.Event)
    outcome: dict | None = None
    binds_refused: bool = False  # set once the ladder took the runtime it stops: a later bind is refused


class Stopper:
    def __init__(self, services, engine):
        self.services, self.engine = services, engine
        self.clock, self.processes = services.clock, services.processes

    def request(self, session, cause, wait, detail=None):
        """(outcome, accepted_now): an already stopped session answers without a new operation."""
        with session.lock:
            record = session.record
            if record.state == SessionState.STOPPED:
                return self.already_stopped(record), False
            operation = session.stop_operation
            if operation is None:
                operation = session.stop_operation = StopOperation(StopCause(cause), self.clock.monotonic(), detail)
                if record.state != SessionState.STOPPING:
                    session.change_state(SessionState.STOPPING)  # active|starting -> stopping
                threading.Thread(target=self._run, args=(session, operation), name=f"stop-{session.id}",
                                 daemon=True).start()
        if wait:
            operation.done.wait()
            return operation.outcome, True
        return None, True

    @staticmethod
    def already_stopped(record):
        return {"state": SessionState.STOPPED.value, "verified": record.verified is not False,
                "escalated": bool(record.escalated), "stop_cause": None, "phase": "already_stopped",
                "stopped_after": 0.0}

    def _run(self, session, operation):
        try:
            outcome = self._ladder(session, operation)
        except Exception:  # noqa: BLE001 (an unverified outcome is the honest answer)
            log.exception("session %s: stop failed unexpectedly", session.id)
            outcome = self._unverified(session, operation, "internal error", escalated=False)
        operation.outcome = outcome
        with session.lock:
            session.stop_operation = None
        operation.done.set()

    def _ladder(self, session, operation):
        deadline = operation.started + self.services.config["session.stop.cooperative_grace"]
        turn = session.turn
        if turn is not None and not turn.bound.is_set():
            turn.bound.wait(max(0.0, deadline - self.clock.monotonic()))  # let in-flight prompt setup finish first
        with session.lock:
            operation.binds_refused = True
            runtime, candidate = session.runtime, session.candidate
        if session.turn is not None:
            self.engine.cancel(session, "stopped")
        binding = self._stop_candidate(candidate)
        if runtime is not None and runtime.process.spawn is not None:
            report = self._stop_process(session, runtime, deadline)
            unproven = None if report.verified else _survivors(report)
        else:  # a process recorded by an earlier attempt or daemon: prove it gone by identity
            report, unproven = prove_exit(session.record.runtime.process, self.processes, TERM_GRACE, KILL_GRACE)
        self._settle_worker(session)
        if binding is not None and not binding.verified:
            return self._unverified(session, operation, _survivors(binding), escalated=binding.escalated)
        if unproven is not None:
            return self._unverified(session, operation, unproven, escalated=report.escalated)
        return self._stopped(session, operation, escalated=report.escalated, phase=_phase(report))

    def _stop_process(self, session, runtime, deadline):
        turn = session.turn
        if turn is not None:
            turn.ended.wait(max(0.0, deadline - self.clock.monotonic()))
        close_session(runtime, min(CLOSE_GRACE, deadline - self.clock.monotonic()))
        runtime.process.close_stdin()
        exited = runtime.process.wait_exit(max(0.0, deadline - self.clock.monotonic()))
        # Even after a cooperative exit, stragglers of its group or descendants must be proven gone.
        return runtime.process.kill_tree(0.5 if exited else TERM_GRACE, KILL_GRACE)

    @staticmethod
    def _stop_candidate(candidate):
        """A process still being bound (a slow handshake, or loading its session) has no turn to cancel: it is stopped
        at once, so its bind fails now and no agent of the session outlives a verified stop."""
        if candidate is None or candidate.process.spawn is None:
            return None
        candidate.released = True
        candidate.process.close_stdin()
        return candidate.process.kill_tree(0.5, KILL_GRACE)

    def _settle_worker(self, session):
        turn = session.turn
        if turn is not None:
            turn.wake.set()
            turn.ended.wait(WORKER_SETTLE)

    def _stopped(self, session, operation, escalated, phase):
        cause = operation.cause
        reason = STOP_REASON_BY_CAUSE[cause]
        detail = operation.detail or STOP_DETAILS.get(cause)
        with session.lock:
            session.runtime = None
            runtime = session.runtime_with(status=RuntimeStatus.UNBOUND, transition="", process=None,
                                           recovery=None, effective=None)
            if cause == StopCause.INACTIVITY:
                session.append_event("session.supervision_stopped", {"cause": cause.value, "verified": True})
            session.append_event("session_stopped", {"stop_reason": reason.value, "stop_detail": detail,
                                                     "stop_cause": cause.value, "escalated": escalated,
                                                     "failure": session.record.failure})
            session.change_state(SessionState.STOPPED, stop_reason=reason.value, stop_detail=detail,
                                 verified=True, escalated=escalated, attention=None, runtime=runtime,
                                 stopped_at=iso_from_epoch(self.clock.wall()))
        log.info("session %s stopped (%s, %s, escalated=%s)", session.id, reason.value, detail, escalated)
        return {"state": SessionState.STOPPED.value, "verified": True, "escalated": escalated,
                "stop_cause": cause.value, "phase": phase,
                "stopped_after": round(self.clock.monotonic() - operation.started, 3)}

    def _unverified(self, session, operation, survivors, escalated):
        log.error("session %s: stop could not prove exit (%s)", session.id, survivors)
        escalated = bool(escalated or session.record.escalated)  # durable: once a signal was needed, it was
        session.save(attention=Attention.STOP_VERIFICATION_FAILED.value, verified=False, escalated=escalated)
        session.append_event("runtime_warning", {"text": f"stop could not verify process exit: {survivors}",
                                                 "attention": Attention.STOP_VERIFICATION_FAILED.value})
        return {"state": SessionState.STOPPING.value, "verified": False, "escalated": escalated,
                "stop_cause": operation.cause.value, "phase": "unverified",
                "attention": Attention.STOP_VERIFICATION_FAILED.value,
                "stopped_after": round(self.clock.monotonic() - operation.started, 3)}


def _phase(report):
    if report is None or report.phase == "already_exited":
        return "cooperative"
    return {"term": "force", "kill": "kill"}.get(report.phase, report.phase)


def _survivors(report):
    return ", ".join(f"pid {s.pid}" for s in report.survivors) or "exit not proven"
