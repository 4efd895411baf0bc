"""The fleet catalog in PostgreSQL: the nodes, their workspaces, the mirror of every node's session index,
and the adoption leases.

Layer 2 (storage). peewee's PostgresqlDatabase (playhouse's pooled one) with psycopg (3) as the driver; peewee models define the
tables, the statements on the hot paths are raw SQL. Time is PostgreSQL's own (`now()`, seconds since the
epoch): a heartbeat and its age are measured by one clock whatever the hosts' clocks say. A thread takes a
connection of a small pool for each block of statements (a node holds at most POOL_SIZE, whatever its number
of request threads); a statement that fails on a lost connection is tried once more on another. Every failure
reaches the caller as FleetDown.
"""

import logging
from contextlib import contextmanager

from peewee import (BigIntegerField, BooleanField, CompositeKey, DatabaseError, DoubleField, ImproperlyConfigured,
                    IntegerField, InterfaceError, Model, TextField)
from playhouse.pool import MaxConnectionsExceeded, PooledPostgresqlDatabase

log = logging.getLogger("compozy.fleet")

CONNECT_TIMEOUT = 3
POOL_SIZE = 8  # connections a node holds at most (its request threads share them; PostgreSQL allows ~100 in all)
POOL_WAIT = 5  # seconds a statement waits for a free connection
STALE_SECONDS = 300
STATEMENT_TIMEOUT_MS = 5000
SCHEMA_LOCK = 0x636F6D70  # pg_advisory_xact_lock key: one node creates the tables at a time
NOW = "extract(epoch from clock_timestamp())"
SESSION_COLUMNS = ("id", "node", "workspace_id", "workspace", "name", "state", "runtime_status", "agent_name",
                   "archived", "parent_session_id", "root_session_id", "attention", "updated_at", "folder", "resource")
NODE_COLUMNS = ("name", "address", "version", "started_at", "last_heartbeat", "stopped", "max_agents",
                "free_memory", "live_agents", "sessions")


# The sessions each node holds, archived or not, kept by a trigger in the transaction that changes a row: an
# unfiltered fleet list's total is a sum over a few rows, not a count over every session (a count over 100,000
# rows took 20-80 ms here). A filtered list counts its rows (through the filter's index).
COUNTS = (
    "CREATE TABLE IF NOT EXISTS fleet_counts (node TEXT NOT NULL, archived BOOLEAN NOT NULL, "
    "sessions BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (node, archived))",
    """CREATE OR REPLACE FUNCTION fleet_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE fleet_counts SET sessions = sessions - 1 WHERE node = OLD.node AND archived = OLD.archived;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO fleet_counts (node, archived, sessions) VALUES (NEW.node, NEW.archived, 1)
      ON CONFLICT (node, archived) DO UPDATE SET sessions = fleet_counts.sessions + 1;
  END IF;
  RETURN NULL;
END $$""",
    "DROP TRIGGER IF EXISTS fleet_sessions_insert_delete ON fleet_sessions",
    "CREATE TRIGGER fleet_sessions_insert_delete AFTER INSERT OR DELETE ON fleet_sessions "
    "FOR EACH ROW EXECUTE FUNCTION fleet_count()",
    "DROP TRIGGER IF EXISTS fleet_sessions_moved ON fleet_sessions",
    "CREATE TRIGGER fleet_sessions_moved AFTER UPDATE OF node, archived ON fleet_sessions FOR EACH ROW "
    "WHEN (OLD.node IS DISTINCT FROM NEW.node OR OLD.archived IS DISTINCT FROM NEW.archived) "
    "EXECUTE FUNCTION fleet_count()",
)


class FleetDown(Exception):
    """The fleet catalog cannot be reached (or refused a statement); the message says why."""


def make_models(db):
    class Base(Model):
        class Meta:
            database = db

    class Node(Base):
        name = TextField(primary_key=True)
        address = TextField()
        version = TextField()
        started_at = DoubleField()
        last_heartbeat = DoubleField()
        stopped = BooleanField(default=False)
        max_agents = IntegerField(default=0)
        free_memory = BigIntegerField(default=0)
        live_agents = IntegerField(default=0)
        sessions = IntegerField(default=0)

        class Meta:
            table_name = "fleet_nodes"

    class Workspace(Base):
        node = TextField()
        name = TextField()
        workspace_id = TextField()
        path = TextField()
        shared_storage = BooleanField(default=False)

        class Meta:
            table_name = "fleet_workspaces"
            primary_key = CompositeKey("node", "name")

    class Session(Base):
        id = TextField(primary_key=True)
        node = TextField(index=True)
        workspace_id = TextField()
        workspace = TextField(index=True)
        name = TextField(null=True)
        state = TextField()
        runtime_status = TextField(null=True)
        agent_name = TextField()
        archived = BooleanField(default=False)
        parent_session_id = TextField(null=True, index=True)
        root_session_id = TextField(index=True)
        attention = IntegerField(default=0)
        updated_at = TextField()
        folder = TextField()  # the session's folder on its node (an adopter reaches it on shared storage)
        resource = TextField()

        class Meta:
            table_name = "fleet_sessions"
            indexes = ((("archived", "id"), False),)

    class Lease(Base):
        session_id = TextField(primary_key=True)
        node = TextField()
        token = BigIntegerField()  # the fencing token: one more at every adoption
        previous_node = TextField(null=True, index=True)  # the node it was taken from, until that node fenced it
        acquired_at = DoubleField()

        class Meta:
            table_name = "fleet_leases"

    return Node, Workspace, Session, Lease


