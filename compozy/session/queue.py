"""The daemon-owned input queue: list, edit, steer and cancel entries; cancel the current turn.

Layer 4. Edit and steer author a new message_id and idempotency_key unless both originals are
given to retry the exact same mutation. Every transition leaves a transcript marker.
"""

from compozy import serialize
from compozy import validate as v
from compozy.errors import CompozyError
from compozy.ids import new_id, validate_id
from compozy.session.admission import check_identity, check_message, fingerprint
from compozy.session.turns import Turn
from compozy.session.control import move_entry
from compozy.states import AdmissionState, MarkerKind, QueueStatus


class QueueControl:
    def __init__(self, services, inputs, worker):
        self.services, self.inputs, self.worker = services, inputs, worker

    @property
    def catalog(self):
        return self.services.catalog

    def list(self, session):
        return {"entries": [serialize.entry_resource(e) for e in self.catalog.entries(session.id)]}

    def _entry(self, session, entry_id):
        validate_id(entry_id, "queue", field="entry", not_found="queue_entry_not_found")
        entry = self.catalog.entry(session.id, entry_id)
        if entry is None:
            raise CompozyError("queue_entry_not_found", f"no queue entry {entry_id} in this session")
        return entry

    def _receipt(self, session, key, print_):
        """A recorded mutation with this key: replayed when identical, a conflict otherwise."""
        existing = self.catalog.admission(session.id, key)
        if existing is None:
            return None
        if existing["fingerprint"] != print_:
            raise CompozyError("idempotency_conflict", "this idempotency_key was used for a different request")
        return {**existing["result"], "replayed": True}

    def edit(self, session, entry_id, body):
        body = v.check_body(body, v.EDIT_FIELDS)
        message = check_message(body["message"])
        message_id, key = check_identity(body)
        print_ = fingerprint("edit", entry=entry_id, message=message, message_id=message_id)
        with session.lock:
            entry = self._entry(session, entry_id)
            replay = self._receipt(session, key, print_)
            if replay is not None:
                return replay
            if entry["status"] != QueueStatus.QUEUED:
                raise CompozyError("queue_entry_not_queued", f"entry {entry_id} is {entry['status']}, not queued",
                                   status=entry["status"])
            self.catalog.update_entry(entry_id, message=message, message_id=message_id, idempotency_key=key)
            result = {"entry": serialize.entry_resource(self.catalog.entry(session.id, entry_id)), "replayed": False}
            self.catalog.add_admission(id=new_id("idem"), session_id=session.id, operation="edit", message_id=message_id,
                                       idempotency_key=key, fingerprint=print_,
                                       state=AdmissionState.COMPLETED.value, result=result)
            session.marker(MarkerKind.PROMPT_EDITED, f"queued input edited: {message[:200]}", None,
                           entry_id=entry_id, message_id=message_id, replaced_message_id=entry["message_id"])
        return result

    def steer(self, session, entry_id, body):
        """Take a queued entry out of the queue and steer the current turn with its text."""
        body = v.check_body(body, v.STEER_FIELDS)
        validate_id(body["expected_turn_id"], "turn", field="expected_turn_id")
        replacement = check_message(body["message"]) if "message" in body else None
        message_id, key = check_identity(body)
        print_ = fingerprint("steer", entry=entry_id, expected_turn_id=body["expected_turn_id"], message_id=message_id,
                             message=replacement)
        with session.lock:
            entry = self._entry(session, entry_id)
            replay = self._receipt(session, key, print_)
            if replay is not None:
                return {"prompt": replay}
            current = session.turn
            if current is None:
                raise CompozyError("prompt_not_in_progress", "no turn is running to steer")
            self.inputs._check_fence(current, body["expected_turn_id"])
            if entry["status"] != QueueStatus.QUEUED:
                raise CompozyError("queue_entry_not_queued", f"entry {entry_id} is {entry['status']}, not queued",
                                   status=entry["status"])
            move_entry(self.catalog, entry_id, QueueStatus.QUEUED, QueueStatus.CANCELED)
            turn = Turn(entry["turn_id"], replacement or entry["message"], message_id, key, entry["runtime"], "steer")
            result = self.inputs._steer(session, current, turn, print_)
        return {"prompt": {**result, "promoted_entry_id": entry_id}}

    def cancel(self, session, entry_id):
        with session.lock:
            entry = self._entry(session, entry_id)
            if entry["status"] == QueueStatus.CANCELED:
                return {"entry": serialize.entry_resource(entry)}
            if entry["status"] != QueueStatus.QUEUED:
                raise CompozyError("queue_entry_not_queued", f"entry {entry_id} is {entry['status']}, not queued",
                                   status=entry["status"])
            move_entry(self.catalog, entry_id, QueueStatus.QUEUED, QueueStatus.CANCELED)
            session.marker(MarkerKind.PROMPT_DROPPED, f"queued input canceled: {entry['message'][:200]}", None,
                           entry_id=entry_id, message_id=entry["message_id"], reason="canceled")
            return {"entry": serialize.entry_resource(self.catalog.entry(session.id, entry_id))}

    def cancel_turn(self, session, body):
        v.check_body(body, v.CANCEL_FIELDS)
        with session.lock:
            turn = session.turn
            if turn is None:
                raise CompozyError("prompt_not_in_progress", "no turn is running")
            session.marker(MarkerKind.PROMPT_CANCEL, f"turn {turn.id} canceled", turn.id)
            self.worker.cancel(session, "canceled")
        return {"cancel": {"turn_id": turn.id, "status": "cancelling"}}
