"""The attention inbox's items (compozy.db): what needs a person, across every session.

Layer 2. An item is opened for a cause (a key such as `permission:perm_...` or `attention:sess_...`) and
resolved once, with the resolution recorded; at most one item is open per cause. Every change takes the
next number of one counter (`changed`), so a viewer resumes a stream of changes after the last number it
saw, across daemon restarts: an item's row answers its newest state.
"""

import json

from compozy.clock import now_iso
from compozy.ids import new_id
from compozy.store.rows import marks

DDL = (
    "CREATE TABLE IF NOT EXISTS attention_items (id TEXT PRIMARY KEY, cause TEXT NOT NULL, kind TEXT NOT NULL, "
    "session_id TEXT, workspace_id TEXT, created_at TEXT NOT NULL, summary TEXT NOT NULL, document TEXT NOT NULL, "
    "status TEXT NOT NULL, resolved_at TEXT, resolution TEXT, changed INTEGER NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS attention_open_cause ON attention_items (cause) WHERE status = 'open'",
    "CREATE INDEX IF NOT EXISTS attention_open ON attention_items (status, session_id)",
    "CREATE INDEX IF NOT EXISTS attention_changed ON attention_items (changed)",
    "CREATE TABLE IF NOT EXISTS notify_runs (id TEXT PRIMARY KEY, item_id TEXT, started_at TEXT NOT NULL, "
    "document TEXT NOT NULL)",
)
RUNS_KEPT = 500  # notifier runs kept in the catalog, newest
COLUMNS = ("id", "kind", "session_id", "workspace_id", "created_at", "summary", "document", "status",
           "resolved_at", "resolution", "changed", "cause")
SELECT = f"SELECT {', '.join(COLUMNS)} FROM attention_items"


def item_of(row):
    """The item as every surface shows it."""
    item = dict(zip(COLUMNS, row))
    document = json.loads(item.pop("document"))
    item.pop("cause")
    return {**item, "actions": document.get("actions", []), "details": document.get("details", {})}