class FleetCatalog:
    def __init__(self, url, lapse=15):
        """lapse: seconds without a heartbeat after which a node is unreachable ([fleet] unreachable_after)."""
        self.alive = f"(n.stopped = false AND {NOW} - n.last_heartbeat <= {float(lapse)})"
        self.db = PooledPostgresqlDatabase(url, prefer_psycopg3=True, max_connections=POOL_SIZE, timeout=POOL_WAIT,
                                           stale_timeout=STALE_SECONDS, connect_timeout=CONNECT_TIMEOUT,
                                           options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}")
        self.models = make_models(self.db)
        try:
            self.db._adapter.check_driver()
        except ImproperlyConfigured:
            raise FleetDown("the PostgreSQL driver psycopg is not installed: pip install 'psycopg[binary]' "
                            "(or compozy[fleet])") from None

    @contextmanager
    def _statements(self):
        """A connection of the pool for the statements of the block (given back after it; one that failed is
        closed, so the pool never hands it out again)."""
        try:
            with self.db.connection_context():
                yield self.db
        except (DatabaseError, InterfaceError, OSError, MaxConnectionsExceeded) as exc:
            raise FleetDown(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__) from None

    def _rows(self, sql, params=()):
        """The statement's rows; a failure is tried once more (a pooled connection PostgreSQL closed since, by a
        restart, fails once; every statement here may run twice)."""
        try:
            with self._statements() as db:
                return db.execute_sql(sql, params).fetchall()
        except FleetDown:
            self._drop_idle()  # the others were opened before the same restart: none is handed out again
        with self._statements() as db:
            return db.execute_sql(sql, params).fetchall()

    def _drop_idle(self):
        try:
            self.db.close_idle()
        except (DatabaseError, InterfaceError, OSError):
            pass

    def close(self):
        try:
            self.db.close_all()
        except (DatabaseError, InterfaceError, OSError):
            pass

    def create_tables(self):
        with self._statements() as db, db.atomic():
            db.execute_sql("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            db.create_tables(self.models, safe=True)
            for statement in COUNTS:
                db.execute_sql(statement)

    # -- nodes ------------------------------------------------------------------------------

    def register(self, name, address, version, max_agents):
        """This node joins (or joins again): its address and version, a fresh heartbeat, not stopped. FleetDown
        when a node of that name at another address is up (two nodes must not share a name)."""
        holder = self._rows(f"SELECT n.address FROM fleet_nodes n WHERE n.name = %s AND {self.alive}", (name,))
        if holder and holder[0][0] != address:
            raise FleetDown(f"node {name!r} is up at {holder[0][0]}: give this node a name of its own "
                            f"(fleet.node), or stop that one")
        self._rows(f"INSERT INTO fleet_nodes (name, address, version, started_at, last_heartbeat, stopped, max_agents, "
                   f"free_memory, live_agents, sessions) VALUES (%s, %s, %s, {NOW}, {NOW}, false, %s, 0, 0, 0) "
                   f"ON CONFLICT (name) DO UPDATE SET address = excluded.address, version = excluded.version, "
                   f"started_at = excluded.started_at, last_heartbeat = excluded.last_heartbeat, stopped = false, "
                   f"max_agents = excluded.max_agents RETURNING name", (name, address, version, max_agents))

    def heartbeat(self, name, free_memory, live_agents, sessions):
        self._rows(f"UPDATE fleet_nodes SET last_heartbeat = {NOW}, stopped = false, free_memory = %s, "
                   f"live_agents = %s, sessions = %s WHERE name = %s RETURNING name",
                   (free_memory, live_agents, sessions, name))

    def leave(self, name):
        """A graceful stop: the node says it is gone rather than letting its heartbeat lapse."""
        self._rows("UPDATE fleet_nodes SET stopped = true WHERE name = %s RETURNING name", (name,))

    def nodes(self):
        """Every node with its age since the last heartbeat and whether it is up (PostgreSQL's clock)."""
        rows = self._rows(f"SELECT {', '.join('n.' + c for c in NODE_COLUMNS)}, {NOW} - n.last_heartbeat, {self.alive} "
                          f"FROM fleet_nodes n ORDER BY n.name")
        return [_node(row) for row in rows]

    def workspaces(self):
        """{node: [{"name", "path", "shared_storage"}]}: what each node serves, by name."""
        found = {}
        for node, name, path, shared in self._rows("SELECT node, name, path, shared_storage FROM fleet_workspaces "
                                                   "ORDER BY node, name"):
            found.setdefault(node, []).append({"name": name, "path": path, "shared_storage": bool(shared)})
        return found

    def node(self, name):
        return next((n for n in self.nodes() if n["name"] == name), None)

    # -- workspaces ---------------------------------------------------------------------------

    def set_workspaces(self, node, workspaces):
        """This node's workspaces: [(name, workspace_id, path, shared_storage)], replacing what it said before."""
        with self._statements() as db, db.atomic():
            db.execute_sql("DELETE FROM fleet_workspaces WHERE node = %s", (node,))
            if workspaces:
                db.cursor().executemany("INSERT INTO fleet_workspaces (node, name, workspace_id, path, shared_storage) "
                                        "VALUES (%s, %s, %s, %s, %s)", [(node, *w) for w in workspaces])

    def workspace_known(self, workspace):
        return bool(self._rows("SELECT 1 FROM fleet_workspaces WHERE name = %s OR workspace_id = %s LIMIT 1",
                               (workspace, workspace)))

    def place(self, workspace=None, path=None):
        """The node that has the workspace (by name or ID, or a path) and the most free capacity: (name, address),
        None when no node that is up has it."""
        where, values = ("(w.name = %s OR w.workspace_id = %s)", (workspace, workspace)) if workspace is not None \
            else ("w.path = %s", (path,))
        rows = self._rows(f"SELECT n.name, n.address FROM fleet_nodes n JOIN fleet_workspaces w ON w.node = n.name "
                          f"WHERE {where} AND {self.alive} ORDER BY n.max_agents - n.live_agents DESC, "
                          f"n.free_memory DESC, n.name LIMIT 1", values)
        return tuple(rows[0]) if rows else None

    # -- the session mirror ---------------------------------------------------------------------

    def upsert_sessions(self, rows):
        """Mirror rows (SESSION_COLUMNS order). A row another node owns now (adopted) is left alone: a node
        that lost a session never writes it back."""
        if not rows:
            return
        columns = ", ".join(SESSION_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in SESSION_COLUMNS[1:] if c != "node")
        with self._statements() as db:
            db.cursor().executemany(
                f"INSERT INTO fleet_sessions ({columns}) VALUES ({', '.join(['%s'] * len(SESSION_COLUMNS))}) "
                f"ON CONFLICT (id) DO UPDATE SET {updates} WHERE fleet_sessions.node = excluded.node", rows)

    def delete_sessions(self, node, session_ids):
        if session_ids:
            self._rows("DELETE FROM fleet_sessions WHERE node = %s AND id = ANY(%s) RETURNING id",
                       (node, list(session_ids)))

    def session_count(self, node):
        """The sessions a node holds that are not archived, as its mirrored rows say."""
        return self._rows("SELECT COUNT(*) FROM fleet_sessions WHERE node = %s AND archived = false", (node,))[0][0]

    def held_elsewhere(self, node, session_ids):
        """{session_id: node} of these sessions whose row names another node."""
        rows = self._rows("SELECT id, node FROM fleet_sessions WHERE id = ANY(%s) AND node <> %s",
                          (list(session_ids), node))
        return dict(rows)

    def mirrored_ids(self, node):
        return {row[0] for row in self._rows("SELECT id FROM fleet_sessions WHERE node = %s", (node,))}

    def owner(self, session_id):
        """{"node", "address", "up"} of the node that owns the session, None when the fleet has no such session."""
        rows = self._rows(f"SELECT s.node, n.address, COALESCE({self.alive}, false) FROM fleet_sessions s "
                          f"LEFT JOIN fleet_nodes n ON n.name = s.node WHERE s.id = %s", (session_id,))
        return {"node": rows[0][0], "address": rows[0][1], "up": bool(rows[0][2])} if rows else None

    # -- adoption: a lease with a fencing token -------------------------------------------------------

    def adoption(self, session_id):
        """What an adoption checks: {"node", "up", "workspace", "folder", "shared_storage", "path"} (path: the
        workspace's on that node), None when the fleet has no such session."""
        rows = self._rows(f"SELECT s.node, COALESCE({self.alive}, false), s.workspace, s.folder, "
                          f"COALESCE(w.shared_storage, false), w.path FROM fleet_sessions s "
                          f"LEFT JOIN fleet_nodes n ON n.name = s.node "
                          f"LEFT JOIN fleet_workspaces w ON w.node = s.node AND w.name = s.workspace WHERE s.id = %s",
                          (session_id,))
        if not rows:
            return None
        node, up, workspace, folder, shared, path = rows[0]
        return {"node": node, "up": bool(up), "workspace": workspace, "folder": folder, "shared_storage": bool(shared),
                "path": path}

    def take_lease(self, session_id, from_node, to_node):
        """Move the session from from_node to to_node, in one transaction, when from_node still owns it and is
        still not up: the new fencing token, or None when either changed meanwhile."""
        with self._statements() as db, db.atomic():
            row = db.execute_sql(f"SELECT s.node, COALESCE({self.alive}, false) FROM fleet_sessions s "
                                 f"LEFT JOIN fleet_nodes n ON n.name = s.node WHERE s.id = %s FOR UPDATE OF s",
                                 (session_id,)).fetchone()
            if row is None or row[0] != from_node or row[1]:
                return None
            token = db.execute_sql(
                f"INSERT INTO fleet_leases (session_id, node, token, previous_node, acquired_at) "
                f"VALUES (%s, %s, 1, %s, {NOW}) ON CONFLICT (session_id) DO UPDATE SET node = excluded.node, "
                f"token = fleet_leases.token + 1, previous_node = excluded.previous_node, "
                f"acquired_at = excluded.acquired_at RETURNING token", (session_id, to_node, from_node)).fetchone()[0]
            db.execute_sql("UPDATE fleet_sessions SET node = %s WHERE id = %s", (to_node, session_id))
        return token

    def lease(self, session_id):
        """(node, token) of the session's lease, None when no node ever adopted it."""
        rows = self._rows("SELECT node, token FROM fleet_leases WHERE session_id = %s", (session_id,))
        return (rows[0][0], rows[0][1]) if rows else None

    def taken_from(self, node):
        """{session_id: (new node, token)} of the sessions adopted from this node that it has not fenced yet."""
        rows = self._rows("SELECT session_id, node, token FROM fleet_leases WHERE previous_node = %s", (node,))
        return {row[0]: (row[1], row[2]) for row in rows}

    def fenced(self, node, session_ids):
        """The node lost these sessions and knows it."""
        if session_ids:
            self._rows("UPDATE fleet_leases SET previous_node = NULL WHERE previous_node = %s AND session_id = ANY(%s) "
                       "RETURNING session_id", (node, list(session_ids)))

    def list_sessions(self, filters, limit, cursor=None):
        """A page of the fleet's sessions, newest first, keyset by ID: ([(id, resource, node, node up, open items)],
        has_more, total) with the node's open attention items; filters as the local list's (compozy.session.records.listing), the workspace by
        name or ID."""
        where, params = [], []
        if filters.get("workspace") is not None:
            where.append("(s.workspace = %s OR s.workspace_id = %s)")
            params += [filters["workspace"]] * 2
        for column in ("state", "agent_name", "parent_session_id", "root_session_id"):
            if filters.get(column) is not None:
                where.append(f"s.{column} = %s")
                params.append(filters[column])
        filtered = bool(where)
        archive = filters.get("archive", "exclude")
        if archive != "include":
            where.append("s.archived = %s")
            params.append(archive == "only")
        condition = " AND ".join(where) or "true"
        page_condition = condition + (" AND s.id < %s" if cursor else "")
        page_params = params + ([cursor] if cursor else [])
        rows = self._rows(f"SELECT s.id, s.resource, s.node, COALESCE({self.alive}, false), s.attention FROM fleet_sessions s "
                          f"LEFT JOIN fleet_nodes n ON n.name = s.node WHERE {page_condition} "
                          f"ORDER BY s.id DESC LIMIT %s", page_params + [limit + 1])
        if not filtered:  # the archive view alone: the kept counts
            counted = "" if archive == "include" else " WHERE archived = %s"
            total = self._rows(f"SELECT COALESCE(SUM(sessions), 0)::bigint FROM fleet_counts{counted}", params)[0][0]
        else:
            total = self._rows(f"SELECT COUNT(*) FROM fleet_sessions s WHERE {condition}", params)[0][0]
        return [tuple(r) for r in rows[:limit]], len(rows) > limit, total


def _node(row):
    data = dict(zip(NODE_COLUMNS, row))
    age, up = row[len(NODE_COLUMNS)], row[len(NODE_COLUMNS) + 1]
    data["heartbeat_age"] = round(max(age, 0.0), 3)
    data["up"] = bool(up)
    return data
