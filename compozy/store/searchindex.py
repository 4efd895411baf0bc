"""The search index: one SQLite FTS5 database in the daemon's home (search.db) over every session's messages.

Layer 2. A row of `messages` is one message as a person would find it: a user prompt, an agent's answer or
thought (its chunks joined), a tool call's title or a permission request's title; `messages_fts` indexes its
text (external content, kept in step by triggers). `sessions` holds what each session's rows were indexed
through (last_sequence), the run of chunks still growing at its end, and the session's facts the filters
read. The index is derived data: deleting search.db loses nothing, the indexer rebuilds it.
"""

import os
import re
import sqlite3
import threading
from contextlib import contextmanager

from compozy.paths import FILE_MODE
from compozy.store.eventschema import PACKED_CONTENT, PACKED_FROM

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS sessions (session_id TEXT PRIMARY KEY, workspace_id TEXT, agent_name TEXT,
        archived INTEGER NOT NULL DEFAULT 0, epoch INTEGER NOT NULL DEFAULT 0,
        last_sequence INTEGER NOT NULL DEFAULT 0, open_row INTEGER, open_key TEXT)""",
    """CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, kind TEXT NOT NULL,
        message_id TEXT, turn_id TEXT, sequence INTEGER NOT NULL, timestamp TEXT NOT NULL,
        rewound INTEGER NOT NULL DEFAULT 0, text TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS messages_session ON messages (session_id, sequence)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(text, content='messages', content_rowid='id')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS messages_vocab USING fts5vocab(messages_fts, 'row')",
    """CREATE TRIGGER IF NOT EXISTS messages_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text); END""",
    """CREATE TRIGGER IF NOT EXISTS messages_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text); END""",
    """CREATE TRIGGER IF NOT EXISTS messages_au AFTER UPDATE OF text ON messages BEGIN
        INSERT INTO messages_fts (messages_fts, rowid, text) VALUES ('delete', old.id, old.text);
        INSERT INTO messages_fts (rowid, text) VALUES (new.id, new.text); END""",
)
MARK_OPEN, MARK_CLOSE, ELLIPSIS, SNIPPET_TOKENS = "**", "**", "…", 16
HIT_COLUMNS = ("session_id", "workspace_id", "agent_name", "kind", "message_id", "turn_id", "sequence",
               "timestamp", "rewound", "archived", "snippet", "score")
# Ranking reads every match: a lone word in more messages than this is answered newest first instead (bm25 is
# still each hit's score), which reads only the page (measured: 3 s for a word in 1 message of 20 at 2,000,000).
RANKED_AT_MOST = 10_000
LONE_WORD = re.compile(r"\w+")
FTS_SYNTAX = ("fts5", "syntax error", "no such column", "unterminated", "unknown special query", "malformed MATCH")


class QuerySyntaxError(ValueError):
    """The FTS5 query could not be parsed (SQLite's words for what is wrong)."""


def connect(path):
    if not os.path.exists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=wal")
    db.execute("PRAGMA synchronous=normal")
    db.execute("PRAGMA busy_timeout=5000")
    return db


