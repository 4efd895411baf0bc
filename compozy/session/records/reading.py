"""The façade's reads of durable history: events, folded history, live streams and turn answers.

Layer 4. Mixed into SessionManager, which supplies _record, _session, store and services.
"""

from compozy.errors import CompozyError
from compozy.session.records import reads
from compozy.session.records.live import read_secrets


class SessionReads:
    """Reads of a session's event store and feeds (mixed into SessionManager)."""

    def events(self, session_id, workspace, query=None):
        """Event records in ascending sequence with the interface's filters."""
        return reads.read_events(self.store.events(self._record(session_id, workspace)), query)

    def history(self, session_id, workspace, query=None):
        """One message per user prompt and per assistant answer."""
        record = self._record(session_id, workspace)
        secrets = read_secrets(self.services, self.live.get(record.id))
        return reads.read_history(self.store.events(record), query, secrets, record)

    def stream(self, session_id, workspace, after_sequence=None):
        """Follow the session's committed events from after_sequence (None = from now), a batch at a time."""
        session = self._session(session_id, workspace)
        after = session.log.last_sequence() if after_sequence is None else after_sequence
        return watched(session, self.services, reads.follow_batches(session.log, session.feed, after))

    def catalog_stream(self, after_sequence=None):
        return reads.follow_catalog(self.services.catalog_feed, after_sequence)

    def turn_answer(self, session_id, workspace, turn_id, wanted=None):
        """Wait for a turn to end: its answer's text and how it ended. An agent lost for good during the
        turn (recovery exhausted) is tool_backend_failed, for the native tool that waited on it.
        wanted: checked about once a second; once false (the waiting caller's binding ended), the wait
        ends with agent_identity_invalid."""
        session = self._session(session_id, workspace)
        answer, exhausted = reads.turn_answer(session.log, session.feed, turn_id, session.read_secrets(), wanted)
        if answer is None:
            raise CompozyError("agent_identity_invalid", "the calling agent's binding ended while it waited for "
                               f"turn {turn_id}", session_id=session_id, turn_id=turn_id)
        if exhausted:
            raise CompozyError("tool_backend_failed", f"session {session_id} lost its agent during turn {turn_id} "
                               "and recovery was exhausted", session_id=session_id, turn_id=turn_id,
                               error=answer.get("error"))
        return answer


def watched(session, services, batches):
    """The batches of a viewer of the session, counted while it follows; a viewer arriving has seen the turns
    that ended unwatched (their inbox items resolve)."""
    with session.lock:
        session.viewed(+1)
    try:
        if services.inbox is not None:
            services.inbox.seen(session.record)
        yield from batches
    finally:
        with session.lock:
            session.viewed(-1)
