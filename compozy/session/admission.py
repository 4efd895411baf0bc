"""Prompt admission and busy input: started, queued, steered or interrupted, decided atomically.

Layer 4. The busy check and the durable admission (and queue entry) happen under the session
lock in one catalog transaction; the answer leaves only after that commit. A full queue refuses
the new entry and changes nothing. Interrupt and steer submit only their own replacement text.
"""

import hashlib
import json
import logging

from compozy import validate as v
from compozy.errors import CompozyError, invalid
from compozy.ids import new_id, validate_client_token, validate_id
from compozy.session.snapshots import check_snapshot, layer
from compozy.session.turns import Turn
from compozy.session.control import move_admission, move_entry
from compozy.states import (AdmissionState, BusyMode, Disposition, MarkerKind, QueueStatus, SessionState, SteerDelivery,
                            TurnPhase)

log = logging.getLogger("compozy.admission")

MAX_MESSAGE_BYTES = 1024 * 1024


def fingerprint(operation, **fields):
    canonical = json.dumps({"operation": operation, **fields}, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def check_identity(body):
    """message_id and idempotency_key come together (both client-chosen) or not at all."""
    if ("message_id" in body) != ("idempotency_key" in body):
        raise invalid("give message_id and idempotency_key together, or neither")
    if "message_id" in body:
        return (validate_client_token(body["message_id"], "message_id"),
                validate_client_token(body["idempotency_key"], "idempotency_key"))
    return new_id("msg"), new_id("idem")


def check_message(message):
    if not message.strip():
        raise invalid("message must not be blank", field="message")
    if len(message.encode("utf-8")) > MAX_MESSAGE_BYTES:
        raise invalid(f"message is over {MAX_MESSAGE_BYTES} bytes", field="message")
    return message


class Inputs:
    """Admits prompts, owns the durable queue, and hears from the worker about each turn."""

    def __init__(self, services, worker_ref):
        self.services = services
        self.worker = worker_ref  # set after the Worker exists (they refer to each other)

    @property
    def catalog(self):
        return self.services.catalog

    # -- admission -----------------------------------------------------------------------

    def prompt(self, session, body):
        body = v.check_body(body, v.PROMPT_FIELDS)
        message = check_message(body["message"])
        message_id, key = check_identity(body)
        snapshot = check_snapshot(body["runtime"]) if "runtime" in body else {}
        expected = body.get("expected_turn_id")
        if expected is not None:
            validate_id(expected, "turn", field="expected_turn_id")
        mode = body.get("mode")
        print_ = fingerprint("prompt", message=message, message_id=message_id, runtime=snapshot, mode=mode,
                             expected_turn_id=expected)
        with session.lock:
            replay = self._replay(session, key, print_)
            if replay is None:
                self._check_message_id(session, message_id)
                self._check_admissible(session, mode)
                turn = Turn(new_id("turn"), message, message_id, key, snapshot, mode, expected_turn_id=expected)
                result = self._admit(session, turn, mode, print_)
        if replay is not None:
            return replay
        if result["disposition"] == Disposition.STARTED:
            turn.bound.wait()
            if turn.bind_error is not None:
                raise turn.bind_error
        return {"prompt": result}

    def _replay(self, session, key, print_):
        existing = self.catalog.admission(session.id, key)
        if existing is None:
            return None
        if existing["fingerprint"] != print_:
            raise CompozyError("idempotency_conflict", "this idempotency_key was used for a different request",
                               idempotency_key=key)
        inflight = session.inflight.get(key)
        if existing["state"] == AdmissionState.BINDING and inflight is not None:
            session.lock.release()  # wait for the first request's bind without holding the session
            try:
                inflight.bound.wait()
            finally:
                session.lock.acquire()
            if inflight.bind_error is not None:
                raise inflight.bind_error
            existing = self.catalog.admission(session.id, key)
        if existing is None or existing.get("result") is None:
            raise CompozyError("idempotency_conflict", "the first request with this key did not complete")
        return {"prompt": {**existing["result"], "replayed": True}}

    def _check_message_id(self, session, message_id):
        if self.catalog.admission_by_message(session.id, message_id):
            raise CompozyError("message_conflict", f"message_id {message_id} was already used with another "
                               "idempotency_key", message_id=message_id)

    def _check_admissible(self, session, mode):
        if not self.services.accepting:
            raise CompozyError("new_work_admission_unavailable", "the daemon is shutting down")
        document = session.document
        if document.get("archived"):
            raise CompozyError("session_archived", "unarchive the session before prompting it")
        if session.stop_operation is not None or document["state"] == SessionState.STOPPING:
            raise CompozyError("session_stop_in_progress", "the session is stopping")
        if document["state"] == SessionState.STOPPED and mode is not None:
            raise CompozyError("session_not_active", "a stopped session restarts only on a normal prompt "
                               "(without mode); queue, steer and interrupt never restart it")

    def _admit(self, session, turn, mode, print_):
        current = session.turn
        if current is None:
            return self._start(session, turn, print_)
        mode = mode or self.services.config["session.busy_input.default_mode"]
        if mode != BusyMode.QUEUE:
            self._check_fence(current, turn.expected_turn_id)
        if mode == BusyMode.QUEUE:
            return self._enqueue(session, turn, print_, mode, priority=1, disposition=Disposition.QUEUED)
        if mode == BusyMode.INTERRUPT:
            result = self._enqueue(session, turn, print_, mode, priority=0, disposition=Disposition.INTERRUPTED,
                                   interrupted=current.id)
            self.worker.cancel(session, "interrupted")
            return result
        return self._steer(session, current, turn, print_)

    @staticmethod
    def _check_fence(current, expected):
        if expected is not None and expected != current.id:
            raise CompozyError("active_turn_mismatch", f"turn {expected} is not the current turn {current.id}",
                               current_turn_id=current.id, expected_turn_id=expected)

    def _start(self, session, turn, print_):
        if session.document["state"] == SessionState.STOPPED:
            session.change_state(SessionState.STARTING)  # stopped -> starting: a normal prompt restores it
        result = {"disposition": Disposition.STARTED.value, "turn_id": turn.id, "message_id": turn.message_id,
                  "idempotency_key": turn.idempotency_key, "replayed": False}
        turn.admission_id = new_id("idem")
        self.catalog.add_admission(id=turn.admission_id, session_id=session.id, operation="prompt",
                                   message_id=turn.message_id, idempotency_key=turn.idempotency_key,
                                   fingerprint=print_, state=AdmissionState.BINDING.value, result=None)
        turn.result = result
        session.inflight[turn.idempotency_key] = turn
        self.worker.start(session, turn)
        return result

    def _enqueue(self, session, turn, print_, mode, priority, disposition, interrupted=None, delivery=None, into=None):
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
            if into:
                result["turn_id"] = into  # injected into the running turn
            admission_id = new_id("idem")
            self.catalog.add_admission(id=admission_id, session_id=session.id, operation="prompt",
                                       message_id=turn.message_id, idempotency_key=turn.idempotency_key,
                                       fingerprint=print_, state=AdmissionState.QUEUED.value, result=result)
            self.catalog.add_entry(id=entry_id, session_id=session.id, priority=priority,
                                   status=QueueStatus.QUEUED.value,
                                   mode=mode, message=turn.message, message_id=turn.message_id,
                                   idempotency_key=turn.idempotency_key, runtime=self._resolved(session, turn),
                                   turn_id=turn.id, admission_id=admission_id)
        kind = {Disposition.QUEUED: MarkerKind.PROMPT_QUEUED, Disposition.INTERRUPTED: MarkerKind.PROMPT_INTERRUPTED,
                Disposition.STEERED: MarkerKind.PROMPT_STEERED}[disposition]
        session.marker(kind, f"{disposition.value}: {turn.message[:200]}", into or interrupted,
                       entry_id=entry_id, message_id=turn.message_id, **({"steer_delivery": delivery.value}
                                                                          if delivery else {}))
        return result

    def _resolved(self, session, turn):
        """A queued prompt keeps the runtime accepted with it, whatever the binding does later:
        the agent's defaults, then what is in effect now, then the selection, then its own snapshot."""
        stored = session.document["runtime"]
        runtime = session.runtime
        in_effect = runtime.effective if runtime is not None and runtime.alive else \
            (stored.get("effective") or stored.get("last_known"))
        return layer(session.agent.defaults(), in_effect, stored.get("selected"), turn.snapshot)

    def _steer(self, session, current, turn, print_):
        runtime = session.runtime
        steerable = (runtime is not None and runtime.alive and runtime.supports_steering
                     and current.cancel_reason is None and current.phase in (TurnPhase.BINDING, TurnPhase.PROMPTING))
        if not steerable:
            result = self._enqueue(session, turn, print_, BusyMode.STEER, priority=0, disposition=Disposition.STEERED,
                                   interrupted=current.id, delivery=SteerDelivery.INTERRUPT_FALLBACK)
            self.worker.cancel(session, "steered")
            return result
        # Durable first: the steer waits as a head-of-queue entry until the worker injects it;
        # if the turn ends before that, the entry simply runs next as its own turn.
        delivery = SteerDelivery.INJECTED if current.prompting else SteerDelivery.PENDING_INJECTION
        result = self._enqueue(session, turn, print_, BusyMode.STEER, priority=0, disposition=Disposition.STEERED,
                               delivery=delivery, into=current.id)
        current.injections.append({"entry_id": result["entry_id"], "message": turn.message,
                                   "message_id": turn.message_id})
        current.wake.set()
        return result

    # -- hooks the worker calls -------------------------------------------------------------

    def started(self, session, turn):
        if turn.entry_id:
            move_entry(self.catalog, turn.entry_id, QueueStatus.DISPATCHING, QueueStatus.SENT)
            session.marker(MarkerKind.PROMPT_ACCEPTED, f"queued input started: {turn.message[:200]}", turn.id,
                           entry_id=turn.entry_id)
        elif turn.admission_id:
            move_admission(self.catalog, turn.admission_id, AdmissionState.BINDING, AdmissionState.STARTED,
                           result=turn.result)
        session.inflight.pop(turn.idempotency_key, None)  # after the result is durable: a retry replays it
        if session.document["state"] == SessionState.STARTING:
            session.change_state(SessionState.ACTIVE, stop_reason=None, stop_detail=None, verified=None)

    def refused(self, session, turn, error):
        session.inflight.pop(turn.idempotency_key, None)
        if turn.entry_id:
            move_entry(self.catalog, turn.entry_id, QueueStatus.DISPATCHING, QueueStatus.FAILED,
                       failure=json.dumps({"code": error.code, "message": error.message}))
            session.marker(MarkerKind.PROMPT_DROPPED, f"queued input could not start: {error.code}: {error.message}",
                           None, entry_id=turn.entry_id, code=error.code)
        elif turn.admission_id:
            move_admission(self.catalog, turn.admission_id, AdmissionState.BINDING, AdmissionState.WITHDRAWN)
        if session.document["state"] == SessionState.STARTING:
            session.change_state(SessionState.STOPPED, stop_reason="error",
                                 stop_detail=f"start did not complete: {error.code}",
                                 failure={"kind": "startup_failure", "summary": error.message[:500]})

    def ended(self, session, turn, kind, content):
        runtime = session.document.get("runtime") or {}
        session.save(activity=dict(session.activity), runtime={**runtime, "last_known": runtime.get("last_known")})

    def next_turn(self, session):
        """The next queued entry as a turn (called with session.lock held), or None."""
        for entry in self.catalog.entries(session.id):
            move_entry(self.catalog, entry["id"], QueueStatus.QUEUED, QueueStatus.DISPATCHING)
            return Turn(entry["turn_id"], entry["message"], entry["message_id"], entry["idempotency_key"],
                        entry["runtime"], entry["mode"], entry_id=entry["id"], admission_id=entry["admission_id"])
        return None

    def claim_steer(self, session, turn, steer):
        """With session.lock held: take a waiting steer entry for injection and record its message."""
        entry = self.catalog.entry(session.id, steer["entry_id"])
        if entry is None or entry["status"] != QueueStatus.QUEUED:
            return False  # canceled, or already run as its own turn
        move_entry(self.catalog, entry["id"], QueueStatus.QUEUED, QueueStatus.SENT)
        session.append_event("user_message", {"text": entry["message"], "message_id": entry["message_id"],
                                              "steer": True, "entry_id": entry["id"]}, turn.id)
        steer["message"] = entry["message"]  # an edit after admission wins
        return True

    def steer_failed(self, session, turn, steer, reason):
        move_entry(self.catalog, steer["entry_id"], QueueStatus.SENT, QueueStatus.FAILED,
                   failure=json.dumps({"code": "steer_failed", "message": reason[:300]}))
        session.marker(MarkerKind.PROMPT_DROPPED, f"steer could not be delivered: {reason[:300]}", turn.id,
                       message_id=steer["message_id"], entry_id=steer["entry_id"])