class SearchIndex:
    """search.db: one writer connection (the indexer's) and one reader connection (the queries')."""

    def __init__(self, path):
        self.path = str(path)
        self._write_lock, self._read_lock = threading.RLock(), threading.Lock()
        self._writer = connect(self.path)
        with self._write_lock:
            for statement in SCHEMA:
                self._writer.execute(statement)
        self._reader = connect(self.path)

    def close(self):
        with self._write_lock, self._read_lock:
            self._writer.close()
            self._reader.close()

    @contextmanager
    def writing(self):
        """One write transaction (BEGIN IMMEDIATE ... COMMIT) on the writer connection."""
        with self._write_lock:
            self._writer.execute("BEGIN IMMEDIATE")
            try:
                yield Writer(self._writer)
            except BaseException:
                self._writer.execute("ROLLBACK")
                raise
            self._writer.execute("COMMIT")

    def state(self, session_id):
        """What a session was indexed through: {last_sequence, epoch, archived, open_row, open_key}, or None."""
        with self._write_lock:
            row = self._writer.execute("SELECT last_sequence, epoch, archived, open_row, open_key FROM sessions "
                                       "WHERE session_id = ?", (session_id,)).fetchone()
        return row and dict(zip(("last_sequence", "epoch", "archived", "open_row", "open_key"), row))

    def session_ids(self):
        with self._write_lock:
            return [row[0] for row in self._writer.execute("SELECT session_id FROM sessions")]

    def search(self, match, filters, limit, offset):
        """(hits, has_more, order): the best matches first (bm25), or the newest first for a lone word too common
        to rank (order "newest"), filtered; QuerySyntaxError for a bad query."""
        order = "newest" if self._too_common(match) else "best"
        where, params = ["messages_fts MATCH ?"], [match]
        for column, value in filters.get("equal", {}).items():
            where.append(f"{column} = ?")
            params.append(value)
        if filters.get("since"):
            where.append("m.timestamp >= ?")
            params.append(filters["since"])
        if not filters.get("rewound"):
            where.append("m.rewound = 0")
        if filters.get("archived") in ("exclude", "only"):
            where.append("s.archived = " + ("0" if filters["archived"] == "exclude" else "1"))
        sql = (f"SELECT m.session_id, s.workspace_id, s.agent_name, m.kind, m.message_id, m.turn_id, m.sequence, "
               f"m.timestamp, m.rewound, s.archived, "
               f"snippet(messages_fts, 0, '{MARK_OPEN}', '{MARK_CLOSE}', '{ELLIPSIS}', {SNIPPET_TOKENS}), "
               f"bm25(messages_fts) FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
               f"JOIN sessions s ON s.session_id = m.session_id WHERE {' AND '.join(where)} "
               f"ORDER BY {'messages_fts.rowid DESC' if order == 'newest' else 'bm25(messages_fts)'} LIMIT ? OFFSET ?")
        try:
            with self._read_lock:
                rows = self._reader.execute(sql, (*params, limit + 1, offset)).fetchall()
        except sqlite3.OperationalError as exc:
            if any(word in str(exc) for word in FTS_SYNTAX):
                raise QuerySyntaxError(str(exc)) from None
            raise
        hits = [dict(zip(HIT_COLUMNS, row)) for row in rows[:limit]]
        for hit in hits:
            hit["score"] = round(-hit["score"], 4)
            hit["rewound"], hit["archived"] = bool(hit["rewound"]), bool(hit["archived"])
        return hits, len(rows) > limit, order

    def _too_common(self, match):
        if not LONE_WORD.fullmatch(match) or match in ("AND", "OR", "NOT", "NEAR"):
            return False
        with self._read_lock:
            row = self._reader.execute("SELECT doc FROM messages_vocab WHERE term = ?", (match.lower(),)).fetchone()
        return bool(row) and row[0] > RANKED_AT_MOST

    def size(self):
        """The index's bytes on disk (its WAL included), sessions and messages."""
        with self._read_lock:
            sessions = self._reader.execute("SELECT COUNT(*) FROM sessions").fetchone()[0]
            messages = self._reader.execute("SELECT MAX(id) FROM messages").fetchone()[0] or 0
        files = (self.path, self.path + "-wal")
        return {"bytes": sum(os.path.getsize(f) for f in files if os.path.exists(f)), "sessions": sessions,
                "messages": messages}

    def clear(self):
        """Forget everything indexed (a rebuild starts from every session's first event)."""
        with self.writing() as writer:
            writer.db.execute("DELETE FROM messages")
            writer.db.execute("DELETE FROM sessions")
            writer.db.execute("INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")


