"""Rewind: an idle user session goes back to before one of its user messages.

Layer 4 (session.derive). The message and every later active event are archived (never deleted:
rewind is the only operation that archives events), the fences move (epoch and generation), the
ACP context is dropped so the next prompt starts a fresh one from the retained prefix through the
bounded replay, and the message's text comes back as draft_text. The session keeps its ID. A
receipt keyed by the idempotency key is written before anything is cut and completed after, so
an identical retry answers the original result and boot finishes a rewind an unclean exit
interrupted. Files, tool effects and external actions are not undone, and the answer says so, unless
the request asks for `files: restore`: then, in the same operation, the workspace's files go back to
the checkpoint taken when the message's turn started (session.derive.files), before the cut.
"""

from __future__ import annotations

import logging

from compozy.errors import CompozyError
from compozy.ids import validate_client_token
from compozy.session.derive.files import Files, sessions_in_folder, start_of
from compozy.session.records.live import LiveSession
from compozy.session.records.receipts import recorded, replayed
from compozy.session.records.record import SessionRecord
from compozy.session.records.store import SessionStore
from compozy.session.records.transcript import check_fences, expected_fences, fences_of
from compozy.session.turns.messages import fingerprint
from compozy.states import REWIND, LineageKind, RewindState, SessionState, SessionType
from compozy.store.derivations import Derived
from compozy.store.eventlog import EventLog
from compozy.store.records import RewindReceipt

log = logging.getLogger("compozy.rewind")

SIDE_EFFECTS = ("Rewind changes the conversation only: file changes, tool effects, network actions and "
                "external provider actions are not undone.")
RESTORED = ("The workspace's files were restored to the checkpoint taken when that turn started (undo with "
            "files.undo_checkpoint_id); tool effects, network actions and external provider actions are not undone.")


def derivable(record: SessionRecord, done: str = "rewound, continued or forked") -> None:
    """User sessions, provenance, recovery, continued and forked ones; never a daemon-managed one."""
    if record.type != SessionType.USER or (record.lineage or {}).get("kind") == LineageKind.SPAWN:
        raise CompozyError("session_not_derivable", f"session {record.id} is daemon-managed ({record.type}); "
                           f"only user sessions can be {done}", session_type=record.type)