class AttentionItems:
    """The table, on the catalog's connection and lock (compozy.store.catalog)."""

    def __init__(self, guard):
        self.guard = guard
        with guard.write() as db:
            for statement in DDL:
                db.execute_sql(statement)
            self._last = db.execute_sql("SELECT COALESCE(MAX(changed), 0) FROM attention_items").fetchone()[0]

    @property
    def last_change(self):
        return self._last

    def _next(self):
        self._last += 1
        return self._last

    def open(self, cause, kind, session_id, workspace_id, summary, actions=(), details=None):
        """The new item, or None when one is already open for this cause."""
        document = json.dumps({"actions": list(actions), "details": details or {}}, separators=(",", ":"))
        with self.guard.write() as db:
            if db.execute_sql("SELECT 1 FROM attention_items WHERE cause = ? AND status = 'open'",
                              (cause,)).fetchone():
                return None
            item_id = new_id("attn")
            db.execute_sql(f"INSERT INTO attention_items (id, cause, kind, session_id, workspace_id, created_at, "
                           f"summary, document, status, changed) VALUES ({marks(range(10))})",
                           (item_id, cause, kind, session_id, workspace_id, now_iso(), summary[:300], document,
                            "open", self._next()))
            return self._one(db, "id = ?", (item_id,))

    def resolve(self, where, params, resolution):
        """Resolve the open items matching an SQL condition (from the code, never a request); answers them."""
        with self.guard.write() as db:
            ids = [r[0] for r in db.execute_sql(f"SELECT id FROM attention_items WHERE status = 'open' AND ({where}) "
                                                "ORDER BY changed", params).fetchall()]
            stamp = now_iso()
            for item_id in ids:
                db.execute_sql("UPDATE attention_items SET status = 'resolved', resolved_at = ?, resolution = ?, "
                               "changed = ? WHERE id = ?", (stamp, resolution[:200], self._next(), item_id))
            return [self._one(db, "id = ?", (item_id,)) for item_id in ids]

    def resolve_cause(self, cause, resolution):
        return self.resolve("cause = ?", (cause,), resolution)

    def item(self, item_id):
        with self.guard.read() as db:
            return self._one(db, "id = ?", (item_id,))

    def open_items(self, where="1", params=(), limit=1000):
        """Open items, oldest first (the order a person answers them in)."""
        with self.guard.read() as db:
            rows = db.execute_sql(f"{SELECT} WHERE status = 'open' AND ({where}) ORDER BY changed LIMIT ?",
                                  (*params, limit)).fetchall()
        return [item_of(row) for row in rows]

    def resolved_items(self, where="1", params=(), limit=200):
        """Resolved items, the newest resolution first."""
        with self.guard.read() as db:
            rows = db.execute_sql(f"{SELECT} WHERE status = 'resolved' AND ({where}) ORDER BY changed DESC LIMIT ?",
                                  (*params, limit)).fetchall()
        return [item_of(row) for row in rows]

    def open_summary(self):
        """{"total", "by_kind", "by_session"}: the open items counted."""
        with self.guard.read() as db:
            rows = db.execute_sql("SELECT kind, session_id, COUNT(*) FROM attention_items WHERE status = 'open' "
                                  "GROUP BY kind, session_id").fetchall()
        by_kind, by_session = {}, {}
        for kind, session_id, count in rows:
            by_kind[kind] = by_kind.get(kind, 0) + count
            if session_id is not None:
                by_session[session_id] = by_session.get(session_id, 0) + count
        return {"total": sum(by_kind.values()), "by_kind": by_kind, "by_session": by_session}

    def open_causes(self, prefix):
        """{cause: item id} of the open items whose cause starts with prefix."""
        with self.guard.read() as db:
            rows = db.execute_sql("SELECT cause, id FROM attention_items WHERE status = 'open' AND cause LIKE ?",
                                  (prefix + "%",)).fetchall()
        return dict(rows)

    def counts(self, session_ids=None):
        """{session_id: open items} (of the given sessions, else of all)."""
        where, params = "status = 'open' AND session_id IS NOT NULL", []
        if session_ids is not None:
            where += f" AND session_id IN ({marks(session_ids)})"
            params = list(session_ids)
        with self.guard.read() as db:
            return dict(db.execute_sql(f"SELECT session_id, COUNT(*) FROM attention_items WHERE {where} "
                                       "GROUP BY session_id", params).fetchall())

    def changes_after(self, change, limit=500):
        """Items changed after that number, in change order (each at its newest state)."""
        with self.guard.read() as db:
            rows = db.execute_sql(f"{SELECT} WHERE changed > ? ORDER BY changed LIMIT ?", (change, limit)).fetchall()
        return [item_of(row) for row in rows]

    def record_run(self, run):
        """Keep one notifier run ({"id", "item_id", "started_at", ...}); the oldest beyond RUNS_KEPT go."""
        with self.guard.write() as db:
            db.execute_sql("INSERT INTO notify_runs (id, item_id, started_at, document) VALUES (?, ?, ?, ?)",
                           (run["id"], run["item_id"], run["started_at"], json.dumps(run, separators=(",", ":"))))
            db.execute_sql("DELETE FROM notify_runs WHERE rowid <= (SELECT MAX(rowid) FROM notify_runs) - ?",
                           (RUNS_KEPT,))

    def recent_runs(self, limit=20):
        """The newest notifier runs, newest first."""
        with self.guard.read() as db:
            rows = db.execute_sql("SELECT document FROM notify_runs ORDER BY rowid DESC LIMIT ?", (limit,)).fetchall()
        return [json.loads(row[0]) for row in rows]

    def pending_requests(self):
        """The IDs of the permission requests still pending (compozy.store.catalog's interactions)."""
        with self.guard.read() as db:
            return [r[0] for r in db.execute_sql("SELECT id FROM pending_interactions WHERE status = 'pending'")]

    def flagged_sessions(self):
        """The documents of the indexed sessions carrying an attention flag or a failure."""
        with self.guard.read() as db:
            rows = db.execute_sql("SELECT doc FROM sessions WHERE orphaned = 0 AND (json_extract(doc, '$.failure') "
                                  "IS NOT NULL OR json_extract(doc, '$.attention') IS NOT NULL)").fetchall()
        return [json.loads(row[0]) for row in rows]

    def _one(self, db, where, params):
        row = db.execute_sql(f"{SELECT} WHERE {where}", params).fetchone()
        return row and item_of(row)
