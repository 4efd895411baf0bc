"""This node in the fleet: it registers, heartbeats and mirrors its session index into the fleet catalog.

Layer 4 (an observer of the daemon's sessions). One thread (`fleet-mirror`, started through services.threads)
does all of it, so nothing the sessions do waits on PostgreSQL: the local catalog commits first, as always;
its change is published on the catalog feed (or the inbox changes a session's count of open items); the
thread reads those, keeps the IDs in a dirty set and writes their rows after. The agents' output path never
meets it. When the fleet catalog cannot be reached, the dirty set is kept and the thread says so once in the
log; when it answers again the node registers again and sends every row (a full resync), as at start.
"""

import logging
import threading

from compozy.fleet.catalog import FleetDown

log = logging.getLogger("compozy.fleet")

TICK_SECONDS = 0.25  # how often the thread reads what changed
HEARTBEAT_SECONDS = 2.0
BATCH = 500


def free_memory(meminfo="/proc/meminfo"):
    """Bytes of memory available to new processes (MemAvailable), 0 when unknown."""
    try:
        with open(meminfo, encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class FleetMirror:
    def __init__(self, services, settings, catalog, version, rows_of, workspaces_of, node_changed, fence):
        """rows_of(ids) -> (mirror rows of the sessions still indexed here, the IDs that are not);
        workspaces_of() -> [(name, workspace_id, path, shared_storage)] of this node; node_changed(node): another
        node's status (catalog.nodes() row) is not what this node saw before (or seen the first time); fence(taken):
        sessions another node adopted from this one ({session_id: (node, token)}): this node must not run them."""
        self.services, self.settings, self.catalog, self.version = services, settings, catalog, version
        self.rows_of, self.workspaces_of, self.node_changed, self.fence = rows_of, workspaces_of, node_changed, fence
        self._statuses = {}
        self.address = settings.advertise
        self._dirty, self._lock = set(), threading.Lock()
        self._wake, self._stopped = threading.Event(), threading.Event()
        self._joined, self._down_since = False, None
        self._feed_cursor = services.catalog_feed.last_sequence
        self._attention_change = 0
        self._workspaces = None
        self._next_heartbeat = 0.0
        self._thread = None

    @property
    def node(self):
        return self.settings.node

    # -- observer signals ---------------------------------------------------------------------

    def started(self):
        self._attention_change = self.services.catalog.attention.last_change
        self._thread = self.services.threads.start("fleet-mirror", self._run)

    def created(self, record):
        self.mark(record.id)

    def removed(self, record):
        self.mark(record.id)

    def state_changed(self, session, old, new):
        self.mark(session.id)

    def leave(self):
        """The daemon's last word (after its sessions stopped): their rows as they ended, then this node stopped."""
        self._stopped.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(5)
        try:
            if self._joined:
                self._flush()
                self.catalog.leave(self.node)
        except FleetDown as exc:
            log.warning("fleet: could not say this node left: %s", exc)
        self.catalog.close()

    def mark(self, *session_ids):
        with self._lock:
            self._dirty.update(session_ids)
        self._wake.set()

    def pending(self):
        with self._lock:
            return len(self._dirty)

    # -- the thread -------------------------------------------------------------------------------

    def _run(self):
        while not self._stopped.is_set():
            try:
                if not self._joined:
                    self._join()
                self._changes()
                self._sync_workspaces()
                if self.services.clock.monotonic() >= self._next_heartbeat:
                    self._heartbeat()
                self._flush()
                if self._down_since is not None:
                    log.info("fleet: the catalog answers again")
                    self._down_since = None
            except FleetDown as exc:
                self._joined = False
                if self._down_since is None:
                    self._down_since = self.services.clock.monotonic()
                    log.warning("fleet: this node cannot join the fleet catalog (%s); it keeps its changes and "
                                "sends them when it can", exc)
            except Exception:  # noqa: BLE001 (the mirror never takes the daemon down)
                log.exception("fleet: the mirror failed; it tries again")
                self._down_since = self._down_since or self.services.clock.monotonic()
            self._wake.wait(TICK_SECONDS if self._down_since is None else HEARTBEAT_SECONDS)
            self._wake.clear()

    def _join(self):
        """Register (again) and send every row: after the start or an outage nothing that changed is lost."""
        self.catalog.create_tables()
        self.catalog.register(self.node, self.address, self.version, self.settings.max_agents)
        self._fence()  # before the resync: a session adopted while this node was away is not sent back
        self._workspaces = None
        local = set(self.services.catalog.session_ids())
        gone = self.catalog.mirrored_ids(self.node) - local
        self.catalog.delete_sessions(self.node, gone)
        held = [i for i in local if (self.services.catalog.session_flags(i) or {}).get("orphaned") is False]
        for session_id, node in self.catalog.held_elsewhere(self.node, held).items():
            log.error("fleet: session %s is held here but the fleet catalog names node %s for it (a commit the "
                      "catalog lost?): its row stays %s's until that is settled", session_id, node, node)
        self.mark(*local)
        self._next_heartbeat = 0.0
        self._joined = True
        log.info("fleet: node %s joined at %s", self.node, self.address)

    def _changes(self):
        items = self.services.catalog_feed.after(self._feed_cursor, 0)
        if items is None:  # fell behind the feed's ring: every session again
            self._feed_cursor = self.services.catalog_feed.last_sequence
            self.mark(*self.services.catalog.session_ids())
        else:
            for item in items:
                self._feed_cursor = item["sequence"]
                if item.get("session_id"):
                    self.mark(item["session_id"])
        for item in self.services.catalog.attention.changes_after(self._attention_change):
            self._attention_change = max(self._attention_change, item.get("changed") or 0)
            if item.get("session_id"):
                self.mark(item["session_id"])

    def _heartbeat(self):
        live = [s for s in self.services.live_sessions() if s.runtime is not None]
        self.catalog.heartbeat(self.node, free_memory(), len(live), len(self.services.catalog.session_ids()))
        self._next_heartbeat = self.services.clock.monotonic() + HEARTBEAT_SECONDS
        self._fence()
        for node in self.catalog.nodes():
            status = "up" if node["up"] else "stopped" if node["stopped"] else "unreachable"
            if node["name"] != self.node and self._statuses.get(node["name"]) != status:
                self._statuses[node["name"]] = status
                self.node_changed(node)

    def _fence(self):
        taken = self.catalog.taken_from(self.node)
        if taken:
            self.fence(taken)
            self.catalog.fenced(self.node, list(taken))

    def _sync_workspaces(self):
        """This node's workspaces, when they changed (a placement looks them up)."""
        workspaces = sorted(self.workspaces_of())
        if workspaces != self._workspaces:
            self.catalog.set_workspaces(self.node, workspaces)
            self._workspaces = workspaces

    def _flush(self):
        with self._lock:
            dirty, self._dirty = sorted(self._dirty), set()
        try:
            for start in range(0, len(dirty), BATCH):
                if start and self.services.clock.monotonic() >= self._next_heartbeat:
                    self._heartbeat()  # a resync of thousands of sessions must not make this node look dead
                rows, gone = self.rows_of(dirty[start:start + BATCH])
                self.catalog.upsert_sessions(rows)
                self.catalog.delete_sessions(self.node, gone)
        except BaseException:
            self.mark(*dirty)  # kept for the next try (after a full resync, they are among all)
            raise
