"""A session's append-only event store (sessions/<id>/events.db) and the LRU of open stores.

Layer 2. Sequence numbers are dense, start at 1 and are assigned inside the write transaction.
The append path uses one executemany per batch instead of an ORM object per row.
"""

import json
import os
import sqlite3
import threading
from collections import OrderedDict
from contextlib import contextmanager

from compozy.clock import now_iso
from compozy.ids import new_ids
from compozy.paths import FILE_MODE, write_all
from compozy.store.db import EVENT_STORE_PRAGMAS, open_sqlite
from compozy.store.eventschema import (CARRIED_INSERT, IN_MEMORY_IMAGES, LAYOUT_PACKED, ROWS_TABLE, create_schema,
                                       template_bytes, with_carried)
from compozy.store.packing import Packer, insert_rows
from compozy.store.storedrecord import Batch, StoredRecord
from compozy.store.transcriptrows import transcript_records
from compozy.text import compact_json

MAX_READ_LIMIT = 1000
SQLITE_MAX = 2**63 - 1
DEFAULT_READ_LIMIT = 200

COLUMNS = "sequence, id, turn_id, type, agent_name, content, archived, timestamp"
ARCHIVE_SQL = {"active": "archived = 0", "archived": "archived = 1", "all": "1"}
_encode = compact_json
INSERT = "INSERT INTO events (sequence, id, turn_id, type, agent_name, content, archived, timestamp) VALUES "
INSERT_ROW = "(?, ?, ?, ?, ?, ?, 0, ?)"  # a store in layout 1 (eventschema)


