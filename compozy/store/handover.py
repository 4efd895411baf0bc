"""A session's control rows carried from another node's catalog to this one's: what an adoption takes with the
session's folder (docs/fleet.md).

Layer 2. The rows a session has in its node's compozy.db beside its folder: its prompt admissions (a retry with
the same idempotency key answers what it answered there), its input queue (an acknowledged queued input runs on
the adopter), its permission requests (those still pending are orphaned by the adopter's repair, as a boot
orphans its own), its rewind receipts and the derivations (continues and forks) made from it (a retry of a rewind,
continue or fork with the same key answers the same; those an unclean exit interrupted are settled by the
adopter as a boot settles its own). The other node's file is opened read-only and never written.
"""

import sqlite3
from urllib.parse import quote

CARRIED = {"admissions": "session_id", "input_queue": "session_id", "pending_interactions": "session_id",
           "rewind_receipts": "session_id", "derivations": "source_session_id"}  # table: the column naming the session
BUSY_MS = 5000


class Unreadable(Exception):
    """The other node's catalog could not be read (the message says why)."""


def read_session_rows(catalog_file, session_id):
    """{table: [row as a dict of its columns]} of one session in another node's catalog, read-only (its
    write-ahead log included: a row committed there and not yet checkpointed is read). A table an older node's
    catalog does not have yet carries no rows (that node had none of them to acknowledge)."""
    try:
        connection = sqlite3.connect(f"file:{quote(str(catalog_file))}?mode=ro", uri=True, timeout=BUSY_MS / 1000)
    except sqlite3.Error as exc:
        raise Unreadable(f"{catalog_file}: {exc}") from None
    try:
        present = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return {table: _rows(connection.execute(f"SELECT * FROM {table} WHERE {column} = ? ORDER BY rowid",
                                                (session_id,))) if table in present else []
                for table, column in CARRIED.items()}
    except sqlite3.Error as exc:
        raise Unreadable(f"{catalog_file}: {exc}") from None
    finally:
        connection.close()


def _rows(cursor):
    columns = [column[0] for column in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def write_session_rows(catalog, session_id, rows, workspace_id):
    """The carried rows become this catalog's rows of the session, in one transaction: any this catalog still held
    for it (a session adopted back from a node it was adopted by) are replaced. Columns this catalog does not have
    are left out; those it has and the other did not take their defaults. A derivation is keyed by its workspace:
    it moves to workspace_id (this node's workspace of the session); one whose key this workspace used already for
    another session's derivation stays behind (a retry of it answers idempotency_conflict here). {table: rows
    written}."""
    written = {}
    with catalog.guard.write() as db:
        for table, column in CARRIED.items():
            columns = {row[1] for row in db.execute_sql(f"PRAGMA table_info({table})").fetchall()}
            db.execute_sql(f"DELETE FROM {table} WHERE {column} = ?", (session_id,))
            written[table] = 0
            for row in rows.get(table, ()):
                kept = {k: v for k, v in row.items() if k in columns}
                verb = "INSERT"
                if table == "derivations":
                    kept["workspace_id"], verb = workspace_id, "INSERT OR IGNORE"
                cursor = db.execute_sql(f"{verb} INTO {table} ({', '.join(kept)}) "
                                        f"VALUES ({', '.join('?' * len(kept))})", list(kept.values()))
                written[table] += cursor.rowcount
    return written