class Writer:
    """The writes of one transaction."""

    def __init__(self, db):
        self.db = db

    def add(self, session_id, kind, message_id, turn_id, sequence, timestamp, text):
        cursor = self.db.execute("INSERT INTO messages (session_id, kind, message_id, turn_id, sequence, timestamp, "
                                 "text) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 (session_id, kind, message_id, turn_id, sequence, timestamp, text))
        return cursor.lastrowid

    def text_of(self, row_id):
        row = self.db.execute("SELECT text FROM messages WHERE id = ?", (row_id,)).fetchone()
        return row[0] if row else None

    def replace_text(self, row_id, text):
        self.db.execute("UPDATE messages SET text = ? WHERE id = ?", (text, row_id))

    def session(self, session_id, workspace_id, agent_name, archived, epoch):
        self.db.execute("INSERT INTO sessions (session_id, workspace_id, agent_name, archived, epoch) "
                        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET workspace_id = excluded."
                        "workspace_id, agent_name = excluded.agent_name, archived = excluded.archived, "
                        "epoch = excluded.epoch", (session_id, workspace_id, agent_name, int(archived), epoch))

    def progress(self, session_id, last_sequence, open_row, open_key):
        self.db.execute("UPDATE sessions SET last_sequence = ?, open_row = ?, open_key = ? WHERE session_id = ?",
                        (last_sequence, open_row, open_key, session_id))

    def mark_rewound(self, session_id, sequences):
        """Rows whose first event a rewind archived drop out of default results (and never come back: a
        rewind is never undone)."""
        self.db.executemany("UPDATE messages SET rewound = 1 WHERE session_id = ? AND sequence = ?",
                            [(session_id, sequence) for sequence in sequences])

    def forget(self, session_id):
        self.db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
        self.db.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))


# A chunk's text and message ID are extracted by SQLite: a long stream's chunks are never decoded in Python (the
# indexer shares the daemon's interpreter with the agent's output path). A packed store's rows are read without
# the view, which would join each chunk's content back together only to have its text taken out of it again.
COMMITTED_PACKED_SQL = (
    "SELECT r.sequence, r.id, t.turn_id, r.type, "
    "CASE WHEN r.type IN ('agent_message', 'thought') THEN json_extract(r.content, '$.text') END, "
    "CASE WHEN r.type IN ('agent_message', 'thought') THEN "
    "coalesce(json_extract(m.quoted, '$'), json_extract(r.content, '$.agent_message_id')) END, "
    f"CASE WHEN r.type IN ('user_message', 'tool_call', 'permission') THEN {PACKED_CONTENT} END, "
    f"b.timestamp {PACKED_FROM} WHERE r.sequence > ? ORDER BY r.sequence LIMIT ?")
COMMITTED_SQL = ("SELECT sequence, id, turn_id, type, "
                 "CASE WHEN type IN ('agent_message', 'thought') THEN json_extract(content, '$.text') END, "
                 "CASE WHEN type IN ('agent_message', 'thought') THEN json_extract(content, '$.agent_message_id') END, "
                 "CASE WHEN type IN ('user_message', 'tool_call', 'permission') THEN content END, timestamp "
                 "FROM events WHERE sequence > ? ORDER BY sequence LIMIT ?")


def committed_after(path, after_sequence, limit):
    """A session's committed events after a sequence, oldest first, read on a connection of the caller's own
    (never the lock the agent's output commits under): (sequence, id, turn_id, type, chunk text, chunk message
    ID, content JSON of a prompt, tool call or permission, timestamp) tuples. [] when the store does not exist."""
    if not os.path.exists(path):
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        packed = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'event_rows'").fetchone()
        return db.execute(COMMITTED_PACKED_SQL if packed else COMMITTED_SQL, (after_sequence, limit)).fetchall()
    finally:
        db.close()


def archived_sequences(path, since_sequence=0):
    """The archived (rewound) event sequences of a session's store."""
    if not os.path.exists(path):
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return [row[0] for row in db.execute("SELECT sequence FROM events WHERE archived = 1 AND sequence > ?",
                                             (since_sequence,))]
    finally:
        db.close()
