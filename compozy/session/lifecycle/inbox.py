"""The attention inbox: one list of what needs a person, across every session of the daemon.

Layer 4. An observer (compozy.session.records.observers) turns what sessions already say into items
(compozy.store.attention): a permission held for a person, a session's attention flag (supervision
stale or unknown, a stuck runtime, a stop that could not be verified), a failure the session keeps (a
crash, recovery exhausted, a provider's authentication), and what other concerns open (a budget
warning). Each item resolves itself, once, when its cause ends (the request answered, the flag
cleared, the next bind succeeding, the session removed), with the resolution recorded. Every change is
published on the inbox's feed, numbered like the table's changes, for GET /api/attention/events.
"""

import logging

from compozy.session.records.feed import Feed
from compozy.session.records.record import SessionRecord
from compozy.states import Attention, FailureKind, SessionState

log = logging.getLogger("compozy.inbox")

ATTENTION_KINDS = {Attention.SUPERVISION_STALE: "supervision_stale", Attention.SUPERVISION_UNKNOWN: "supervision_unknown",
                   Attention.RUNTIME_STUCK: "runtime_stuck", Attention.STOP_VERIFICATION_FAILED: "stop_unverified"}
ATTENTION_WORDS = {"supervision_stale": "its supervision is stale (a source it relies on is not verified)",
                   "supervision_unknown": "its supervision is unknown (the process table cannot be read)",
                   "runtime_stuck": "its runtime is stuck in a transitional state",
                   "stop_unverified": "its stop could not be verified: processes may still run"}
WATCH_TURNS = "inbox_turn_finished"  # meta.json: a turn ending with nobody watching opens an item (opt-in)
DISMISS: dict = {"id": "dismiss", "label": "Dismiss", "operation": None, "with": {}}


def session_name(record):
    return record.name or record.id


def permission_actions(record, request_id, options, question=None):
    """One action per option the agent offered: session.approve with that option. A question's free form (its
    `accept` option) takes content, the form's fields: the action carries the form's schema as `content`."""
    return [{"id": option.get("option_id"), "label": option.get("name") or option.get("option_id"),
             "kind": option.get("kind"), "operation": "session.approve",
             "with": {"session_id": record.id, "workspace": record.workspace_id, "request_id": request_id,
                      "option_id": option.get("option_id")},
             **({"content": (question or {}).get("schema") or {}} if takes_content(option, question) else {})}
            for option in options if option.get("option_id")]


def takes_content(option, question):
    """A question's accept option: answered with the form's fields (compozy.session.turns.permissions.answered)."""
    return question is not None and option.get("option_id") == "accept" and option.get("kind") == "accept"


def stop_action(record):
    return {"id": "stop", "label": "Stop the session", "operation": "session.stop",
            "with": {"session_id": record.id, "workspace": record.workspace_id, "wait": False}}


def repair_action(record):
    return {"id": "repair", "label": "Repair the transcript", "operation": "session.repair",
            "with": {"session_id": record.id, "workspace": record.workspace_id, "force": True}}


def failure_kind(record, failure):
    if failure.get("kind") == FailureKind.PROVIDER_AUTH_FAILURE:
        return "provider_auth_failure"
    if "recovery exhausted" in (record.stop_detail or ""):
        return "recovery_exhausted"
    return "agent_failure"


