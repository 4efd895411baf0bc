"""The inbox's operations on the façade: the daemon's status, the list, its stream of changes, answering an item.

Layer 4 (a SessionManager mixin, like compozy.session.records.reading). An item's actions are the
daemon's existing operations (approve with an option, stop), so answering an item runs that operation
as any client would; the item then resolves itself when its cause ends, for every client at once.
"""

from compozy import __version__
from compozy.api import OPS
from compozy.errors import CompozyError, invalid
from compozy.ids import validate_id
from compozy.session.lifecycle.inbox import WATCH_TURNS
from compozy.session.records.reads import follow_batches

DEFAULT_LIMIT = 200
ATTENTION_LIMIT = 100  # sessions with a failure or an attention flag that the daemon's status lists


class ChangeLog:
    """The inbox's changes as follow_batches reads a store: a viewer's gap, read from the catalog."""

    def __init__(self, inbox):
        self.inbox = inbox

    def read_aside(self, after, limit):
        return self.inbox.changes(after, limit)


class InboxViews:
    def daemon_status(self):
        """The daemon at a glance: version, session counts by state, sessions that need attention."""
        attention = []
        for session_id in self.catalog.attention_ids(ATTENTION_LIMIT):
            record = self._record(session_id)
            entry = {k: getattr(record, k) for k in ("id", "name", "state", "workspace_id", "stop_reason",
                                                     "stop_detail", "failure", "attention")}
            live = self.live.get(session_id)
            if live is not None and live.sources is not None and live.sources.stuck:
                entry["stuck"] = live.sources.stuck  # how long its runtime has been transitional
            attention.append(entry)
        return {"status": {"version": __version__, "accepting": self.services.accepting,
                           "sessions": self.catalog.state_counts(), "live": len(self.live),
                           "attention": attention, "inbox": self.catalog.attention.open_summary(),
                           "notifier_runs": self.catalog.attention.recent_runs(10),
                           "daemon_attention": self.keeper.attention_items()}}

    def list_attention(self, query=None):
        """The open items across every session (or resolved ones, newest first), and the open counts."""
        where, params = ["1"], []
        if query.get("workspace") is not None:
            where.append("workspace_id = ?")
            params.append(self.workspaces.resolve(query["workspace"])["id"])
        for name, column in (("kind", "kind"), ("session_id", "session_id")):
            if query.get(name) is not None:
                where.append(f"{column} = ?")
                params.append(query[name])
        limit = query.get("limit") or DEFAULT_LIMIT
        items = self.catalog.attention
        if query.get("status", "open") == "open":
            found = items.open_items(" AND ".join(where), params, limit)
        else:
            found = items.resolved_items(" AND ".join(where), params, limit)
        return {"items": found, "open": items.open_summary(), "sequence": items.last_change}

    def attention_stream(self, after_sequence=None):
        """Batches of changes: after a number (resumed from the catalog, across restarts), else from now
        after one `inbox` snapshot of the open items."""
        inbox = self.services.inbox
        if after_sequence is None:
            snapshot = {"type": "inbox", "sequence": inbox.items.last_change, "items": inbox.items.open_items()}
            yield [snapshot]
            after_sequence = snapshot["sequence"]
        yield from follow_batches(ChangeLog(inbox), inbox.feed, min(after_sequence, inbox.items.last_change))

    def watch_turns(self, session_id, workspace, body):
        """Opt a session in (or out): a turn that ends while no viewer follows it opens a turn_finished item."""
        session = self._session(session_id, workspace)
        with session.lock:
            if body["turn_finished"]:
                session.record.extra[WATCH_TURNS] = True
            else:
                session.record.extra.pop(WATCH_TURNS, None)
            session.save()
        return {"attention": {"session_id": session.id, "turn_finished": body["turn_finished"]}}

    def answer_attention(self, item_id, body):
        """Run the action of an open item that `option_id` names: the option of a permission request (with
        `content`, the form's fields, for a question's free form), stop, or dismiss (the item resolves at once,
        recorded as dismissed)."""
        validate_id(item_id, "attn", field="item_id", not_found="attention_item_not_found")
        item = self.catalog.attention.item(item_id)
        if item is None:
            raise CompozyError("attention_item_not_found", f"no attention item {item_id}", item_id=item_id)
        if item["status"] != "open":
            raise CompozyError("attention_item_resolved", f"item {item_id} is already resolved: {item['resolution']}",
                               item_id=item_id, resolution=item["resolution"], resolved_at=item["resolved_at"])
        action = next((a for a in item["actions"] if a["id"] == body["option_id"]), None)
        if action is None:
            raise CompozyError("attention_action_not_offered", f"item {item_id} offers no action "
                               f"{body['option_id']!r}", item_id=item_id, offered=[a["id"] for a in item["actions"]])
        if body.get("content") is not None and "content" not in action:
            raise invalid(f"action {action['id']!r} of item {item_id} takes no content (only a question's free "
                          f"form does)", field="content", item_id=item_id)
        result = self._run_action(item, action, body.get("content"))
        return {"item": self.catalog.attention.item(item_id), "action": action["id"], "result": result}

    def _run_action(self, item, action, content=None):
        if action["operation"] is None:
            self.services.inbox.resolve("id = ?", (item["id"],), "dismissed")
            return None
        operation = OPS[action["operation"]]
        arguments = dict(action["with"])
        if "content" in action:  # the form's fields: the operation refuses them missing or not fitting the form
            arguments["content"] = content
        path = {name: arguments.pop(name) for name in operation.path_params}
        result = getattr(self, operation.facade)(**path, body=arguments)
        return dict(result) if result is not None else None
