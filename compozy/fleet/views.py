"""The fleet's operations on the façade: joining the fleet, the nodes, the fleet list, placement, adopting a
session whose node went away, and the mirror's view of this node's sessions (docs/fleet.md).

Layer 5 (a SessionManager mixin: the façade's fleet half, as compozy.session.lifecycle.inbox_views is its inbox
half). It reads the manager's catalog, store, live sessions and workspaces; the fleet's own parts sit below it:
the fleet catalog (compozy.fleet.catalog), this node's mirror (compozy.fleet.mirror) and the steps of an adoption
(compozy.fleet.adoption). Without a [fleet] table self.fleet is None and every fleet operation answers
fleet_not_configured.
"""

import json
import logging
import shutil
from dataclasses import replace

from compozy import __version__, serialize
from compozy.config_problems import ConfigError
from compozy.errors import CompozyError
from compozy.fleet import adoption
from compozy.fleet.catalog import FleetCatalog, FleetDown
from compozy.fleet.mirror import FleetMirror
from compozy.ids import validate_id
from compozy.session.derive import derivation, rewind
from compozy.session.lifecycle import repair
from compozy.session.lifecycle.boot import Reconciler
from compozy.session.lifecycle.inbox import DISMISS
from compozy.session.records.listing import DEFAULT_LIST_LIMIT
from compozy.session.records.record import SessionRecord
from compozy.store import handover
from compozy.store.meta import read_meta, write_meta

log = logging.getLogger("compozy.manager")


