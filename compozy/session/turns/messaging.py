"""Messaging with reply wakes: compozy__session_prompt with notify_on_complete.

Layer 4. A watch is written when the asked turn is admitted (`reply-watches.json` in the home,
atomic): sender, target, turn, expiry (session.messaging.reply_watch_ttl). The sender waits on a
reply while the watch lasts (activity.waiting), and shows the `awaiting_reply` work signal while the
reply can still come: the asked session is live (its turn running or queued) and not archived, or the
wake waits for delivery. A watch whose asked session was stopped, archived or removed counts as work
no more, though it still delivers if that session runs the turn later. When the asked turn ends (or
was found ended at boot), the wake (who answered, how the turn ended, its final text, bounded) is
prompted to the sender under the key `wake-<watch>`, so a repeat after a crash admits it once:
- a sender that is active (bound, or released and unbound) gets it as a turn of its own, or queued
  behind its current turn;
- a sender the daemon stopped for a failure or its own shutdown (shutdown, crash, error) is resumed by it;
- a sender a user stopped, or one the daemon stopped because its time ran out or its owner went
  (stop_reason timeout: inactivity, a prompt deadline, a spawn's TTL; owner_released: its parent
  stopped) stays stopped: the wake waits and is queued when a prompt resumes it. Resuming it would
  undo the very limit that stopped it;
- a governed child past its TTL never runs again: its watches are dropped.
Watches survive a restart; an expired watch is dropped, and so is a watch of a removed session.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import asdict, dataclass
from typing import Any

from compozy.clock import epoch_from_iso, iso_from_epoch
from compozy.errors import CompozyError
from compozy.ids import new_ulid
from compozy.paths import write_private_json
from compozy.session.records.governed import refuse_expired
from compozy.session.records.live import LiveSession
from compozy.session.records.replay import turn_text
from compozy.states import LIVE_STATES, BusyMode, SessionState, StopReason, WaitingOn

log = logging.getLogger("compozy.messaging")

WAKE_TEXT_LIMIT = 4096
TURN_ENDS = ("done", "error")
STAYS_STOPPED = (StopReason.USER_CANCELED, StopReason.TIMEOUT, StopReason.OWNER_RELEASED)
FILE_NAME = "reply-watches.json"


@dataclass(frozen=True)
class Wake:
    """The answer a watch delivers: who answered, how the turn ended, its final text (bounded)."""

    session_id: str
    agent_name: str
    turn_id: str
    end: str
    text: str
    truncated: bool
    how: str


@dataclass
class ReplyWatch:
    """A sender waiting on the asked turn of a target, until expires_at; wake is set once it ended."""

    id: str
    sender_id: str
    target_id: str
    turn_id: str
    created_at: str
    expires_at: str
    wake: Wake | None = None

    @classmethod
    def from_row(cls, row: dict) -> ReplyWatch:
        """A watch as reply-watches.json holds it."""
        wake = row.get("wake")
        return cls(**{**row, "wake": Wake(**wake) if wake else None})

    def to_row(self) -> dict:
        return asdict(self)


class Messaging:
    """An observer (compozy.session.records.observers) and the registry of reply watches."""

    def __init__(self, services, engine, sessions):
        self.services, self.engine, self.sessions = services, engine, sessions
        self.path = services.home.root / FILE_NAME
        self.lock = threading.RLock()
        self.watches = self._load()

    # -- watches -----------------------------------------------------------------------------

    def watch(self, sender: Any, target_id: str, turn_id: str) -> ReplyWatch:
        """Watch the asked turn for the sender (a Caller); answers the watch."""
        with self.lock:
            for existing in self.watches.values():
                if (existing.sender_id, existing.turn_id) == (sender.id, turn_id):
                    return existing  # a retried prompt: the same turn, the same watch
        now = self.services.clock.wall()
        watch = ReplyWatch(new_ulid().lower(), sender.id, target_id, turn_id, created_at=iso_from_epoch(now),
                           expires_at=iso_from_epoch(now + self.services.config["session.messaging.reply_watch_ttl"]))
        with self.lock:
            self.watches[watch.id] = watch
            self._save()
        self._check_ended(watch)  # the turn may have ended before the watch was written
        return watch

    def signals(self, session: LiveSession) -> list[dict]:
        """The awaiting_reply work signals of a sender: its watches whose reply can still come."""
        return [{"kind": "awaiting_reply", "session_id": w.target_id, "turn_id": w.turn_id,
                 "expires_at": w.expires_at, "reply_ready": w.wake is not None}
                for w in self._watches_of(session) if w.wake is not None or self._can_answer(w.target_id)]

    def waits(self, session: LiveSession) -> list[dict]:
        """What a sender waits on (activity.waiting): every watch it holds, whether it counts as work or not."""
        return [{"on": WaitingOn.REPLY.value, "since": w.created_at, "session_id": w.target_id}
                for w in self._watches_of(session)]

    def _watches_of(self, sender):
        now = self.services.clock.wall()
        return [w for w in list(self.watches.values())
                if w.sender_id == sender.id and epoch_from_iso(w.expires_at) > now]

    def _can_answer(self, target_id):
        """The asked session may still run the asked turn: it is live (the turn running or queued) and not
        archived. One a person stopped, archived or removed runs nothing until someone resumes it."""
        registry = self.services.live_sessions
        live = next((s for s in (registry() if registry else []) if s.id == target_id), None)
        record = live.record if live is not None else self.services.store.get(target_id)
        return record is not None and not record.archived and record.state in LIVE_STATES

    # -- observer ----------------------------------------------------------------------------

    def started(self):
        self._expire()
        for watch in list(self.watches.values()):
            if watch.wake is None:
                self._check_ended(watch)
            else:
                self._deliver_later(watch)

    def appended(self, session, records):
        for event in records:
            if event["type"] in TURN_ENDS and event["turn_id"]:
                for watch in self._waiting_for(session.id, event["turn_id"]):
                    self._answered(watch, session)

    def removed(self, record):
        """A removed session neither answers nor takes a wake: its watches go."""
        for watch in list(self.watches.values()):
            if record.id in (watch.sender_id, watch.target_id):
                self._drop(watch, f"session {record.id} was removed")

    def state_changed(self, session, old, new):
        """A sender resumed by a user, or stopped by the daemon, may now take its wakes."""
        if new in (SessionState.STARTING, SessionState.STOPPED):
            for watch in list(self.watches.values()):
                if watch.sender_id == session.id and watch.wake is not None:
                    self._deliver_later(watch)

    # -- the wake ----------------------------------------------------------------------------

    def _waiting_for(self, target_id, turn_id):
        with self.lock:
            return [w for w in self.watches.values()
                    if w.target_id == target_id and w.turn_id == turn_id and w.wake is None]

    def _check_ended(self, watch):
        try:
            target = self.sessions(watch.target_id)
        except CompozyError:
            return self._drop(watch, "the asked session is gone")
        if target.log.read_all(archive="all", types=list(TURN_ENDS), turn_id=watch.turn_id):
            self._answered(watch, target)

    def _answered(self, watch, target):
        if epoch_from_iso(watch.expires_at) <= self.services.clock.wall():
            return self._drop(watch, "expired")
        events = target.log.read_all(archive="all", turn_id=watch.turn_id)
        end = next((e for e in reversed(events) if e["type"] in TURN_ENDS), None)
        text = turn_text(events, target.read_secrets())
        how = (f"done ({end['content'].get('stop_reason')})" if end and end["type"] == "done"
               else f"error ({(end or {}).get('content', {}).get('error', 'unknown')})")
        wake = Wake(target.id, target.record.agent_name, watch.turn_id, end=end["type"] if end else "error",
                    text=text[:WAKE_TEXT_LIMIT], truncated=len(text) > WAKE_TEXT_LIMIT, how=how)
        with self.lock:
            if watch.id not in self.watches or watch.wake is not None:
                return
            watch.wake = wake
            self._save()
        self._deliver_later(watch)

    def _deliver_later(self, watch):
        self.services.threads.start(f"wake-{watch.id}", self._deliver, watch.id)

    def _deliver(self, watch_id):
        if not self.services.accepting:
            return  # the next boot delivers it
        with self.lock:
            watch = self.watches.get(watch_id)
        if watch is None or watch.wake is None:
            return
        if epoch_from_iso(watch.expires_at) <= self.services.clock.wall():
            return self._drop(watch, "expired before it could be delivered")
        try:
            sender = self.sessions(watch.sender_id)
        except CompozyError:
            return self._drop(watch, "the sender is gone")
        body = {"message": wake_message(watch.wake), "message_id": f"wake-{watch_id}",
                "idempotency_key": f"wake-{watch_id}"}
        try:
            refuse_expired(sender.record, self.services.clock.wall())
        except CompozyError:
            return self._drop(watch, "the sender's spawn TTL has passed")
        with sender.lock:
            record = sender.record
            if record.state == SessionState.STOPPING or record.archived:
                return  # a stopping sender is tried again once stopped; an archived one when it comes back
            if record.state == SessionState.STOPPED and record.stop_reason in STAYS_STOPPED:
                return  # stopped by a user or by a limit: the wake waits for a prompt to resume it
            if record.state != SessionState.STOPPED:
                body["mode"] = BusyMode.QUEUE.value
        try:
            self.engine.prompt(sender, body)
        except CompozyError as exc:
            if exc.code not in ("idempotency_conflict", "message_conflict"):
                log.warning("reply wake %s to %s not delivered yet: %s", watch_id, watch.sender_id, exc)
                return
        log.info("reply wake %s delivered to %s", watch_id, watch.sender_id)
        self._drop(watch, None)

    def _drop(self, watch, why):
        with self.lock:
            if self.watches.pop(watch.id, None) is not None:
                self._save()
        if why:
            log.info("reply watch %s dropped: %s", watch.id, why)

    def _expire(self):
        now = self.services.clock.wall()
        for watch in list(self.watches.values()):
            if epoch_from_iso(watch.expires_at) <= now:
                self._drop(watch, "expired")

    # -- the file ----------------------------------------------------------------------------

    def _load(self):
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            log.exception("reply watches unreadable at %s; starting without them", self.path)
            return {}
        watches = {}
        for row in document.get("watches", []):
            try:
                watch = ReplyWatch.from_row(row)
            except (TypeError, AttributeError):
                log.warning("reply watch unreadable in %s; dropped: %.200r", self.path, row)
                continue
            watches[watch.id] = watch
        return watches

    def _save(self):
        write_private_json(self.path, {"watches": [watch.to_row() for watch in self.watches.values()]})


def wake_message(wake: Wake) -> str:
    """The prompt a sender gets: who answered, how the turn ended, and the answer (bounded)."""
    cut = " [truncated]" if wake.truncated else ""
    return (f"Reply from session {wake.session_id} (agent {wake.agent_name}): turn {wake.turn_id} "
            f"ended {wake.how}.\n\n{wake.text}{cut}")
