"""The schema of a session's event store (sessions/<id>/events.db) and the images new stores are
written from.

Layer 2. The tables and indexes are defined once, by these peewee models; only the triggers and the
`events` view are raw SQL. A new store is a copy of a prebuilt empty image; a derived session's has its
carried context inserted in memory before it is written (store/eventlog.py).

Two layouts, told apart by what `events` is (`layout`):
- 1, stores written before issue 26 item 7: `events` is a table of the records' columns as they read.
- 2, every store created since: the rows are packed in `event_rows` (the turn ID and a chunk's
  agent_message_id once each, in `event_turns` and `event_messages`, and the timestamp once a
  committed batch, in `event_times`, each referenced by an integer) and `events` is a view that gives
  back the same columns with the same text, byte for byte. Every reader reads `events` and cannot
  tell the two apart; the writers (append, archive, compaction) write the layout's own table
  (`ROWS_TABLE`). A chunk row takes about half the bytes (docs/performance.md).
"""

import os
import sqlite3
import tempfile
import threading

from peewee import SQL, BooleanField, CharField, Check, IntegerField, Model, TextField

from compozy.store.db import PRAGMAS, open_sqlite

LAYOUT_TABLE, LAYOUT_PACKED = 1, 2
ROWS_TABLE = {LAYOUT_TABLE: "events", LAYOUT_PACKED: "event_rows"}  # where a layout's rows are written

# The rules no model can state: events are never deleted; the owner stamp, the carried context and the
# packed layout's keys never change.
TRIGGERS = (
    """CREATE TRIGGER IF NOT EXISTS store_owner_immutable BEFORE UPDATE ON store_owner
        BEGIN SELECT RAISE(ABORT, 'store_owner is immutable'); END""",
    """CREATE TRIGGER IF NOT EXISTS carried_context_immutable BEFORE UPDATE ON carried_context
        BEGIN SELECT RAISE(ABORT, 'carried_context is immutable'); END""",
)
TABLE_TRIGGERS = (
    """CREATE TRIGGER IF NOT EXISTS events_append_only BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END""",
)
PACKED_TRIGGERS = (
    """CREATE TRIGGER IF NOT EXISTS events_append_only BEFORE DELETE ON event_rows
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS event_turns_immutable BEFORE UPDATE ON event_turns
        BEGIN SELECT RAISE(ABORT, 'event_turns is immutable'); END""",
    """CREATE TRIGGER IF NOT EXISTS event_messages_immutable BEFORE UPDATE ON event_messages
        BEGIN SELECT RAISE(ABORT, 'event_messages is immutable'); END""",
    """CREATE TRIGGER IF NOT EXISTS event_times_immutable BEFORE UPDATE ON event_times
        BEGIN SELECT RAISE(ABORT, 'event_times is immutable'); END""",
)

# The packed rows read as layout 1's table. A chunk's content is stored without its trailing
# `,"agent_message_id":"..."` (the writer cuts it only when the text ends so: store/packing.py), put
# back here.
PACKED_CONTENT = """CASE WHEN r.message IS NULL THEN r.content
         ELSE substr(r.content, 1, length(r.content) - 1) || ',"agent_message_id":' || m.quoted || '}' END"""
PACKED_FROM = """FROM event_rows AS r LEFT JOIN event_turns AS t ON t.turn = r.turn
    LEFT JOIN event_messages AS m ON m.message = r.message LEFT JOIN event_times AS b ON b.time = r.time"""
EVENTS_VIEW = f"""CREATE VIEW IF NOT EXISTS events (sequence, id, turn_id, type, agent_name, content, archived,
    timestamp) AS SELECT r.sequence, r.id, t.turn_id, r.type, r.agent_name,
    {PACKED_CONTENT},
    r.archived, b.timestamp
    {PACKED_FROM}"""

# 1 KiB pages: a store's tables and indexes take a page each even when empty (16 KiB, against 64
# at SQLite's default 4 KiB), and a commit of a few rows writes 1 KiB frames to the WAL; a chunk row costs
# the same either way (docs/performance.md).
PAGE_SIZE = 1024
CARRIED_INSERT = "INSERT INTO carried_context (singleton, document) VALUES (1, ?)"
IN_MEMORY_IMAGES = hasattr(sqlite3.Connection, "serialize")  # SQLite 3.36+: a database image built in memory


