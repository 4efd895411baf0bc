"""Prompt admission and busy input: started, queued, steered or interrupted, decided atomically.

Layer 4. The busy check and the durable admission (and queue entry) happen under the session
lock in one catalog transaction; the answer leaves only after that commit. A full queue refuses
the new entry and changes nothing. Interrupt and steer submit only their own replacement text;
a queued entry promoted to steer leaves the queue and steers with its own text (or a new one).
"""

from __future__ import annotations

from typing import Any, Mapping

from compozy.errors import CompozyError
from compozy.ids import new_id, validate_id
from compozy.session.records.governed import refuse_expired
from compozy.session.records.live import LiveSession
from compozy.session.records.receipts import recorded, replayed
from compozy.session.records.snapshots import check_snapshot
from compozy.session.turns.messages import check_identity, check_message, fingerprint
from compozy.session.turns.turn import Turn
from compozy.states import AdmissionState, BusyMode, Disposition, SessionState, SteerDelivery, TurnPhase


class Admission:
    """Decides what a new input does to a session: start a turn, wait in the queue, or steer or
    interrupt the current one."""

    def __init__(self, services, queue, runner, budgets):
        self.services, self.queue, self.runner, self.budgets = services, queue, runner, budgets

    @property
    def catalog(self):
        return self.services.catalog

    # -- prompts ----------------------------------------------------------------------------

    def prompt(self, session: LiveSession, body: Mapping[str, Any]) -> dict:
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
                override = self.budgets.admit(session, body.get("override_budget"))
                turn = Turn(new_id("turn"), message, message_id, key, snapshot, mode, clock=self.services.clock,
                            expected_turn_id=expected, budget_override=override)
                result = self._admit(session, turn, mode, print_)
        if replay is not None:
            return replay
        if result["disposition"] == Disposition.STARTED:
            turn.bound.wait()
            if turn.bind_error is not None:
                raise turn.bind_error
        return {"prompt": result}

    def _replay(self, session, key, print_):
        existing = recorded(self.catalog.admission(session.id, key), print_,
                            "this idempotency_key was used for a different request", idempotency_key=key)
        if existing is None:
            return None
        inflight = session.inflight.get(key)
        if existing.state == AdmissionState.BINDING and inflight is not None:
            session.lock.release()  # wait for the first request's bind without holding the session
            try:
                inflight.bound.wait()
            finally:
                session.lock.acquire()
            if inflight.bind_error is not None:
                raise inflight.bind_error
            existing = self.catalog.admission(session.id, key)
        return {"prompt": replayed(existing)}

    def _check_message_id(self, session, message_id):
        if self.catalog.admission_by_message(session.id, message_id):
            raise CompozyError("message_conflict", f"message_id {message_id} was already used with another "
                               "idempotency_key", message_id=message_id)

    def _check_admissible(self, session, mode):
        if not self.services.accepting:
            raise CompozyError("new_work_admission_unavailable", "the daemon is shutting down")
        record = session.record
        if record.archived:
            raise CompozyError("session_archived", "unarchive the session before prompting it")
        refuse_expired(record, self.services.clock.wall())
        if session.stop_operation is not None or record.state == SessionState.STOPPING or \
                (record.state == SessionState.STOPPED and session.turn is not None):  # its last turn still ending
            raise CompozyError("session_stop_in_progress", "the session is stopping")
        if record.state == SessionState.STOPPED and mode is not None:
            raise CompozyError("session_not_active", "a stopped session restarts only on a normal prompt "
                               "(without mode); queue, steer and interrupt never restart it")

    def _admit(self, session, turn, mode, print_):
        current = session.turn
        if current is None:
            return self._start(session, turn, print_)
        mode = mode or self.services.config["session.busy_input.default_mode"]
        if mode != BusyMode.QUEUE:
            _check_fence(current, turn.expected_turn_id)
        if mode == BusyMode.QUEUE:
            return self.queue.enqueue(session, turn, print_, mode, priority=1, disposition=Disposition.QUEUED)
        if mode == BusyMode.INTERRUPT:
            result = self.queue.enqueue(session, turn, print_, mode, priority=0, disposition=Disposition.INTERRUPTED,
                                        interrupted=current.id)
            self.runner.cancel(session, "interrupted")
            return result
        return self._steer(session, current, turn, print_)

    def _start(self, session, turn, print_):
        if session.state == SessionState.STOPPED:
            session.change_state(SessionState.STARTING)  # stopped -> starting: a normal prompt restores it
        result = {"disposition": Disposition.STARTED.value, "turn_id": turn.id, "message_id": turn.message_id,
                  "idempotency_key": turn.idempotency_key, "replayed": False}
        self.queue.admit_started(session, turn, print_)
        turn.admitted(result)
        session.track_inflight(turn)
        self.runner.start(session, turn)
        return result

    def _steer(self, session, current, turn, print_):
        why_not = _cannot_steer(session.runtime, current)
        if why_not:
            result = self.queue.enqueue(session, turn, print_, BusyMode.STEER, priority=0,
                                        disposition=Disposition.STEERED, interrupted=current.id,
                                        delivery=SteerDelivery.INTERRUPT_FALLBACK,
                                        note=f"interrupted the running turn: {why_not}")
            self.runner.cancel(session, "steered")
            return result
        # Durable first: the steer waits as a head-of-queue entry until the runner injects it;
        # if the turn ends before that, the entry simply runs next as its own turn.
        delivery = SteerDelivery.INJECTED if current.prompting else SteerDelivery.PENDING_INJECTION
        result = self.queue.enqueue(session, turn, print_, BusyMode.STEER, priority=0,
                                    disposition=Disposition.STEERED, delivery=delivery, into=current.id)
        current.inject({"entry_id": result["entry_id"], "message": turn.message, "message_id": turn.message_id})
        return result

    def promote(self, session: LiveSession, entry_id: str, body: Mapping[str, Any]) -> dict:
        """Take a queued entry out of the queue and steer the current turn with its text."""
        validate_id(body["expected_turn_id"], "turn", field="expected_turn_id")
        replacement = check_message(body["message"]) if "message" in body else None
        message_id, key = check_identity(body)
        print_ = fingerprint("steer", entry=entry_id, expected_turn_id=body["expected_turn_id"], message_id=message_id,
                             message=replacement)
        with session.lock:
            entry = self.queue.entry(session, entry_id)
            replay = self.queue.receipt(session, key, print_)
            if replay is not None:
                return {"prompt": replay}
            current = session.turn
            if current is None:
                raise CompozyError("prompt_not_in_progress", "no turn is running to steer")
            _check_fence(current, body["expected_turn_id"])
            self.queue.take_for_steer(entry)
            turn = Turn(entry.turn_id, replacement or entry.message, message_id, key, entry.runtime, "steer",
                        clock=self.services.clock)
            result = self._steer(session, current, turn, print_)
        return {"prompt": {**result, "promoted_entry_id": entry_id}}


def _cannot_steer(runtime, current):
    """Why the running turn cannot take a steer (so it is interrupted instead), in plain words; None when it can."""
    if current.cancel_reason is not None or current.phase not in (TurnPhase.BINDING, TurnPhase.PROMPTING):
        return "it was already ending, so it could not be steered"
    if runtime is None or not runtime.alive:
        return "no agent was running to steer it"
    if not runtime.supports_steering:
        return "this agent cannot steer"
    return None


def _check_fence(current, expected):
    if expected is not None and expected != current.id:
        raise CompozyError("active_turn_mismatch", f"turn {expected} is not the current turn {current.id}",
                           current_turn_id=current.id, expected_turn_id=expected)