class EventLog:
    """One events.db: one connection, one writer, reopened on demand after LRU eviction."""

    def __init__(self, path, session_id, workspace_id):
        self.path, self.session_id, self.workspace_id = path, session_id, workspace_id
        self._db = None
        self._next_sequence = None
        self._lock = threading.RLock()
        self._aside = None  # the catch-up readers' own connection (read_aside)
        self._aside_lock = threading.Lock()
        self._unopened_empty = False  # written from the template by create() and not opened since
        self._packer = None  # a Packer for a store in the packed layout, None for one in layout 1
        self._rows = ROWS_TABLE[LAYOUT_PACKED]  # the table the rows are written in

    def create(self, carried=None):
        """Write the file from a prebuilt empty store (in WAL mode, schema in place), with the context a
        derived session carries. A fresh WAL database costs ~3.5 ms, the template's bytes ~0.1 ms, the
        carried row added in memory ~0.5 ms (through a connection: 3-14 ms, SQLite fsyncs its new WAL)."""
        document = None if carried is None else _encode(carried)
        in_memory = document is not None and IN_MEMORY_IMAGES
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
        try:
            write_all(fd, with_carried(document) if in_memory else template_bytes())
        finally:
            os.close(fd)
        self._unopened_empty = True
        if document is not None and not in_memory:
            with self._write() as db:
                db.execute_sql(CARRIED_INSERT, (document,))
        return self

    def _open(self):
        if self._db is None:
            db = open_sqlite(self.path, EVENT_STORE_PRAGMAS)
            self._event_model, self._usage_model, owner, _, layout = create_schema(db)
            owner.insert(singleton=1, session_id=self.session_id, workspace_id=self.workspace_id,
                         created_at=now_iso()).on_conflict_ignore().execute()
            self._rows = ROWS_TABLE[layout]
            self._packer = Packer() if layout == LAYOUT_PACKED else None
            row = db.execute_sql(f"SELECT COALESCE(MAX(sequence), 0) FROM {self._rows}").fetchone()
            self._next_sequence = row[0] + 1
            self._db = db
            self._unopened_empty = False
        return self._db

    @contextmanager
    def _read(self):
        with self._lock:
            yield self._open()

    @contextmanager
    def _write(self):
        with self._lock:
            db = self._open()
            with db.atomic():
                yield db

    def close(self):
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
        with self._aside_lock:
            if self._aside is not None:
                self._aside.close()
                self._aside = None

    def read_aside(self, after_sequence, limit):
        """The oldest `limit` active records after a sequence on a connection of their own: a viewer
        catching up never holds the lock the agent's output commits under (WAL: committed rows only)."""
        with self._aside_lock:
            if self._aside is None:
                self._aside = sqlite3.connect(self.path, check_same_thread=False)
                self._aside.execute("PRAGMA cache_size=-256")
            rows = self._aside.execute(f"SELECT {COLUMNS} FROM events WHERE archived = 0 AND sequence > ? "
                                       "ORDER BY sequence LIMIT ?", (after_sequence, limit)).fetchall()
        return [self._record(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7]) for r in rows]

    @property
    def is_open(self):
        return self._db is not None

    def append(self, items, texts=None):
        """Commit (type, turn_id, content, agent_name) tuples as one transaction; return the records
        (StoredRecord). texts: the contents' compact_json, when the caller has them. Nothing is visible
        to any reader before this returns: persist, then forward."""
        texts = texts if texts is not None else [_encode(content) for _, _, content, _ in items]
        with self._lock:
            try:
                first, timestamp, rows = self._insert(items, texts)
            except sqlite3.IntegrityError:
                # Another handle on this file appended since we counted; recount and retry once.
                self._next_sequence = self._db.execute_sql(f"SELECT MAX(sequence) FROM {self._rows}").fetchone()[0] + 1
                first, timestamp, rows = self._insert(items, texts)
            self._next_sequence = first + len(rows)  # only after the commit succeeded
        batch = Batch(self.session_id, self.workspace_id, timestamp)
        session_id, workspace_id = self.session_id, self.workspace_id
        return [StoredRecord.of({"id": event_id, "session_id": session_id, "sequence": sequence, "turn_id": turn_id,
                                 "type": kind, "agent_name": agent_name, "workspace_id": workspace_id,
                                 "content": content, "timestamp": timestamp}, text, batch)
                for (sequence, event_id, turn_id, kind, agent_name, text, timestamp), (_, _, content, _)
                in zip(rows, items)]

    def _insert(self, items, texts):
        try:
            with self._write() as db:
                first = self._next_sequence
                timestamp = now_iso()
                ids = new_ids("evt", len(items))
                rows = [(first + i, ids[i], turn_id, kind, agent_name, texts[i], timestamp)
                        for i, (kind, turn_id, _, agent_name) in enumerate(items)]
                if self._packer is None:
                    insert_rows(db, INSERT, INSERT_ROW, rows)
                else:
                    self._packer.insert(db, rows, items)
        except BaseException:
            if self._packer is not None:
                self._packer.forget()  # the keys it added in the rolled-back transaction are gone
            raise
        return first, timestamp, rows

    def _record(self, sequence, event_id, turn_id, kind, agent_name, content, archived, timestamp):
        record = {"id": event_id, "session_id": self.session_id, "sequence": sequence,
                  "turn_id": turn_id, "type": kind, "agent_name": agent_name,
                  "workspace_id": self.workspace_id, "content": content, "timestamp": timestamp}
        if archived:
            record["archived"] = True
        return record

    def read(self, after_sequence=None, before_sequence=None, turn_id=None, types=None,
             limit=DEFAULT_READ_LIMIT, archive="active"):
        """Ascending records: the oldest `limit` after after_sequence, else the newest `limit`."""
        with self._read():
            event = self._event_model
        query = event.select()
        if archive == "active":
            query = query.where(event.archived == False)  # noqa: E712 (peewee expression)
        elif archive == "archived":
            query = query.where(event.archived == True)  # noqa: E712
        if turn_id is not None:
            query = query.where(event.turn_id == turn_id)
        if types:
            query = query.where(event.type.in_(list(types)))
        if before_sequence is not None:
            query = query.where(event.sequence < before_sequence)
        if after_sequence is not None:
            query = query.where(event.sequence > after_sequence).order_by(event.sequence.asc())
        else:
            query = query.order_by(event.sequence.desc())
        with self._read():
            rows = list(query.limit(limit).tuples())
        if after_sequence is None:
            rows.reverse()
        return [self._record(r[0], r[1], r[2], r[3], r[4], json.loads(r[5]), r[6], r[7]) for r in rows]

    def read_all(self, archive="active", types=None, turn_id=None):
        """Every matching record, paged by sequence (keyset, never OFFSET)."""
        cursor, records = 0, []
        while True:
            page = self.read(after_sequence=cursor, types=types, turn_id=turn_id, limit=MAX_READ_LIMIT,
                             archive=archive)
            records.extend(page)
            if len(page) < MAX_READ_LIMIT:
                return records
            cursor = page[-1]["sequence"]

    def last_sequence(self):
        with self._read():
            return self._next_sequence - 1

    def max_active_sequence(self, before=None):
        """The newest unarchived sequence (below `before`); walks back from the end, past short archived tails.
        A store just created holds none: answered without opening it (a first open writes: see create)."""
        with self._lock:
            if self._unopened_empty:
                return 0
        with self._read() as db:
            row = db.execute_sql(f"SELECT sequence FROM {self._rows} WHERE archived = 0 AND sequence < ? "
                                 "ORDER BY sequence DESC LIMIT 1", (before or SQLITE_MAX,)).fetchone()
        return row[0] if row else 0

    def count_active(self, first, last):
        with self._read() as db:
            return db.execute_sql(f"SELECT COUNT(*) FROM {self._rows} WHERE archived = 0 AND sequence BETWEEN ? AND ?",
                                  (first, last)).fetchone()[0]

    def archive(self, first, last):
        """Archive the active events from first through last (a rewind; never a delete). Idempotent."""
        with self._write() as db:
            return db.execute_sql(f"UPDATE {self._rows} SET archived = 1 WHERE archived = 0 AND "
                                  "sequence BETWEEN ? AND ?", (first, last)).rowcount

    def turn_ids_between(self, first, last):
        """The turns with events from first through last (a rewind's archived suffix)."""
        with self._read() as db:
            return [r[0] for r in db.execute_sql("SELECT DISTINCT turn_id FROM events WHERE turn_id IS NOT NULL AND "
                                                 "sequence BETWEEN ? AND ?", (first, last)).fetchall()]

    def transcript_records(self, through_sequence):
        """The unarchived records a transcript folds from, up to through_sequence (store/transcriptrows.py)."""
        with self._read() as db:
            return transcript_records(db, through_sequence)

    def user_message(self, message_id):
        """The user_message record carrying this message_id (archived or not), or None."""
        with self._read() as db:
            row = db.execute_sql(f"SELECT {COLUMNS} FROM events WHERE type = 'user_message' AND "
                                 "json_extract(content, '$.message_id') = ? ORDER BY sequence DESC LIMIT 1",
                                 (message_id,)).fetchone()
        return row and self._record(row[0], row[1], row[2], row[3], row[4], json.loads(row[5]), row[6], row[7])

    def carried(self):
        """The carried context document, or None for a session that carries none."""
        with self._read() as db:
            row = db.execute_sql("SELECT document FROM carried_context WHERE singleton = 1").fetchone()
        return json.loads(row[0]) if row else None

    def usage(self):
        """Each turn's recorded usage, in the order the turns first recorded it: [{turn_id, usage, updated_at}]."""
        with self._read() as db:
            rows = db.execute_sql("SELECT turn_id, usage, updated_at FROM token_usage ORDER BY rowid").fetchall()
        return [{"turn_id": row[0], "usage": json.loads(row[1]), "updated_at": row[2]} for row in rows]

    def record_usage(self, turn_id, usage):
        """The turn's usage (compozy.session.turns.usage), as the agent last reported it."""
        with self._write():
            usage_model = self._usage_model
            (usage_model.insert(turn_id=turn_id, usage=json.dumps(usage), updated_at=now_iso())
             .on_conflict(conflict_target=[usage_model.turn_id],
                          preserve=[usage_model.usage, usage_model.updated_at]).execute())


