"""Lifecycle requests: stop (with or without waiting), archive, unarchive, and the stop before removal.

Layer 4. Archive is catalog metadata beside the lifecycle state: only a stopped session is
archived, unless the request asks to stop it first through the normal ladder.
"""

from compozy.clock import now_iso
from compozy.errors import CompozyError
from compozy.session.records.governed import is_spawned_child_of, refuse_user_action
from compozy.states import SessionState, StopAnswer, StopCause

LEGACY_STOP_WARNING = ("POST .../stop without an explicit wait is deprecated and will be removed in v0.5.0; "
                       "send {\"wait\": true} or {\"wait\": false}")


def stop(stopper, session, body, caller_id=None):
    """(StopAnswer, document): accepted, the outcome, already stopped (no document), or legacy.
    caller_id: the session whose agent asks (the native stop tool); it may stop its own spawned children."""
    body = body or {}
    by_parent = caller_id is not None and is_spawned_child_of(session.record, caller_id)
    if not by_parent:
        refuse_user_action(session.record, "stopped")
    wait = body.get("wait")
    detail = f"stopped by its parent session {caller_id}" if by_parent else None
    outcome, accepted = stopper.request(session, StopCause.USER, wait=wait is not False, detail=detail)
    if not accepted:
        return (StopAnswer.STOPPED, None) if wait is False else (StopAnswer.OUTCOME, outcome)
    if wait is None:
        return StopAnswer.LEGACY, {"warning": LEGACY_STOP_WARNING}
    if wait:
        return StopAnswer.OUTCOME, outcome
    return StopAnswer.ACCEPTED, {"status": SessionState.STOPPING.value, "session_id": session.id}


def stop_for(stopper, session, cause, failure_code, detail=None):
    """Stop and wait; an unverified stop refuses whatever was meant to follow."""
    outcome, _ = stopper.request(session, cause, wait=True, detail=detail)
    if not outcome.get("verified"):
        raise CompozyError(failure_code, "the session could not be stopped with verified exit",
                           outcome=outcome)
    return outcome


def archive(stopper, session, stop_first, caller_id=None):
    """caller_id: the session whose agent asks (the native archive tool); the stop first follows the stop's
    rule: a daemon-managed session is stopped only by its parent's agent."""
    if session.record.archived:
        return session.record
    if session.state != SessionState.STOPPED:
        if not stop_first:
            raise CompozyError("session_not_stopped", "only a stopped session is archived; pass stop=true "
                               "(the native tool's stop: true) to stop it first", state=session.state)
        by_parent = caller_id is not None and is_spawned_child_of(session.record, caller_id)
        if not by_parent:
            refuse_user_action(session.record, "stopped")
        detail = f"stopped by its parent session {caller_id}" if by_parent else None
        stop_for(stopper, session, StopCause.ARCHIVE, "session_archive_stop_failed", detail)
    with session.lock:
        if session.state != SessionState.STOPPED:
            raise CompozyError("session_archive_stop_failed", "the session did not stay stopped")
        return session.save(archived=True, archived_at=now_iso())


def unarchive(session):
    with session.lock:
        if not session.record.archived:
            return session.record
        return session.save(archived=False, archived_at=None)