def make_models(db):
    """The tables of one events.db, bound to it (never rebind a global model per request); their
    DDL is generated from these models."""

    class Base(Model):
        class Meta:
            database = db

    class Event(Base):
        sequence = IntegerField(primary_key=True)  # the rowid: dense, assigned by the writer
        id = CharField()  # a ULID: unique by construction, no index to pay for on every commit
        turn_id = CharField(null=True)
        type = CharField()
        agent_name = CharField(null=True)
        content = TextField()
        archived = BooleanField(default=False, constraints=[SQL("DEFAULT 0")])
        timestamp = CharField()

        class Meta:
            table_name = "events"

    Event.add_index(Event.index(Event.turn_id, Event.sequence, name="events_turn"))
    Event.add_index(Event.index(Event.type, Event.sequence, name="events_type"))

    class EventRow(Base):
        """Layout 2's rows: what `events` reads, packed (the view EVENTS_VIEW unpacks it)."""

        sequence = IntegerField(primary_key=True)
        id = CharField()
        turn = IntegerField(null=True)  # event_turns.turn
        type = CharField()
        agent_name = CharField(null=True)
        content = TextField()
        message = IntegerField(null=True)  # event_messages.message: the agent_message_id cut from content
        archived = BooleanField(default=False, constraints=[SQL("DEFAULT 0")])
        time = IntegerField()  # event_times.time: the timestamp of the batch the row was committed in

        class Meta:
            table_name = "event_rows"

    # The rowid is the last column of every index entry: these order by sequence within a turn and a type.
    EventRow.add_index(EventRow.index(EventRow.turn, name="event_rows_turn"))
    EventRow.add_index(EventRow.index(EventRow.type, name="event_rows_type"))

    class EventTurn(Base):
        turn = IntegerField(primary_key=True)
        turn_id = CharField(unique=True)

        class Meta:
            table_name = "event_turns"

    class EventTime(Base):
        """One row a committed batch (its rows share their timestamp): a key is ~2 bytes a row, the text 27."""

        time = IntegerField(primary_key=True)
        timestamp = CharField()

        class Meta:
            table_name = "event_times"

    class EventMessage(Base):
        message = IntegerField(primary_key=True)
        quoted = CharField(unique=True)  # the agent_message_id as JSON text, quotes included

        class Meta:
            table_name = "event_messages"

    class TokenUsage(Base):
        turn_id = CharField(primary_key=True)
        usage = TextField()
        updated_at = CharField()

        class Meta:
            table_name = "token_usage"

    class StoreOwner(Base):
        """Which session and workspace this file belongs to, stamped once."""

        singleton = IntegerField(primary_key=True, constraints=[Check("singleton = 1")])
        session_id = CharField()
        workspace_id = CharField()
        created_at = CharField()

        class Meta:
            table_name = "store_owner"

    class CarriedContext(Base):
        """What a continued or forked session carries from its source, written once at its creation."""

        singleton = IntegerField(primary_key=True, constraints=[Check("singleton = 1")])
        document = TextField()

        class Meta:
            table_name = "carried_context"

    return Event, TokenUsage, StoreOwner, CarriedContext, EventRow, EventTurn, EventMessage, EventTime


def layout(db):
    """The store's layout: LAYOUT_TABLE when `events` is a table, else LAYOUT_PACKED (a view, or a new file)."""
    row = db.execute_sql("SELECT type FROM sqlite_master WHERE name = 'events'").fetchone()
    return LAYOUT_TABLE if row is not None and row[0] == "table" else LAYOUT_PACKED


def create_schema(db):
    """The tables, indexes, view and triggers of the store's layout (a new store: the packed one); a
    no-op on a store that has them. Returns (Event, TokenUsage, StoreOwner, CarriedContext, layout)."""
    event, usage, owner, carried, row, turn, message, time = make_models(db)
    with db.atomic():
        kind = layout(db)
        shared = [usage, owner, carried]
        if kind == LAYOUT_TABLE:
            db.create_tables([event, *shared], safe=True)
        else:
            db.create_tables([row, turn, message, time, *shared], safe=True)
            db.execute_sql(EVENTS_VIEW)
        for trigger in TRIGGERS + (TABLE_TRIGGERS if kind == LAYOUT_TABLE else PACKED_TRIGGERS):
            db.execute_sql(trigger)
    return event, usage, owner, carried, kind


_template: list = []
_template_lock = threading.Lock()


def template_bytes():
    """An empty events.db image in WAL mode with the schema, built once per process."""
    with _template_lock:
        if not _template:
            with tempfile.TemporaryDirectory() as scratch:
                path = os.path.join(scratch, "events.db")
                db = open_sqlite(path, {"page_size": PAGE_SIZE, **PRAGMAS})  # the page size first: it is fixed then
                create_schema(db)
                db.close()
                with open(path, "rb") as handle:
                    _template.append(handle.read())
        return _template[0]


def with_carried(document):
    """The template with its carried_context row, built in memory, where SQLite has no WAL: marked a
    rollback-journal database there, a WAL one again on the way out (file format bytes 18-19: 1 or 2)."""
    image = bytearray(template_bytes())
    image[18:20] = b"\x01\x01"
    memory = sqlite3.connect(":memory:")
    try:
        memory.deserialize(bytes(image))
        with memory:
            memory.execute(CARRIED_INSERT, (document,))
        image = bytearray(memory.serialize())
    finally:
        memory.close()
    image[18:20] = b"\x02\x02"
    return bytes(image)
