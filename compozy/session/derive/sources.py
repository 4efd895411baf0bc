"""Reading a source for a derivation: one read-only snapshot, its fences, and whether its agent can
clone the session itself. GET S/derive/preview answers exactly this; it never writes or repairs.

Layer 4 (session.derive).
"""

from dataclasses import dataclass

from compozy.session.records.transcript import carry, fences_of, limits_of
from compozy.states import SessionState



@dataclass(frozen=True)
class Snapshot:
    carry: object  # transcript.Carry
    fences: dict
    native_fork_possible: bool

    def document(self):
        return {**self.carry.summary(), "fences": self.fences, "native_fork_possible": self.native_fork_possible}


def snapshot(session, services, message_id=None):
    """One consistent read of the source under its lock (no rewind cuts it halfway); a running
    turn is never interrupted: it is left out of what is carried."""
    with session.lock:
        max_sequence = session.log.max_active_sequence()
        fences = fences_of(session.record, max_sequence)
        events = session.log.transcript_records(max_sequence)
        turn_running = session.turn is not None
        native = message_id is None and native_fork_possible(session, services.catalog)
    found = carry(events, limits_of(services.config), session.carried(), message_id, turn_running,
                  secrets=session.read_secrets())
    return Snapshot(found, fences, native)


def native_fork_possible(session, catalog):
    """The agent can clone this session itself: bound on a live process that advertises cloning and
    loading sessions, idle, with nothing queued. With session.lock held."""
    runtime = session.runtime
    return bool(session.record.state == SessionState.ACTIVE and runtime is not None and runtime.alive
                and runtime.supports_fork and runtime.supports_load and session.turn is None
                and not catalog.count_entries(session.id))


def preview(session, services, query):
    message_id = (query or {}).get("message_id")
    return {"preview": snapshot(session, services, message_id).document()}