class Rewinder:
    def __init__(self, services, binder):
        self.services, self.binder = services, binder
        self.files = Files(services, sessions_in_folder(services.catalog, services.store))

    @property
    def receipts(self):
        return self.services.catalog.derived

    def rewind(self, session: LiveSession, body: dict) -> dict:
        """The rewind result; a retry with the same key answers the first one with replayed: true."""
        message_id = validate_client_token(body["message_id"], "message_id")
        key = validate_client_token(body["idempotency_key"], "idempotency_key")
        expected = expected_fences(body, required=True)
        restore, dry_run = body.get("files") == "restore", bool(body.get("dry_run"))
        print_ = fingerprint("rewind", message_id=message_id, **({"files": "restore"} if restore else {}))
        with session.lock:
            replay = None if dry_run else self.replayed(session, key, print_)
            if replay is not None:
                return replay
            derivable(session.record)
            self.check_idle(session)
            check_fences(expected, fences_of(session.record, session.log.max_active_sequence()))
            target = self._target(session, message_id)
            checkpoint = self.files.present(session, start_of(session, target["turn_id"])) if restore else None
            if checkpoint is not None and not dry_run:
                self.files.check_not_busy(session)
            result = self._result(session, key, target)
            if dry_run:
                plan = self.files.plan(session, checkpoint) if checkpoint is not None else None
                return {**result, "dry_run": True, "replayed": False, "files": plan}
            if checkpoint is not None:  # before the cut, whose range is fixed: the restore's events stay active
                result["files"] = self.files.apply(session, checkpoint)
                result["max_sequence"] = session.log.max_active_sequence()
                result["note"] = RESTORED
            return self._cut(session, key, print_, result)

    def replayed(self, session: LiveSession, key: str, print_: str) -> dict | None:
        """The recorded result of this key (a rewind's or a clear's), or None; another request is a conflict."""
        receipt = recorded(self.receipts.rewind(session.id, key), print_,
                           "this idempotency_key was used for another rewind or clear of this session",
                           idempotency_key=key)
        return None if receipt is None else replayed(receipt)

    def check_idle(self, session, action="rewind"):
        record = session.record
        if record.archived:
            raise CompozyError("session_archived", f"unarchive the session before you {action} it")
        if session.stop_operation is not None or record.state in (SessionState.STOPPING, SessionState.STARTING):
            raise CompozyError("session_stop_in_progress", f"the session is {record.state}")
        busy = ("a turn is running" if session.turn is not None else
                "input is queued" if self.services.catalog.count_entries(session.id) else
                "an approval is pending" if self.services.catalog.interactions(session.id) else None)
        if busy:
            turn = {"current_turn_id": session.turn.id} if session.turn is not None else {}
            raise CompozyError("session_turn_in_progress", f"{busy}; {action} needs an idle session", **turn)

    def _target(self, session, message_id):
        event = session.log.user_message(message_id)
        if event is None or event.get("archived") or not event["turn_id"]:
            raise CompozyError("message_not_found", f"{message_id} is not a durable user message of this "
                               "session's active transcript", message_id=message_id)
        if event["content"].get("steer"):
            raise CompozyError("message_not_found", f"{message_id} steered turn {event['turn_id']}; rewind to the "
                               "message that started that turn", message_id=message_id)
        return event

    @staticmethod
    def _result(session, key, target):
        """What the cut will do (nothing is changed yet)."""
        log_ = session.log
        first, last = target["sequence"], log_.max_active_sequence()
        fences = session.record.fences or {}
        return {"target_message_id": target["content"]["message_id"], "target_turn_id": target["turn_id"],
                "draft_text": target["content"].get("text", ""), "archived_from_sequence": first,
                "archived_through_sequence": last, "archived_event_count": log_.count_active(first, last),
                "transcript_epoch": fences.get("epoch", 0) + 1, "generation": fences.get("generation", 0) + 1,
                "max_sequence": log_.max_active_sequence(before=first), "idempotency_key": key,
                "note": SIDE_EFFECTS}

    def _cut(self, session, key, print_, result):
        first, last = result["archived_from_sequence"], result["archived_through_sequence"]
        self.commit(session, key, print_, result)
        log.info("session %s rewound to before %s: %d events archived (%d-%d)", session.id,
                 result["target_message_id"], result["archived_event_count"], first, last)
        return {**result, "replayed": False}

    def commit(self, session, key, print_, result):
        """A receipt first, then the agent retired, the cut applied, viewers reset, the record saved, the
        receipt completed (boot finishes what an unclean exit interrupts in between)."""
        self.receipts.add_rewind(RewindReceipt(session.id, key, print_, RewindState.PENDING.value, result))
        self.binder.retire(session)  # the agent's context holds what is cut: the next prompt starts a fresh one
        apply(session.log, session.record, result, self.services.catalog.ledger)
        session.feed.forget()  # a viewer starting now reads only what stays active
        discarded = {"derivation": session.record.derivation} if result.get("carried_context_discarded") else {}
        session.save(fences=session.record.fences, runtime=session.record.runtime, **discarded)
        move(self.receipts, session.id, key, RewindState.PENDING, RewindState.COMPLETED)


def apply(events: EventLog, record: SessionRecord, result: dict, ledger) -> None:
    """The cut itself, idempotent: archive the range (its turns marked archived in the usage ledger, where they
    still count), move the fences, drop the ACP session (and, for a clear, the carried context: it stays stored,
    never again prepended)."""
    if result["archived_event_count"]:
        first, last = result["archived_from_sequence"], result["archived_through_sequence"]
        events.archive(first, last)
        ledger.mark_archived(record.id, events.turn_ids_between(first, last))
    fences = record.fences or {}
    if fences.get("epoch", 0) < result["transcript_epoch"]:
        record.fences = {**fences, "epoch": result["transcript_epoch"], "generation": result["generation"]}
        record.runtime = record.runtime.replace(acp_session_id=None)
    if result.get("carried_context_discarded") and record.derivation:
        record.derivation = {**record.derivation, "carried_context": "discarded"}


def move(receipts: Derived, session_id: str, key: str, old: RewindState, new: RewindState,
         repair: bool = False) -> None:
    new = REWIND.check(old, new, repair)
    if not receipts.move_rewind(session_id, key, old.value, new.value):
        raise AssertionError(f"rewind receipt {session_id}/{key} is no longer {old}")


def finish_interrupted(store: SessionStore, only: str | None = None) -> list[str]:
    """Boot: a rewind an unclean exit interrupted is completed from its receipt; returns the session IDs. only:
    one session's receipts (an adopted session's, docs/fleet.md), else every session's (a boot)."""
    receipts, finished = store.catalog.derived, []
    for receipt in receipts.rewinds_in_state(RewindState.PENDING.value):
        if only is not None and receipt.session_id != only:
            continue
        record = store.get(receipt.session_id)
        if record is not None:
            apply(store.events(record), record, receipt.result, store.catalog.ledger)
            store.save(record)
        move(receipts, receipt.session_id, receipt.idempotency_key, RewindState.PENDING,
             RewindState.COMPLETED, repair=True)
        finished.append(receipt.session_id)
        log.warning("finished the rewind of session %s an unclean exit interrupted", receipt.session_id)
    return finished
