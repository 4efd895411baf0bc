"""The daemon-owned input of a session, in the catalog: prompt admissions and the input queue.

Layer 4. Every row changes along its table (records/control.py) and each change of the queue leaves
a transcript marker. Edit authors a new message_id and idempotency_key unless both originals are
given to retry the exact same mutation. Nothing here runs a turn: admission writes through this
queue, and the runner takes entries from it and reports how they went.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from compozy import serialize
from compozy.errors import CompozyError
from compozy.ids import new_id, validate_id
from compozy.session.records.live import LiveSession
from compozy.session.records.control import move_admission, move_entry
from compozy.session.records.receipts import recorded, replayed
from compozy.session.turns.messages import check_identity, check_message, fingerprint
from compozy.session.records.snapshots import layer
from compozy.session.turns.turn import Turn
from compozy.states import AdmissionState, Disposition, MarkerKind, QueueStatus
from compozy.store.records import Admission as AdmissionRow, QueueEntry

MARKER_OF = {Disposition.QUEUED: MarkerKind.PROMPT_QUEUED, Disposition.INTERRUPTED: MarkerKind.PROMPT_INTERRUPTED,
             Disposition.STEERED: MarkerKind.PROMPT_STEERED}



class InputQueue:
    def __init__(self, services):
        self.services = services
        self.held = lambda session, entry: False  # whether the next entry must wait (the engine sets budgets')

    @property
    def catalog(self):
        return self.services.catalog

    # -- operations on entries ---------------------------------------------------------------

    def list(self, session: LiveSession) -> dict:
        waiting = self.waiting(session)
        return {"entries": [{**serialize.entry_resource(e), **({"waiting": waiting} if waiting else {})}
                            for e in self.catalog.entries(session.id)]}

    def waiting(self, session):
        """Why the queued input does not run (a spent budget's state), or None."""
        return None

    def entry(self, session: LiveSession, entry_id: str) -> QueueEntry:
        validate_id(entry_id, "queue", field="entry", not_found="queue_entry_not_found")
        entry = self.catalog.entry(session.id, entry_id)
        if entry is None:
            raise CompozyError("queue_entry_not_found", f"no queue entry {entry_id} in this session")
        return entry

    @staticmethod
    def require_queued(entry: QueueEntry) -> None:
        if entry.status != QueueStatus.QUEUED:
            raise CompozyError("queue_entry_not_queued", f"entry {entry.id} is {entry.status}, not queued",
                               status=entry.status)

    def receipt(self, session: LiveSession, key: str, print_: str) -> dict | None:
        """A recorded mutation with this key: replayed when identical, a conflict otherwise."""
        existing = recorded(self.catalog.admission(session.id, key), print_,
                            "this idempotency_key was used for a different request")
        return None if existing is None else replayed(existing)

    def edit(self, session: LiveSession, entry_id: str, body: Mapping[str, Any]) -> dict:
        message = check_message(body["message"])
        message_id, key = check_identity(body)
        print_ = fingerprint("edit", entry=entry_id, message=message, message_id=message_id)
        with session.lock:
            entry = self.entry(session, entry_id)
            replay = self.receipt(session, key, print_)
            if replay is not None:
                return replay
            self.require_queued(entry)
            self.catalog.update_entry(entry_id, message=message, message_id=message_id, idempotency_key=key)
            result = {"entry": serialize.entry_resource(self.catalog.entry(session.id, entry_id)), "replayed": False}
            self.catalog.add_admission(AdmissionRow(id=new_id("idem"), session_id=session.id, operation="edit",
                                                    message_id=message_id, idempotency_key=key, fingerprint=print_,
                                                    state=AdmissionState.COMPLETED.value, result=result))
            session.marker(MarkerKind.PROMPT_EDITED, f"queued input edited: {message[:200]}", None,
                           entry_id=entry_id, message_id=message_id, replaced_message_id=entry.message_id)
        return result

    def cancel(self, session: LiveSession, entry_id: str) -> dict:
        with session.lock:
            entry = self.entry(session, entry_id)
            if entry.status == QueueStatus.CANCELED:
                return {"entry": serialize.entry_resource(entry)}
            self.require_queued(entry)
            move_entry(self.catalog, entry_id, QueueStatus.QUEUED, QueueStatus.CANCELED)
            session.marker(MarkerKind.PROMPT_DROPPED, f"queued input canceled: {entry.message[:200]}", None,
                           entry_id=entry_id, message_id=entry.message_id, reason="canceled")
            return {"entry": serialize.entry_resource(self.catalog.entry(session.id, entry_id))}

    def take_for_steer(self, entry: QueueEntry) -> None:
        """With session.lock held: a queued entry leaves the queue to steer the current turn."""
        self.require_queued(entry)
        move_entry(self.catalog, entry.id, QueueStatus.QUEUED, QueueStatus.CANCELED)

    # -- admission's writes ----------------------------------------------------------------------

    def admit_started(self, session: LiveSession, turn: Turn, print_: str) -> None:
        """The admission of a prompt that runs now: binding until the runner reports it started."""
        turn.recorded_as(new_id("idem"))
        self.catalog.add_admission(AdmissionRow(id=turn.admission_id, session_id=session.id, operation="prompt",
                                                message_id=turn.message_id, idempotency_key=turn.idempotency_key,
                                                fingerprint=print_, state=AdmissionState.BINDING.value))

    def enqueue(self, session, turn, print_, mode, priority, disposition, interrupted=None, delivery=None, into=None,
                note=None):
        """The admission and its queue entry in one transaction; a full queue refuses and changes nothing."""
        cap = self.services.config["session.busy_input.queue_cap"]
        with self.catalog.transaction():
            if priority == 1 and self.catalog.count_entries(session.id) >= cap:
                raise CompozyError("queue_full", f"the input queue holds {cap} entries (session.busy_input.queue_cap)",
                                   queue_cap=cap)
            entry_id = new_id("queue")
            result = {"disposition": disposition.value, "turn_id": turn.id, "message_id": turn.message_id,
                      "idempotency_key": turn.idempotency_key, "entry_id": entry_id, "replayed": False}
            if delivery:
                result["steer_delivery"] = delivery.value
            if interrupted:
                result["interrupted_turn_id"] = interrupted
            if note:
                result["note"] = note  # what happened, in plain words (a steer that had to interrupt)
            if into:
                result["turn_id"] = into  # injected into the running turn
            admission_id = new_id("idem")
            self.catalog.add_admission(AdmissionRow(id=admission_id, session_id=session.id, operation="prompt",
                                                    message_id=turn.message_id, idempotency_key=turn.idempotency_key,
                                                    fingerprint=print_, state=AdmissionState.QUEUED.value,
                                                    result=result))
            self.catalog.add_entry(QueueEntry(id=entry_id, session_id=session.id, priority=priority,
                                              status=QueueStatus.QUEUED.value, mode=mode, message=turn.message,
                                              message_id=turn.message_id, idempotency_key=turn.idempotency_key,
                                              runtime=self._resolved(session, turn), turn_id=turn.id,
                                              admission_id=admission_id,
                                              budget_override=turn.budget_override))
        summary = f"{note or disposition.value}: {turn.message[:200]}"
        session.marker(MARKER_OF[disposition], summary, into or interrupted,
                       entry_id=entry_id, message_id=turn.message_id,
                       **({"steer_delivery": delivery.value} if delivery else {}))
        return result

    @staticmethod
    def _resolved(session, turn):
        """A queued prompt keeps the runtime accepted with it, whatever the binding does later:
        the agent's defaults, then what is in effect now, then the selection, then its own snapshot."""
        stored = session.record.runtime
        runtime = session.runtime
        in_effect = runtime.effective if runtime is not None and runtime.alive else \
            (stored.effective or stored.last_known)
        return layer(session.agent.defaults(), in_effect, stored.selected, turn.snapshot)

    # -- what the runner reports ---------------------------------------------------------------

    def next_turn(self, session: LiveSession) -> Turn | None:
        """With session.lock held: the next queued entry as a turn, or None."""
        for entry in self.catalog.entries(session.id):
            if self.held(session, entry):
                return None  # it waits, queued, with the reason (a spent budget)
            move_entry(self.catalog, entry.id, QueueStatus.QUEUED, QueueStatus.DISPATCHING)
            return Turn(entry.turn_id, entry.message, entry.message_id, entry.idempotency_key, entry.runtime,
                        entry.mode, clock=self.services.clock, entry_id=entry.id, admission_id=entry.admission_id,
                        budget_override=entry.budget_override)
        return None

    def started(self, session: LiveSession, turn: Turn) -> None:
        """The turn is bound and its user_message recorded: its entry is sent, or its admission started."""
        if turn.entry_id:
            move_entry(self.catalog, turn.entry_id, QueueStatus.DISPATCHING, QueueStatus.SENT)
            session.marker(MarkerKind.PROMPT_ACCEPTED, f"queued input started: {turn.message[:200]}", turn.id,
                           entry_id=turn.entry_id)
        elif turn.admission_id:
            move_admission(self.catalog, turn.admission_id, AdmissionState.BINDING, AdmissionState.STARTED,
                           result=turn.result)

    def refused(self, session: LiveSession, turn: Turn, error: CompozyError) -> None:
        """The turn never started: its entry failed (and is dropped), or its admission is withdrawn."""
        if turn.entry_id:
            move_entry(self.catalog, turn.entry_id, QueueStatus.DISPATCHING, QueueStatus.FAILED,
                       failure=json.dumps({"code": error.code, "message": error.message}))
            session.marker(MarkerKind.PROMPT_DROPPED, f"queued input could not start: {error.code}: {error.message}",
                           None, entry_id=turn.entry_id, code=error.code)
        elif turn.admission_id:
            move_admission(self.catalog, turn.admission_id, AdmissionState.BINDING, AdmissionState.WITHDRAWN)

    def claim_steer(self, session: LiveSession, turn: Turn, steer: dict[str, Any]) -> bool:
        """With session.lock held: take a waiting steer entry for injection and record its message."""
        entry = self.catalog.entry(session.id, steer["entry_id"])
        if entry is None or entry.status != QueueStatus.QUEUED:
            return False  # canceled, or already run as its own turn
        move_entry(self.catalog, entry.id, QueueStatus.QUEUED, QueueStatus.SENT)
        session.append_event("user_message", {"text": entry.message, "message_id": entry.message_id,
                                              "steer": True, "entry_id": entry.id}, turn.id)
        steer["message"] = entry.message  # an edit after admission wins
        return True

    def steer_failed(self, session: LiveSession, turn: Turn, steer: dict[str, Any], reason: str) -> None:
        move_entry(self.catalog, steer["entry_id"], QueueStatus.SENT, QueueStatus.FAILED,
                   failure=json.dumps({"code": "steer_failed", "message": reason[:300]}))
        session.marker(MarkerKind.PROMPT_DROPPED, f"steer could not be delivered: {reason[:300]}", turn.id,
                       message_id=steer["message_id"], entry_id=steer["entry_id"])