class Inbox:
    """Opens and resolves items as sessions change; the feed carries each change to live viewers."""

    def __init__(self, services):
        self.services = services
        self.items = services.catalog.attention
        self.feed = Feed(start=self.items.last_change)
        self.listeners = []  # callables: item -> None, told of every item opened (the notifiers)

    # -- the table's changes, published ------------------------------------------------------------

    def open(self, cause, kind, record, summary, actions=(), details=None, workspace_id=None):
        session_id = record.id if record is not None else None
        workspace_id = record.workspace_id if record is not None else workspace_id
        item = self.items.open(cause, kind, session_id, workspace_id, summary, actions, details)
        if item is not None:
            self._publish([item])
            for listener in self.listeners:
                try:
                    listener(item)
                except Exception:  # noqa: BLE001 (a notifier never breaks what opened the item)
                    log.exception("attention listener failed on %s", item["id"])
        return item

    def resolve(self, where, params, resolution):
        items = self.items.resolve(where, params, resolution)
        self._publish(items)
        return items

    def resolve_cause(self, cause, resolution):
        return self.resolve("cause = ?", (cause,), resolution)

    def _publish(self, items):
        if items:
            self.feed.publish([change_of(item) for item in items])

    # -- what sessions say (observer signals) --------------------------------------------------------

    def appended(self, session, records):
        for event in records:
            if event["type"] == "permission":
                self._permission(session.record, event)
            elif event["type"] in ("done", "error") and session.record.extra.get(WATCH_TURNS) and not session.viewers:
                self._unwatched_end(session.record, event)
            elif event["type"] == "user_message":
                self.seen(session.record)

    def _unwatched_end(self, record, event):
        content = event["content"]
        how = f"done ({content.get('stop_reason')})" if event["type"] == "done" else f"error: {content.get('error')}"
        self.open(f"turn:{event['turn_id']}", "turn_finished", record,
                  f"{session_name(record)}: a turn ended while nobody watched: {how}"[:300], [DISMISS],
                  {"turn_id": event["turn_id"], "end": event["type"], "stop_reason": content.get("stop_reason")})

    def seen(self, record):
        """Someone looks at the session (a viewer, a prompt): its unwatched turn ends are seen."""
        self.resolve("session_id = ? AND kind = 'turn_finished' AND status = 'open'", (record.id,), "seen")

    def _permission(self, record, event):
        content = event["content"]
        request_id = content.get("request_id")
        if not request_id:
            return
        if "reason" in content or "decision" in content:
            self.resolve_cause(f"permission:{request_id}", f"answered {content.get('decision')} "
                                                           f"({content.get('reason', 'user')})")
            return
        options = content.get("options") or []
        what = content.get("title") or content.get("action") or "permission"
        question = content.get("action") == "question"
        self.open(f"permission:{request_id}", "question" if question else "permission", record,
                  f"{session_name(record)}: the agent asks: {what}"[:300] if question else
                  f"{session_name(record)}: the agent asks permission: {what}",
                  permission_actions(record, request_id, options, content.get("question") if question else None),
                  {"request_id": request_id, "turn_id": event.get("turn_id"), "action": content.get("action"),
                   "title": content.get("title"), "resource": content.get("resource"), "options": options,
                   **({"question": content.get("question")} if question else {})})

    def attention_changed(self, session, old, new):
        self._attention(session.record, new)

    def _attention(self, record, new):
        self.resolve_cause(f"attention:{record.id}", f"cleared ({new})" if new else "cleared")
        if new:
            kind = ATTENTION_KINDS.get(new, str(new))
            self.open(f"attention:{record.id}", kind, record,
                      f"{session_name(record)}: {ATTENTION_WORDS.get(kind, new)}", [stop_action(record), DISMISS],
                      {"attention": new, "state": record.state})

    def failure_changed(self, session, old, new):
        self._failure(session.record, old, new)

    def _failure(self, record, old, new):
        if old:
            self.resolve_cause(f"failure:{record.id}", "the next start succeeded" if new is None else "replaced")
        if new:
            kind = failure_kind(record, new)
            repair = [repair_action(record)] if record.state == SessionState.STOPPED and kind != "provider_auth_failure" \
                else []
            self.open(f"failure:{record.id}", kind, record,
                      f"{session_name(record)}: {new.get('summary') or new.get('kind')}"[:300], [*repair, DISMISS],
                      {"failure": {k: new.get(k) for k in ("kind", "summary", "exit_code", "signal") if k in new},
                       "stop_reason": record.stop_reason, "stop_detail": record.stop_detail})

    def removed(self, record):
        self.resolve("session_id = ?", (record.id,), "session removed")

    def started(self):
        """Boot: requests orphaned by the restart are resolved; flags and failures kept in meta.json are
        matched with their items (opened when missing, resolved when their cause ended while the daemon was down)."""
        pending = {f"permission:{request_id}" for request_id in self.items.pending_requests()}
        for cause in self.items.open_causes("permission:"):
            if cause not in pending:
                self.resolve_cause(cause, "orphaned: the daemon restarted while it waited")
        documents = {d["id"]: d for d in self.items.flagged_sessions()}
        for prefix, field in (("attention:", "attention"), ("failure:", "failure")):
            for cause in self.items.open_causes(prefix):
                if not (documents.get(cause[len(prefix):]) or {}).get(field):
                    self.resolve_cause(cause, "cleared while the daemon was down")
        for document in documents.values():
            self._restore(document)

    def adopted(self, record):
        """A session this node adopted from another (docs/fleet.md): its flags and failure open their items, as a
        boot opens them for the sessions it finds."""
        self._restore(record.to_dict())

    def _restore(self, document):
        record = SessionRecord.from_dict(document)
        if record.attention:
            self._attention(record, record.attention)
        if record.failure:
            self._failure(record, None, record.failure)

    # -- reads ------------------------------------------------------------------------------------------

    def changes(self, after, limit):
        """The store's changes after a number, as the feed publishes them (a viewer's gap)."""
        return [change_of(item) for item in self.items.changes_after(after, limit)]


def change_of(item):
    return {"type": "item_opened" if item["status"] == "open" else "item_resolved", "sequence": item["changed"],
            "item": item}
