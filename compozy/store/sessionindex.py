"""The catalog's session index rows (compozy.db's sessions table): a row built from a session
document, written one at a time on every lifecycle change or many at once by a boot that indexes
the session folders.

Layer 2. A row is checked while it is built, so that one document the table cannot hold fails
alone (ValueError) and never the statement that writes the rows of every other session.
"""

from compozy.clock import now_iso
from compozy.text import compact_json

COLUMNS = ("id", "workspace_id", "name", "type", "agent_name", "state", "archived", "parent_session_id",
           "root_session_id", "spawn_depth", "lineage_kind", "orphaned", "updated_at", "doc", "resource",
           "meta_mtime")
REQUIRED = frozenset(("id", "workspace_id", "type", "agent_name", "state", "root_session_id", "updated_at"))
STORABLE = (str, int, float, type(None))  # bool is an int
# Raw SQL: this runs on every lifecycle change, where peewee's query building cost ~1.5 ms.
UPSERT = (f"INSERT INTO sessions ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))}) "
          f"ON CONFLICT(id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in COLUMNS[1:])}")


def session_row(doc, resource=None, orphaned=False, meta_mtime=None):
    """The row indexing a session document; resource is its rendered read (JSON text) for fast lists.
    ValueError when the document lacks a value the index needs or holds one SQLite cannot store."""
    lineage = doc.get("lineage") or {}
    row = (doc.get("id"), doc.get("workspace_id"), doc.get("name"), doc.get("type"), doc.get("agent_name"),
           doc.get("state"), bool(doc.get("archived")), lineage.get("parent_session_id"),
           lineage.get("root_session_id") or doc.get("id"), lineage.get("spawn_depth") or 0,
           lineage.get("kind") or "", orphaned, doc.get("updated_at") or now_iso(), compact_json(doc), resource,
           meta_mtime)
    for column, value in zip(COLUMNS, row):
        if not isinstance(value, STORABLE) or (value is None and column in REQUIRED):
            raise ValueError(f"{column} cannot be indexed: {value!r}"[:200])
    return row


def upsert(db, rows):
    """Insert or update session rows (session_row), in one statement."""
    db.cursor().executemany(UPSERT, rows)
