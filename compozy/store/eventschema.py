"""The schema of a session's event store (sessions/<id>/events.db) and the images new stores are
written from.

Layer 2. The tables and indexes are defined once, by these peewee models; only the triggers are
raw SQL. A new store is a copy of a prebuilt empty image; a derived session's has its carried
context inserted in memory before it is written (store/eventlog.py).
"""

import os
import sqlite3
import tempfile
import threading

from peewee import SQL, BooleanField, CharField, Check, IntegerField, Model, TextField

from compozy.store.db import open_sqlite

# The rules no model can state: events are never deleted; the owner stamp and the carried context never change.
TRIGGERS = (
    """CREATE TRIGGER IF NOT EXISTS store_owner_immutable BEFORE UPDATE ON store_owner
        BEGIN SELECT RAISE(ABORT, 'store_owner is immutable'); END""",
    """CREATE TRIGGER IF NOT EXISTS carried_context_immutable BEFORE UPDATE ON carried_context
        BEGIN SELECT RAISE(ABORT, 'carried_context is immutable'); END""",
    """CREATE TRIGGER IF NOT EXISTS events_append_only BEFORE DELETE ON events
        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END""",
)

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

    return Event, TokenUsage, StoreOwner, CarriedContext


def create_schema(db):
    """The models' tables and indexes, and the triggers; a no-op on a store that has them."""
    models = make_models(db)
    with db.atomic():
        db.create_tables(models, safe=True)
        for trigger in TRIGGERS:
            db.execute_sql(trigger)
    return models


_template: list = []
_template_lock = threading.Lock()


def template_bytes():
    """An empty events.db image in WAL mode with the schema, built once per process."""
    with _template_lock:
        if not _template:
            with tempfile.TemporaryDirectory() as scratch:
                path = os.path.join(scratch, "events.db")
                db = open_sqlite(path)
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
