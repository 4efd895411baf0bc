"""Clear: an idle user session's whole conversation is put aside and the next prompt starts fresh.

Layer 4 (session.derive). The seed names it beside rewind and continue ("Clearing the new session's
conversation discards the carried context"). It is a rewind of everything: every active event is
archived (never deleted), a continued or forked session's carried context is discarded (it stays
stored, never again prepended), the fences move, the ACP context is dropped so the next prompt starts
a fresh one with nothing replayed, and the session keeps its ID. Receipts, retries, fences and
refusals are rewind's (derive/rewind.py): busy, queued input, pending approval, stopping, archived,
daemon-managed, stale fences.
"""

import logging

from compozy.ids import validate_client_token
from compozy.session.derive.rewind import derivable
from compozy.session.records.transcript import check_fences, expected_fences, fences_of
from compozy.session.turns.messages import fingerprint

log = logging.getLogger("compozy.clear")

SIDE_EFFECTS = ("Clearing changes the conversation only: file changes, tool effects, network actions and "
                "external provider actions are not undone.")


class Clearer:
    def __init__(self, rewinder):
        self.rewinder = rewinder

    def clear(self, session, body):
        """The clear result; a retry with the same key answers the first one with replayed: true."""
        key = validate_client_token(body["idempotency_key"], "idempotency_key")
        expected = expected_fences(body, required=True)
        print_ = fingerprint("clear")
        with session.lock:
            replay = self.rewinder.replayed(session, key, print_)
            if replay is not None:
                return replay
            derivable(session.record, "cleared, rewound, continued or forked")
            self.rewinder.check_idle(session, "clear")
            check_fences(expected, fences_of(session.record, session.log.max_active_sequence()))
            result = self._result(session, key)
            self.rewinder.commit(session, key, print_, result)
        log.info("session %s cleared: %d events archived, carried context %s", session.id,
                 result["archived_event_count"], "discarded" if result["carried_context_discarded"] else "none")
        return {**result, "replayed": False}

    @staticmethod
    def _result(session, key):
        events, fences = session.log, session.record.fences or {}
        last = events.max_active_sequence()
        return {"archived_from_sequence": 1, "archived_through_sequence": last,
                "archived_event_count": events.count_active(1, last) if last else 0,
                "carried_context_discarded": session.carried() is not None,
                "transcript_epoch": fences.get("epoch", 0) + 1, "generation": fences.get("generation", 0) + 1,
                "max_sequence": 0, "idempotency_key": key, "note": SIDE_EFFECTS}
