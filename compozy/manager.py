"""SessionManager: the façade every surface calls; one public method per operation.

Layer 5. HTTP routes, the CLI (through HTTP) and the in-process test surface all reach the
daemon's behaviour through these methods, which return the documents the API answers.
"""

import logging

from compozy import serialize
from compozy.errors import CompozyError, invalid
from compozy.ids import is_valid_id, validate_id
from compozy.session.boot import Reconciler
from compozy.session.creation import create_session
from compozy.session.feed import Feed
from compozy.session.records import SessionStore
from compozy.session.workspaces import Workspaces
from compozy.store.catalog import Catalog
from compozy.store.eventlog import EventLogPool
from compozy import validate as v

log = logging.getLogger("compozy.manager")

LIST_FILTERS = ("workspace", "parent", "root", "state", "agent", "archive", "limit", "cursor")
MAX_LIST_LIMIT = 1000
DEFAULT_LIST_LIMIT = 100


class SessionManager:
    def __init__(self, home, config):
        self.home, self.config = home.ensure(), config
        self.catalog = Catalog(home.catalog_file)
        self.logs = EventLogPool(home)
        self.store = SessionStore(home, self.catalog, self.logs)
        self.workspaces = Workspaces(self.catalog)
        self.catalog_feed = Feed()
        self.accepting = True

    # -- daemon lifecycle ---------------------------------------------------------

    def start(self):
        """Boot: rebuild the index from the directories before anyone can read it."""
        Reconciler(self.store).run()
        return self

    def shutdown(self):
        self.accepting = False
        self.catalog_feed.close()
        self.logs.close_all()
        self.catalog.close()

    # -- workspaces ---------------------------------------------------------------

    def create_workspace(self, body):
        """Register a workspace by name and absolute path."""
        body = v.check_body(body, {"name": v.text(required=True), "path": v.text(required=True)})
        return {"workspace": serialize.workspace_resource(self.workspaces.register(body["name"], body["path"]))}

    def list_workspaces(self):
        """Every registered workspace, by name."""
        return {"workspaces": [serialize.workspace_resource(w) for w in self.workspaces.list()]}

    # -- sessions -----------------------------------------------------------------

    def create_session(self, body):
        """Create a durable logical session: active, runtime unbound, no agent process."""
        self._require_admission()
        document = create_session(body, config=self.config, workspaces=self.workspaces, store=self.store)
        self._catalog_changed("upserted", document)
        return {"session": self._resource(document)}

    def get_session(self, session_id, workspace=None):
        """Read one session (workspace-scoped when workspace is given)."""
        return {"session": self._resource(self._document(session_id, workspace), precise=True)}

    def session_status(self, session_id, workspace=None):
        """Compact status: state in the health vocabulary, lifecycle_state beside it."""
        resource = self._resource(self._document(session_id, workspace), precise=True)
        return {"session": serialize.compact_status(resource)}

    def session_health(self, session_id, workspace=None):
        """The metadata-only health record: state, health, attachable, eligible_for_wake."""
        resource = self._resource(self._document(session_id, workspace))
        return {"health": {"session_id": session_id, **resource["health"]}}

    def inspect_session(self, session_id, workspace=None):
        """Everything a person debugging needs: the resource, files, process, queue, requests, tail."""
        document = self._document(session_id, workspace)
        log = self.store.events(document)
        return {"session": self._resource(document, precise=True),
                "paths": {"directory": str(self.home.session_dir(session_id)),
                          "meta": str(self.home.meta_file(session_id)),
                          "events": str(self.home.events_file(session_id))},
                "process": (document.get("runtime") or {}).get("process"),
                "queue": [serialize.entry_resource(e) for e in self.catalog.entries(session_id)],
                "pending_interactions": [serialize.interaction_resource(i)
                                         for i in self.catalog.interactions(session_id)],
                "recent_events": log.read(limit=20)}

    def list_sessions(self, query=None):
        """Catalog page, newest first, with the interface's filters and keyset cursor."""
        query = dict(query or {})
        unknown = sorted(set(query) - set(LIST_FILTERS))
        if unknown:
            raise invalid(f"unknown filter(s): {', '.join(unknown)}", filters=unknown)
        limit = v.query_int(query.get("limit"), "limit", 1, MAX_LIST_LIMIT) or DEFAULT_LIST_LIMIT
        cursor = query.get("cursor")
        if cursor is not None and not is_valid_id(cursor, "sess"):
            raise invalid("cursor must be the next_cursor of an earlier page", field="cursor")
        documents, has_more, total = self.catalog.list_sessions(self._list_filters(query), limit, cursor)
        sessions = [self._list_row(text) for text in documents]
        next_cursor = sessions[-1]["id"] if has_more and sessions else None
        return {"sessions": sessions,
                "page": {"limit": limit, "total": total, "has_more": has_more, "next_cursor": next_cursor}}

    def remove_session(self, session_id, workspace=None):
        """Stop a live session, then delete its catalog row and directory."""
        document = self._document(session_id, workspace)
        self._before_removal(document)
        self.store.remove(document)
        self._catalog_changed("deleted", document)
        return {"removed": {"session_id": document["id"], "workspace_id": document["workspace_id"]}}

    # -- helpers --------------------------------------------------------------------

    def _require_admission(self):
        if not self.accepting:
            raise CompozyError("new_work_admission_unavailable", "the daemon is shutting down")

    def _document(self, session_id, workspace=None):
        validate_id(session_id, "sess", not_found="session_not_found")
        workspace_id = self.workspaces.resolve(workspace)["id"] if workspace is not None else None
        return self.store.require(session_id, workspace_id)

    def _list_filters(self, query):
        filters = {"archive": query.get("archive", "exclude")}
        if filters["archive"] not in ("exclude", "only", "include"):
            raise invalid("archive must be exclude, only or include", field="archive")
        if query.get("workspace") is not None:
            filters["workspace_id"] = self.workspaces.resolve(query["workspace"])["id"]
        for name, column in (("parent", "parent_session_id"), ("root", "root_session_id")):
            if query.get(name) is not None:
                filters[column] = validate_id(query[name], "sess", field=name)
        if query.get("state") is not None:
            filters["state"] = v._check_value("state", query["state"], v.text(
                choices=("starting", "active", "stopping", "stopped")))
        if query.get("agent") is not None:
            filters["agent_name"] = query["agent"]
        return filters

    def _list_row(self, text):
        import json
        document = json.loads(text)
        return serialize.session_resource(document, self._overlay(document),
                                          (document.get("fences") or {}).get("max_sequence", 0))

    def _resource(self, document, precise=False):
        max_sequence = self.store.events(document).max_active_sequence() if precise else \
            (document.get("fences") or {}).get("max_sequence", 0)
        return serialize.session_resource(document, self._overlay(document), max_sequence)

    def _overlay(self, document):
        return None

    def _before_removal(self, document):
        pass

    def _catalog_changed(self, change, document):
        self.catalog_feed.publish_counted({"type": "session_catalog_changed", "change": change,
                                           "session_id": document["id"],
                                           "workspace_id": document["workspace_id"]})