class EventLogPool:
    """An LRU of open event stores: each open WAL connection holds three descriptors."""

    def __init__(self, home, max_open=128):
        self.home, self.max_open = home, max_open
        self._logs = OrderedDict()
        self._pinned = set()
        self._lock = threading.Lock()

    def get(self, session_id, workspace_id):
        with self._lock:
            log = self._logs.pop(session_id, None) or EventLog(
                self.home.events_file(session_id), session_id, workspace_id)
            self._logs[session_id] = log  # most recently used last
            victims = self._evict()
        for victim in victims:
            victim.close()
        return log

    def pin(self, session_id):
        with self._lock:
            self._pinned.add(session_id)

    def unpin(self, session_id):
        with self._lock:
            self._pinned.discard(session_id)

    def _evict(self):
        """Drop least recently used, unpinned stores beyond max_open (closed outside the lock)."""
        victims = []
        for session_id in list(self._logs):
            if len(self._logs) <= self.max_open:
                break
            if session_id not in self._pinned:
                victims.append(self._logs.pop(session_id))
        return victims

    def forget(self, session_id):
        with self._lock:
            log = self._logs.pop(session_id, None)
            self._pinned.discard(session_id)
        if log:
            log.close()

    def close_all(self):
        with self._lock:
            logs = list(self._logs.values())
            self._logs.clear()
        for log in logs:
            log.close()