class FleetViews:
    def _join_fleet(self, settings, address):
        """The mirror of this node in the fleet catalog ([fleet] in config.toml), None when in no fleet."""
        if settings is None:
            return None
        if settings.advertise is None:
            settings = replace(settings, advertise=address)
        try:
            catalog = FleetCatalog(settings.database, settings.unreachable_after)
        except FleetDown as exc:
            raise ConfigError(f"{self.services.config.path}: fleet: {exc}") from None
        mirror = FleetMirror(self.services, settings, catalog, __version__, self._mirror_rows, self._fleet_workspaces,
                             self._node_changed, self._fence)
        return self.services.observers.add(mirror)

    def _leave_fleet(self):
        """At shutdown: the sessions as they stopped, then this node gone."""
        if self.fleet is not None:
            self.fleet.mark(*list(self.live))
            self.fleet.leave()

    def reload_config(self, config):
        """As AgentViews.reload_config; a changed [fleet] table waits for a restart (the node's identity, its
        catalog and its secret are read at start), and the log says so."""
        running = self.fleet.settings if self.fleet is not None else None
        wanted = config.fleet
        if running is not None and wanted is not None and wanted.advertise is None:
            wanted = replace(wanted, advertise=running.advertise)  # the daemon's own address, as at start
        if wanted != running:
            log.warning("fleet: [fleet] in config.toml changed; it is read at start, restart the daemon to apply it")
        super().reload_config(config)

    def _placed_here(self, node):
        """A creation that names a node reaches the façade only when it is this one (or auto placed it here):
        the HTTP surface relays the others to their node."""
        if node is None:
            return
        if self.fleet is None:
            raise CompozyError("fleet_not_configured", f"this daemon is in no fleet, so it cannot place a session "
                                                       f"on node {node!r}", node=node)
        if node not in ("auto", self.fleet.node):
            raise CompozyError("node_not_found", f"this surface cannot reach node {node!r}; ask it over HTTP",
                               node=node)

    def _fleet_catalog(self):
        if self.fleet is None:
            raise CompozyError("fleet_not_configured", "this daemon is in no fleet: add a [fleet] table to "
                                                       "config.toml (docs/fleet.md) and restart it")
        return self.fleet.catalog

    def list_nodes(self):
        """The fleet's nodes: address, version, health, last heartbeat and load."""
        catalog = self._fleet_catalog()
        try:
            nodes, workspaces = catalog.nodes(), catalog.workspaces()
        except FleetDown as exc:
            raise fleet_unavailable(exc) from None
        return {"nodes": [serialize.node_resource(n, n["name"] == self.fleet.node, workspaces.get(n["name"], []))
                          for n in nodes]}

    def _list_fleet(self, query, encoded):
        """The fleet list (GET /api/sessions?scope=fleet): JSON text when encoded, else its document."""
        limit, cursor = query.get("limit") or DEFAULT_LIST_LIMIT, query.get("cursor")
        catalog = self._fleet_catalog()
        filters = {"workspace": query.get("workspace"), "state": query.get("state"), "agent_name": query.get("agent"),
                   "parent_session_id": query.get("parent"), "root_session_id": query.get("root"),
                   "archive": query.get("archive", "exclude")}
        try:
            if filters["workspace"] is not None and not catalog.workspace_known(filters["workspace"]):
                raise CompozyError("workspace_not_found", f"no node of the fleet has a workspace {filters['workspace']!r}",
                                   workspace=filters["workspace"])
            rows, has_more, total = catalog.list_sessions(filters, limit, cursor)
        except FleetDown as exc:
            raise fleet_unavailable(exc) from None
        page = {"limit": limit, "total": total, "has_more": has_more,
                "next_cursor": rows[-1][0] if has_more and rows else None}
        texts, open_items = [], {}
        for session_id, text, node, up, attention in rows:
            if attention:
                open_items[session_id] = attention
            where = serialize.encode({"name": node, "status": "up" if up else "node_unreachable"})
            texts.append(f'{text[:-1]},"node":{where}}}')  # the owner's row (a JSON object) with its node
        text = serialize.JSONText(f'{{"sessions":[{",".join(texts)}],"page":{serialize.encode(page)},'
                                  f'"open_items":{serialize.encode(open_items)},"scope":"fleet"}}')
        return text if encoded else json.loads(text)

    def _mirror_rows(self, session_ids):
        """The fleet catalog's rows of these sessions (compozy.fleet.catalog.SESSION_COLUMNS), and the IDs this
        node no longer indexes."""
        counts = self.catalog.attention.counts(list(session_ids))
        names = {w["id"]: w["name"] for w in self.workspaces.list()}
        rows, gone = [], []
        for session_id in session_ids:
            live = self.live.get(session_id)
            flags = self.catalog.session_flags(session_id)
            record = live.record if live is not None else self.store.get(session_id) if flags else None
            if record is None or not flags or flags["orphaned"]:
                gone.append(session_id)
                continue
            resource = self._resource(record)
            lineage = record.lineage or {}
            rows.append((record.id, self.fleet.node, record.workspace_id, names.get(record.workspace_id, ""),
                         record.name, record.state, record.runtime.status, record.agent_name, bool(record.archived),
                         lineage.get("parent_session_id"), lineage.get("root_session_id") or record.id,
                         counts.get(session_id, 0), record.updated_at, str(self.home.session_dir(record.id)),
                         serialize.encode(resource)))
        return rows, gone

    def _node_changed(self, node):
        """Another node's heartbeat lapsed (the attention item node_unreachable opens, once), or it answers again
        or said it stopped (the item resolves)."""
        cause = f"node:{node['name']}"
        if node["up"] or node["stopped"]:
            self.services.inbox.resolve_cause(cause, "the node answers again" if node["up"] else "the node stopped")
            return
        sessions = self.fleet.catalog.session_count(node["name"])
        summary = (f"fleet node {node['name']} does not answer (no heartbeat for {node['heartbeat_age']:.0f} s); "
                   f"its {sessions} sessions cannot be reached")
        self.services.inbox.open(cause, "node_unreachable", None, summary, [DISMISS],
                                 {"node": node["name"], "address": node["address"], "sessions": sessions})

    def adopt_session(self, session_id):
        """Take over a session whose node went away, from shared storage, under a new lease (docs/fleet.md). One
        adoption of a session at a time: a second while one is under way is refused (reason in_progress)."""
        self._require_admission()
        catalog = self._fleet_catalog()
        validate_id(session_id, "sess", not_found="session_not_found")
        with self._live_lock:
            if session_id in self._adopting:
                raise adoption.refuse(session_id, "in_progress", f"an adoption of session {session_id} is under way "
                                                                 f"on this node: ask again when it ends")
            self._adopting.add(session_id)
        try:
            return self._adopt(catalog, session_id)
        finally:
            with self._live_lock:
                self._adopting.discard(session_id)

    def _adopt(self, catalog, session_id):
        """The steps in an order a crash can resume from: the lease, the copy repointed and its control rows
        written, the folder in place and indexed, and only then the old node's folder removed (a retry finds the
        lease here and starts again from the old folder)."""
        adopting = self.home.root / "adopting"
        flags = self.catalog.session_flags(session_id)
        if flags is not None and not flags["orphaned"]:
            adoption.finish(adopting, session_id)  # one a crash cut short after its folder was in place
            raise adoption.refuse(session_id, "already_here", f"session {session_id} is this node's already")
        resumed = adoption.resumable(catalog, session_id, self.fleet.node, adopting)
        found, token = resumed or (adoption.check(catalog, session_id, self.fleet.node, self._workspace_named), None)
        staging, target = adoption.staging_folder(adopting, session_id), self.home.session_dir(session_id)
        rows = adoption.gather(session_id, found, staging)  # the folder and its control rows, or nothing moved
        if token is None:
            adoption.note(adopting, session_id, found)
            try:
                token = catalog.take_lease(session_id, found["node"], self.fleet.node)
            except FleetDown as exc:
                reason = str(exc)
            else:
                reason = f"node {found['node']!r} answers again, or another node adopted the session first"
            if token is None:
                shutil.rmtree(staging, ignore_errors=True)
                adoption.forget(adopting, session_id)
                raise adoption.refuse(session_id, "lease_lost", f"the lease was not taken: {reason}",
                                      node=found["node"])
        record = SessionRecord.from_dict(read_meta(staging / "meta.json"))
        shadow = adoption.node_home(session_id, found).checkpoints_dir / record.workspace_id  # the old node's
        adoption.repoint(record, self._workspace_named(found["workspace"]), found["path"], token, self.fleet.node,
                         found["node"])
        write_meta(staging / "meta.json", record.to_dict())  # whole before it is in place: a boot may index it
        handover.write_session_rows(self.catalog, session_id, rows, record.workspace_id)
        adoption.settle_in(staging, target)
        self.store.logs.forget(session_id)
        self.store.save(record, touch=False)
        self.catalog.set_orphaned(session_id, False)
        self.services.checkpoints.carry(record, shadow, found["node"])  # before the repair takes the cut turn's end one
        adoption.leave_source(found["folder"])
        adoption.forget(adopting, session_id)
        repair.repair_adopted(self.store, record, self.services.processes, self.services.checkpoints)  # as a boot
        self._settle_derived(session_id, found)
        record = self.store.get(session_id)  # as the rewind it finished may have left it
        Reconciler(self.store).rebuild_ledger([session_id])  # its usage, from its events, as for a folder a boot finds
        self.services.inbox.adopted(record)
        log.warning("adopted session %s from node %s (lease token %s)", session_id, found["node"], token)
        self._catalog_changed("upserted", record)
        self.fleet.mark(session_id)
        return {"session": self._resource(record, precise=True),
                "adoption": {"from_node": found["node"], "lease_token": token}}

    def _settle_derived(self, session_id, found):
        """Its rewinds and derivations an unclean exit interrupted, settled as a boot settles its own: a pending
        rewind finished from its receipt; a continue or fork caught mid-creation stands when its new session was
        written whole (here, or in the old node's home, where it stays until adopted itself), else is withdrawn."""
        home = adoption.node_home(session_id, found)

        def elsewhere(child_id):
            document = adoption.meta_there(home, child_id)
            return SessionRecord.from_dict(document) if document is not None else None

        rewind.finish_interrupted(self.store, only=session_id)
        derivation.settle_interrupted(self.store, only=session_id, elsewhere=elsewhere)

    def _workspace_named(self, name):
        return self.catalog.workspace_by(name=name)

    def _fence(self, taken):
        """Sessions another node adopted from this one ({id: (node, token)}): never run here again."""
        for session_id, (node, token) in taken.items():
            flags = self.catalog.session_flags(session_id)
            if flags is None or flags["orphaned"]:
                continue
            self.catalog.set_orphaned(session_id)  # first: no request reaches it here from now on
            with self._live_lock:
                session = self.live.pop(session_id, None)
            log.warning("session %s was adopted by node %s (lease token %s): this node no longer runs it",
                        session_id, node, token)
            if session is not None and session.runtime is not None:
                self._drop_runtime(session)

    def _drop_runtime(self, session):
        """The agent a fenced session still ran here, ended (its folder may be gone: nothing is written)."""
        try:
            session.runtime.process.kill_tree(1.0, 1.0)
        except Exception:  # noqa: BLE001 (the fence holds whatever the agent does)
            log.exception("could not end the agent of fenced session %s", session.id)

    def _fleet_workspaces(self):
        shared = set(self.fleet.settings.shared_storage)
        return [(w["name"], w["id"], w["path"], w["name"] in shared) for w in self.workspaces.list()]



def fleet_unavailable(exc):
    return CompozyError("fleet_catalog_unavailable", f"the fleet catalog (PostgreSQL) cannot be reached: {exc}")
