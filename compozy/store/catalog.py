"""The global catalog (compozy.db): workspaces, the session index, prompt admissions, the input
queue and pending interactions (rewind receipts and derivations: store/derivations.py).

Layer 2. Session rows are an index over the session directories (rebuildable at boot); the
admission, queue and interaction tables are the daemon's durable control plane.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterable

from peewee import (BooleanField, CharField, IntegerField, IntegrityError, Model, TextField, fn)

from compozy.clock import now_iso
from compozy.errors import CompozyError
from compozy.states import InteractionState
from compozy.store.attention import AttentionItems
from compozy.store.db import Guarded, open_sqlite
from compozy.store.derivations import Derived
from compozy.store.ledger import Ledger
from compozy.store.records import Admission, Interaction, QueueEntry
from compozy.store.rows import marks, select_rows, update_row
from compozy.store.sessionindex import upsert



def make_models(db):
    """Catalog models bound to one database (tests run several catalogs in one process)."""

    class Base(Model):
        class Meta:
            database = db

    class Workspace(Base):
        id = CharField(primary_key=True)
        name = CharField(unique=True)
        path = CharField(unique=True)
        created_at = CharField()

        class Meta:
            table_name = "workspaces"

    class SessionRow(Base):
        id = CharField(primary_key=True)
        workspace_id = CharField(index=True)
        name = CharField(null=True)
        type = CharField()
        agent_name = CharField(index=True)
        state = CharField(index=True)
        archived = BooleanField(default=False)
        parent_session_id = CharField(null=True, index=True)
        root_session_id = CharField(index=True)
        spawn_depth = IntegerField(default=0)
        lineage_kind = CharField(default="")
        orphaned = BooleanField(default=False)
        updated_at = CharField()
        doc = TextField()
        resource = TextField(null=True)  # the rendered read of a session with no live runtime
        meta_mtime = IntegerField(null=True)  # meta.json's mtime when indexed: boot skips unchanged files

        class Meta:
            table_name = "sessions"
            indexes = ((("orphaned", "archived", "id"), False),)

    class Admission(Base):
        id = CharField(primary_key=True)
        session_id = CharField()
        operation = CharField()  # prompt | edit | steer
        message_id = CharField(null=True)
        idempotency_key = CharField()
        fingerprint = CharField()
        state = CharField()
        result = TextField(null=True)
        created_at = CharField()
        updated_at = CharField()

        class Meta:
            table_name = "admissions"
            indexes = ((("session_id", "idempotency_key"), True),)

    class QueueEntry(Base):
        id = CharField(primary_key=True)
        session_id = CharField(index=True)
        priority = IntegerField(default=1)  # 0 runs ahead of the FIFO (interrupt and steer replacements)
        position = IntegerField()
        status = CharField()
        mode = CharField()
        message = TextField()
        message_id = CharField()
        idempotency_key = CharField()
        runtime = TextField()
        turn_id = CharField()
        admission_id = CharField(null=True)
        failure = TextField(null=True)
        budget_override = TextField(null=True)  # the spent budget a person went past (JSON), for the entry's turn
        created_at = CharField()
        updated_at = CharField()

        class Meta:
            table_name = "input_queue"

    class Interaction(Base):
        id = CharField(primary_key=True)
        session_id = CharField(index=True)
        turn_id = CharField(null=True)
        kind = CharField()
        status = CharField()
        payload = TextField()
        decision = CharField(null=True)
        created_at = CharField()
        resolved_at = CharField(null=True)

        class Meta:
            table_name = "pending_interactions"

    return Workspace, SessionRow, Admission, QueueEntry, Interaction


def _row_dict(row):
    return dict(row.__data__)


class Catalog:
    """compozy.db behind one connection and one lock; every method is one short transaction."""

    def __init__(self, path):
        self.guard = Guarded(open_sqlite(path))
        models = make_models(self.guard.db)
        self.Workspace, self.SessionRow, self.Admission, self.QueueEntry, self.Interaction = models
        with self.guard.write() as db:
            db.create_tables(models)
            db.execute_sql("CREATE UNIQUE INDEX IF NOT EXISTS admissions_message ON admissions "
                           "(session_id, message_id) WHERE message_id IS NOT NULL AND operation = 'prompt'")
            columns = {row[1] for row in db.execute_sql("PRAGMA table_info(sessions)").fetchall()}
            for column, kind in (("resource", "TEXT"), ("meta_mtime", "INTEGER")):
                if column not in columns:  # catalogs written by an earlier version
                    db.execute_sql(f"ALTER TABLE sessions ADD COLUMN {column} {kind}")
            if "budget_override" not in {row[1] for row in db.execute_sql("PRAGMA table_info(input_queue)")}:
                db.execute_sql("ALTER TABLE input_queue ADD COLUMN budget_override TEXT")
        self.derived = Derived(self.guard)
        self.attention = AttentionItems(self.guard)
        self.ledger = Ledger(self.guard)

    def close(self):
        self.guard.close()

    @contextmanager
    def transaction(self):
        """Several catalog calls as one atomic unit (the lock is re-entrant)."""
        with self.guard.write():
            yield self

    # -- workspaces -------------------------------------------------------------

    def add_workspace(self, workspace_id, name, path):
        try:
            with self.guard.write():
                self.Workspace.create(id=workspace_id, name=name, path=path, created_at=now_iso())
        except IntegrityError:
            raise CompozyError("workspace_conflict", f"a workspace named {name!r} or at {path} exists",
                               name=name, path=path) from None
        return self.workspace(workspace_id)

    def workspace(self, workspace_id):
        with self.guard.read():
            row = self.Workspace.get_or_none(self.Workspace.id == workspace_id)
        return row and _row_dict(row)

    def workspace_by(self, name=None, path=None):
        W = self.Workspace
        with self.guard.read():
            row = W.get_or_none(W.name == name) if name is not None else W.get_or_none(W.path == path)
        return row and _row_dict(row)

    def lost_workspaces(self):
        """{workspace_id: the folders its sessions work in} for the workspaces sessions name and the catalog does
        not know (compozy.db was lost: the sessions came back from their folders, the registry did not)."""
        found = {}
        with self.guard.read() as db:
            rows = db.execute_sql("SELECT workspace_id, json_extract(doc, '$.cwd') FROM sessions WHERE orphaned = 0 "
                                  "AND workspace_id NOT IN (SELECT id FROM workspaces)").fetchall()
        for workspace_id, cwd in rows:
            found.setdefault(workspace_id, set()).update([cwd] if cwd else [])
        return found

    def workspaces(self):
        with self.guard.read():
            return [_row_dict(r) for r in self.Workspace.select().order_by(self.Workspace.name)]

    # -- sessions ---------------------------------------------------------------

    def upsert_sessions(self, rows):
        """Index sessions, one or many at once (sessionindex.session_row rows: a document and its
        rendered read, the JSON text a list returns)."""
        with self.guard.write() as db:
            upsert(db, rows)

    def session_doc(self, session_id):
        with self.guard.read():
            row = self.SessionRow.get_or_none(self.SessionRow.id == session_id)
        return row and json.loads(row.doc)

    def documents_in_states(self, states, where="1"):
        """where: an SQL condition from the code (never a request) that narrows the rows before decoding."""
        states = [str(s) for s in states]
        with self.guard.read() as db:
            rows = db.execute_sql(f"SELECT doc FROM sessions WHERE state IN ({marks(states)}) AND orphaned = 0 "
                                  f"AND ({where})", states).fetchall()
        return [json.loads(r[0]) for r in rows]

    def session_flags(self, session_id):
        with self.guard.read():
            row = self.SessionRow.get_or_none(self.SessionRow.id == session_id)
        return row and {"orphaned": row.orphaned, "workspace_id": row.workspace_id}

    def state_counts(self):
        with self.guard.read() as db:
            return dict(db.execute_sql("SELECT state, COUNT(*) FROM sessions WHERE orphaned = 0 AND archived = 0 "
                                       "GROUP BY state").fetchall())

    def tree_size(self, root_id):
        """The sessions below a root that no TTL governs (provenance, recovery, continue, fork), not archived."""
        with self.guard.read() as db:
            return db.execute_sql("SELECT COUNT(*) FROM sessions WHERE orphaned = 0 AND archived = 0 AND "
                                  "root_session_id = ? AND lineage_kind NOT IN ('', 'spawn')", (root_id,)).fetchone()[0]

    def attention_ids(self, limit):
        """Newest sessions carrying a failure or an attention flag."""
        with self.guard.read() as db:
            rows = db.execute_sql(
                "SELECT id FROM sessions WHERE orphaned = 0 AND archived = 0 AND (json_extract(doc, '$.failure') "
                "IS NOT NULL OR json_extract(doc, '$.attention') IS NOT NULL) ORDER BY id DESC LIMIT ?", (limit,))
            return [r[0] for r in rows.fetchall()]

    def indexed_mtimes(self):
        """{session_id: meta_mtime} of rows that are not orphaned."""
        with self.guard.read() as db:
            return dict(db.execute_sql("SELECT id, meta_mtime FROM sessions WHERE orphaned = 0").fetchall())

    def session_ids(self):
        with self.guard.read():
            return [r[0] for r in self.SessionRow.select(self.SessionRow.id).tuples()]

    def set_orphaned(self, session_id, orphaned=True):
        S = self.SessionRow
        with self.guard.write():
            S.update(orphaned=orphaned).where(S.id == session_id).execute()

    def delete_session(self, session_id):
        with self.guard.write():
            for model in (self.QueueEntry, self.Interaction, self.Admission):
                model.delete().where(model.session_id == session_id).execute()
            self.SessionRow.delete().where(self.SessionRow.id == session_id).execute()
            self.derived.forget_session(session_id)

    def list_sessions(self, filters, limit, cursor=None):
        """Newest first (IDs are ULIDs, so ID order is creation order); keyset paging by ID.

        Rows are (id, text, rendered): text is the stored rendered read when rendered is true,
        else the raw document. Raw SQL: a page of 1,000 must not pay an ORM object per row.
        """
        where, params = ["orphaned = 0"], []
        for column in ("workspace_id", "state", "agent_name", "parent_session_id", "root_session_id"):
            if filters.get(column) is not None:
                where.append(f"{column} = ?")
                params.append(filters[column])
        archive = filters.get("archive", "exclude")
        if archive != "include":
            where.append("archived = ?")
            params.append(1 if archive == "only" else 0)
        condition = " AND ".join(where)
        page_condition = condition + (" AND id < ?" if cursor else "")
        page_params = params + ([cursor] if cursor else [])
        with self.guard.read() as db:
            rows = db.execute_sql(f"SELECT id, COALESCE(resource, doc), resource IS NOT NULL FROM sessions "
                                  f"WHERE {page_condition} ORDER BY id DESC LIMIT ?",
                                  page_params + [limit + 1]).fetchall()
            total = db.execute_sql(f"SELECT COUNT(*) FROM sessions WHERE {condition}", params).fetchone()[0]
        return rows[:limit], len(rows) > limit, total

    # -- prompt admissions and input mutations -----------------------------------

    def _admission_where(self, condition, params):
        # Raw SQL: these lookups run on every prompt, where peewee's query building costs ~1 ms.
        columns = Admission.columns()
        with self.guard.read() as db:
            row = db.execute_sql(f"SELECT {', '.join(columns)} FROM admissions WHERE {condition}", params).fetchone()
        return None if row is None else Admission.from_row(dict(zip(columns, row)))

    def admission(self, session_id: str, idempotency_key: str) -> Admission | None:
        return self._admission_where("session_id = ? AND idempotency_key = ?", (session_id, idempotency_key))

    def admission_by_message(self, session_id: str, message_id: str) -> Admission | None:
        return self._admission_where("session_id = ? AND message_id = ? AND operation = 'prompt'",
                                     (session_id, message_id))

    def add_admission(self, admission: Admission) -> None:
        stamp = now_iso()
        fields = {**admission.to_row(), "created_at": stamp, "updated_at": stamp}
        with self.guard.write() as db:
            db.execute_sql(f"INSERT INTO admissions ({', '.join(fields)}) VALUES ({marks(fields)})",
                           list(fields.values()))

    def update_admission(self, admission_id: str, expected_state: str | None = None, **fields: Any) -> int:
        """Rows changed (0 when the admission is gone or not in expected_state)."""
        if isinstance(fields.get("result"), dict):
            fields["result"] = json.dumps(fields["result"])
        with self.guard.write() as db:
            return update_row(db, "admissions", admission_id, fields, ("state", expected_state))

    def delete_admission(self, admission_id: str, expected_state: str | None = None) -> int:
        A = self.Admission
        where = A.id == admission_id
        if expected_state is not None:
            where &= A.state == expected_state
        with self.guard.write():
            return A.delete().where(where).execute()

    def admissions_in_state(self, state: str) -> list[Admission]:
        A = self.Admission
        with self.guard.read():
            return [Admission.from_row(r.__data__) for r in A.select().where(A.state == state)]

    # -- the durable input queue -------------------------------------------------

    def add_entry(self, entry: QueueEntry) -> QueueEntry | None:
        """The entry at the end of its session's queue."""
        Q = self.QueueEntry
        stamp = now_iso()
        fields = {**entry.to_row(), "runtime": json.dumps(entry.runtime or {}), "created_at": stamp,
                  "updated_at": stamp}
        with self.guard.write():
            last = Q.select(fn.MAX(Q.position)).where(Q.session_id == entry.session_id).scalar() or 0
            Q.create(**{**fields, "position": last + 1})
        return self.entry(entry.session_id, entry.id)

    def _entries(self, where, params, order=""):
        with self.guard.read() as db:
            rows = select_rows(db, "input_queue", QueueEntry.columns(), where, params, order)
        return [QueueEntry.from_row(row) for row in rows]

    def entry(self, session_id: str, entry_id: str) -> QueueEntry | None:
        found = self._entries("id = ? AND session_id = ?", (entry_id, session_id))
        return found[0] if found else None

    def entries(self, session_id: str, statuses: Iterable[str] = ("queued",)) -> list[QueueEntry]:
        """In run order: replacements (priority 0) first, then FIFO by admission position."""
        statuses = list(statuses)
        return self._entries(f"session_id = ? AND status IN ({marks(statuses)})", (session_id, *statuses),
                             "priority, position")

    def count_entries(self, session_id: str, statuses: Iterable[str] = ("queued",)) -> int:
        Q = self.QueueEntry
        with self.guard.read():
            return Q.select().where((Q.session_id == session_id) & (Q.status.in_(list(statuses)))).count()

    def update_entry(self, entry_id: str, expected_status: str | None = None, **fields: Any) -> int:
        """Rows changed (0 when the entry is gone or not in expected_status)."""
        if "runtime" in fields:
            fields["runtime"] = json.dumps(fields["runtime"] or {})
        with self.guard.write() as db:
            return update_row(db, "input_queue", entry_id, fields, ("status", expected_status))

    def sessions_with_entries(self, statuses: Iterable[str]) -> list[str]:
        Q = self.QueueEntry
        with self.guard.read():
            return sorted({r[0] for r in Q.select(Q.session_id).where(Q.status.in_(list(statuses))).tuples()})

    # -- pending interactions (permission requests) -------------------------------

    def add_interaction(self, interaction: Interaction) -> None:
        fields = {**interaction.to_row(), "payload": json.dumps(interaction.payload or {}), "created_at": now_iso()}
        with self.guard.write():
            self.Interaction.create(**fields)

    def interactions(self, session_id: str, statuses: Iterable[str] = (InteractionState.PENDING,)) -> list[Interaction]:
        I = self.Interaction
        with self.guard.read():
            rows = I.select().where((I.session_id == session_id) & (I.status.in_(list(statuses))))
            return [Interaction.from_row(r.__data__) for r in rows.order_by(I.created_at)]

    def resolve_interaction(self, interaction_id: str, status: str, decision: str | None = None) -> bool:
        """pending -> status, once; returns False when it was no longer pending."""
        I = self.Interaction
        with self.guard.write():
            changed = (I.update(status=status, decision=decision, resolved_at=now_iso())
                       .where((I.id == interaction_id) & (I.status == InteractionState.PENDING)).execute())
        return bool(changed)

    def orphan_pending_interactions(self, status: str, session_id: str | None = None) -> int:
        I = self.Interaction
        where = I.status == InteractionState.PENDING
        where = where & (I.session_id == session_id) if session_id is not None else where
        with self.guard.write():
            return I.update(status=status, resolved_at=now_iso()).where(where).execute()
