"""What a live session is waiting on, and which of its relatives' work counts as its own.

Layer 4. A session waits on a permission (a held request a person decides), on a reply (a watch of
compozy__session_prompt with notify_on_complete) or on a child (a live child with a turn in flight).
Waiting is metadata: it shows in reads (activity.waiting) and earns the metadata-only heartbeats of
supervision, and it never proves work by itself. Work is what the work signals say: an active child
(a child whose turn shows activity) is one of them, and so is what other parts of the daemon hold
for a session (outside_work: a reply it awaits that can still come).
"""

from __future__ import annotations

from typing import Any

from compozy.clock import iso_from_epoch
from compozy.states import LIVE_STATES, TOP_LEVEL_KINDS, SessionState, WaitingOn

MAX_LINEAGE_DEPTH = 8  # how far down its lineage a session looks for an active descendant


def live_children(session: Any) -> list:
    """Live sessions whose parent this is (spawned, provenance, recovery); a continued or forked session
    names its source as provenance only and is nobody's child (it never keeps its source alive)."""
    registry = session.services.live_sessions
    sessions = registry() if registry else []
    return [s for s in sessions if (s.record.lineage or {}).get("parent_session_id") == session.id
            and (s.record.lineage or {}).get("kind") not in TOP_LEVEL_KINDS
            and s.state in LIVE_STATES]


def active_children(session, depth=MAX_LINEAGE_DEPTH):
    """The live children that show activity: a turn in flight that their own watchdog does not count
    silent, or an active child of their own. A stopping child is no work (its parent's `children`
    source is stale instead)."""
    quiet_after = session.services.config["session.supervision.quiet_after"]
    now = session.services.clock.monotonic()
    return [child for child in live_children(session) if child.state != SessionState.STOPPING
            and (_busy(child.turn, now, quiet_after) or (depth > 1 and active_children(child, depth - 1)))]


def _busy(turn, now, quiet_after):
    return turn is not None and not turn.finished and (not quiet_after or turn.silence(now) < quiet_after)


def outside_work(session: Any) -> list[dict]:
    """Work signals other parts of the daemon hold for a session (a reply it awaits): while any holds,
    supervision neither stops the session for silence nor releases its agent."""
    return [signal for source in session.services.work_signals for signal in source(session)]


def waiting_on(session: Any) -> dict | None:
    """{on, since, and the request or session waited on} of a live session that waits, or None: a held
    permission first (a person must act), then a reply, then a child (WaitingOn's order); the oldest of
    that kind."""
    if session.state not in (SessionState.STARTING, SessionState.ACTIVE):
        return None
    for waits in (_held_permissions, _awaited_replies, _children_in_a_turn):  # the next only when none hold
        found = waits(session)
        if found:
            return min(found, key=lambda wait: wait["since"])
    return None


def _held_permissions(session):
    return [{"on": WaitingOn.PERMISSION.value, "since": pending.held_since, "request_id": request_id}
            for request_id, pending in list(session.permissions.items())]


def _awaited_replies(session):
    return [wait for source in session.services.waits for wait in source(session)]


def _children_in_a_turn(session):
    return [{"on": WaitingOn.CHILD.value, "since": child.turn.began_at, "session_id": child.id}
            for child in live_children(session) if child.turn is not None and not child.turn.finished]


def _wall(clock, moment):
    """The wall time, as the API writes it, of a moment on the monotonic clock."""
    return iso_from_epoch(clock.wall() - (clock.monotonic() - moment))


def waiting_view(session, turn):
    """activity.starting while an agent starts for the session, activity.awaiting_output_since while a
    sent prompt has had no output from the agent yet, and activity.waiting while the session waits."""
    clock, view = session.services.clock, {}
    starting = session.starting
    if starting is not None:
        view["starting"] = {"agent": starting["agent"], "provider": starting["provider"], "since": starting["since"],
                            "elapsed_seconds": round(clock.monotonic() - starting["started"], 1)}
    if turn is not None and turn.prompting and turn.prompt_sent_at is not None and not turn.output_seen:
        view["awaiting_output_since"] = _wall(clock, turn.prompt_sent_at)
    waiting = waiting_on(session)
    if waiting is not None:
        view["waiting"] = waiting
    return view
