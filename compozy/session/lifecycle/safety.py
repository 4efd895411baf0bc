"""After a bug on a live path: a state table refused an edge, or a turn failed unexpectedly.

Layer 4. A refusal from Machine.check is a bug, but it must never leave a session unusable
(issue 20: a session stayed `recovering` for good). The bug is logged once with the session and
both states, stored as a failure (`internal_error`, the refused edge named), and the runtime is
stopped and unbound, keeping the agent's session ID, so the next prompt binds a new process and
loads it. The runner ends the turn; this module settles everything else.
"""

import logging

from compozy.states import FailureKind, IllegalTransition, RuntimeStatus

log = logging.getLogger("compozy.safety")


def failure_of(error):
    """The failure a bug is stored as: internal_error, and the refused edge when a table refused one."""
    failure = {"kind": FailureKind.UNKNOWN_FAILURE.value, "code": "internal_error",
               "summary": f"internal error: {error}"[:500] if isinstance(error, IllegalTransition)
               else f"internal error ({type(error).__name__}); see the daemon log"}
    if isinstance(error, IllegalTransition):
        failure["transition"] = error.edge
    return failure


def report(session, error, where):
    """Log the bug once, with the session and (for a refused edge) both states; its failure document."""
    log.error("session %s: %s while %s; the runtime is stopped and unbound for a rebind", session.id, error, where,
              exc_info=error)
    return failure_of(error)


def unbind(session, binder, failure):
    """Stop whatever process serves the session or is being bound for it, and leave the runtime unbound
    (the agent's session ID kept: the next prompt binds a new process and loads it). A stop in progress
    owns the runtime: it is left to the stop ladder."""
    with session.lock:
        if session.stop_operation is not None:
            return
        candidate = session.drop_candidate()
        runtime = session.runtime
    if candidate is not None:
        candidate.released = True  # its exit is expected, not a crash
        binder.stop_process(candidate)
    try:
        if runtime is not None:
            runtime.released = True
            binder.retire(session)
        with session.lock:
            if session.record.runtime.status != RuntimeStatus.UNBOUND:
                session.update_runtime(status=RuntimeStatus.UNBOUND, transition="", recovery=None)
            session.save(failure=failure)
    except Exception:  # noqa: BLE001 (settling must never raise over the bug it settles)
        log.exception("session %s: the runtime could not be settled after an internal error", session.id)
