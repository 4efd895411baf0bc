"""LiveSession: a session's in-memory state in this daemon, and the one path for its writes.

Layer 4. Every lifecycle change goes through change_state (meta.json, then the catalog); every
event goes through append (commit, then publish to viewers). The bound agent's callbacks land
in RuntimeEvents, which ignores a runtime that has since been replaced.
"""

import logging
import threading
from dataclasses import dataclass

from compozy import serialize
from compozy.clock import now_iso
from compozy.session.feed import Feed
from compozy.session.translate import DROPPED_VARIANTS, translate
from compozy.states import RuntimeStatus, SessionState, assert_transition

log = logging.getLogger("compozy.session")


@dataclass
class Services:
    """What every session shares: configuration, stores, feeds, and the daemon's hooks."""

    home: object
    config: object
    catalog: object
    store: object
    catalog_feed: object
    on_agent_exit: object = None
    live_sessions: object = None
    accepting: bool = True


class LiveSession:
    def __init__(self, services, document):
        self.services = services
        self.id = document["id"]
        self.lock = threading.RLock()
        self.document = document
        self.log = services.store.events(document)
        services.store.logs.pin(self.id)
        self.feed = Feed(start=self.log.last_sequence())
        self.runtime = None
        self.turn = None
        self.worker = None
        self.stop_operation = None
        self.permissions = {}  # request_id -> PendingPermission
        self.inflight = {}  # idempotency_key -> Turn still binding
        self.activity = {"last_activity_at": (document.get("activity") or {}).get("last_activity_at"),
                         "last_activity_kind": None}
        self.idle_since = None

    @property
    def agent(self):
        return self.services.config.agent(self.document["agent_name"])

    @property
    def state(self):
        return self.document["state"]

    # -- durable writes --------------------------------------------------------------------

    def save(self, **changes):
        with self.lock:
            self.document.update(changes)
            self.document.setdefault("fences", {})["max_sequence"] = self.log.last_sequence()
            self.services.store.save(self.document)
            self._catalog_changed()
        return self.document

    def change_state(self, new_state, **changes):
        with self.lock:
            assert_transition(self.document["state"], new_state)
            return self.save(state=SessionState(new_state).value, **changes)

    def update_runtime(self, **fields):
        with self.lock:
            runtime = dict(self.document.get("runtime") or {})
            runtime.update(fields)
            return self.save(runtime=runtime)

    def append(self, items):
        """Commit events, then publish them; returns the stored records."""
        records = self.log.append(items)
        self.feed.publish(records)
        return records

    def append_event(self, kind, content, turn_id=None):
        return self.append([(kind, turn_id, content, self.document["agent_name"])])[0]

    def marker(self, kind, summary, turn_id=None, **evidence):
        marker = {"kind": kind, "occurred_at": now_iso(), "summary": summary[:2048]}
        if evidence:
            marker["evidence"] = evidence
        return self.append_event("transcript_marker.created", {"marker": marker}, turn_id)

    def touch(self, kind):
        self.activity = {"last_activity_at": now_iso(), "last_activity_kind": kind}

    def _catalog_changed(self):
        self.services.catalog_feed.publish_counted(
            {"type": "session_catalog_changed", "change": "upserted", "session_id": self.id,
             "workspace_id": self.document["workspace_id"]})

    # -- reads -------------------------------------------------------------------------------

    def overlay(self):
        """What only the daemon's memory knows: process capabilities, activity, health, supervision."""
        from compozy.session.supervision import supervision_view  # avoids a cycle at import time
        with self.lock:
            runtime, turn = self.runtime, self.turn
            live = {}
            if runtime is not None and runtime.alive:
                live["acp_caps"] = runtime.acp_caps()
                live["effective"] = runtime.effective
            activity = dict(self.activity, turn_in_flight=turn is not None,
                            current_turn_id=turn.id if turn else None)
            return {"runtime": live, "activity": activity, "health": self.health(),
                    "supervision": supervision_view(self)}

    def health(self):
        document, runtime, turn = self.document, self.runtime, self.turn
        if document["state"] == SessionState.STOPPED:
            return serialize.stored_health(document)
        bound = runtime is not None and runtime.alive
        status = (document.get("runtime") or {}).get("status")
        health = "healthy" if bound or status == RuntimeStatus.UNBOUND else "degraded"
        if document.get("attention") or status == RuntimeStatus.RECOVERING:
            health = "degraded"
        record = {"state": "prompting" if turn else "idle", "health": health, "active_prompt": turn is not None,
                  "attachable": document["state"] == SessionState.ACTIVE and bound and not document.get("failure"),
                  "eligible_for_wake": document["state"] == SessionState.ACTIVE and turn is None
                  and not document.get("archived")}
        if turn is not None:
            record["ineligibility_reason"] = "session_prompt_active"
        return record

    def current_turn_id(self):
        turn = self.turn
        return turn.id if turn else None

    def close(self):
        self.services.store.logs.unpin(self.id)
        self.feed.close()


class RuntimeEvents:
    """The handler an AgentProcess calls from its reader thread."""

    def __init__(self, session, requests):
        self.session, self.requests = session, requests
        self.runtime = None  # set once launch() returns

    def _current(self):
        return self.runtime is not None and self.session.runtime is self.runtime

    def on_updates(self, notifications):
        runtime = self.runtime
        if runtime is None or runtime.loading:
            return  # session/load replays history we already hold
        turn = self.session.turn
        turn_id = turn.id if turn is not None and turn.accepts_output else None
        items = []
        for notification in notifications:
            params = notification.params
            if params.get("sessionId") != runtime.acp_session_id:
                log.warning("session %s: dropped an update for foreign ACP session %r", self.session.id,
                            str(params.get("sessionId"))[:80])
                continue
            update = params.get("update") if isinstance(params.get("update"), dict) else {}
            event = translate(update)
            if event is None:
                if update.get("sessionUpdate") not in DROPPED_VARIANTS:
                    log.info("session %s: skipped unknown session/update %r", self.session.id,
                             str(update.get("sessionUpdate"))[:80])
                continue
            items.append((event[0], turn_id, event[1], self.session.document["agent_name"]))
            if turn is not None and turn_id is not None:
                _track_tool(turn, event)
        if items:
            self.session.append(items)
            self.session.touch(items[-1][0])
            if turn is not None:
                turn.progress()

    def on_request(self, request):
        self.requests.handle(self.session, self.runtime, request)

    def on_notification(self, notification):
        log.info("session %s: ignored agent notification %s", self.session.id, notification.method[:80])

    def on_issue(self, issue):
        log.warning("session %s: agent output skipped (%s): %s", self.session.id, issue.kind, issue.excerpt)

    def on_exit(self, process):
        turn = self.session.turn
        if turn is not None:
            turn.wake.set()
        self.session.services.on_agent_exit(self.session, self.runtime)


def _track_tool(turn, event):
    """A tool call without a result is a running tool: a work signal."""
    kind, content = event
    if kind == "tool_call" and not content.get("update"):
        turn.open_tools.add(content.get("tool_call_id"))
    elif kind == "tool_result":
        turn.open_tools.discard(content.get("tool_call_id"))
