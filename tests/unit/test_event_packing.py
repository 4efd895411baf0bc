"""The packed layout of a session's event store (store/eventschema.py, store/packing.py) reads back every record
as the text it was published with: the `events` view gives what layout 1 stored, byte for byte, for
chunks, for contents the writer must not cut, and for the timestamp each committed batch stores once.
Real SQLite files, the real EventLog.
"""

import sqlite3
from contextlib import closing

import pytest

from compozy.store.eventlog import EventLog
from compozy.store.packing import Packer
from compozy.text import compact_json

ODD_CONTENTS = [
    {"text": "chunk 1 ", "agent_message_id": "m1"},
    {"text": "chunk 2 ", "agent_message_id": "m1"},
    {"text": "caf\u00e9 \u2603 \U0001f600 \"quoted\" \\ back", "agent_message_id": "m\u00e9\"2}"},
    {"agent_message_id": "m1", "text": "the id first"},  # not last: stored whole
    {"agent_message_id": "m1"},  # alone: stored whole
    {"text": "nested", "agent_message_id": "m1", "raw": {"agent_message_id": "m1"}},
    {"text": "an id of another type", "agent_message_id": 7},
    {"text": "no id"},
    {"text": "}", "agent_message_id": ""},
    {"text": "", "agent_message_id": "m1"},
]


def packed_rows(path):
    with closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT content, message, typeof(time) FROM event_rows ORDER BY sequence").fetchall()


def test_every_content_reads_back_as_written_and_chunks_store_their_message_once(tmp_path):
    path = tmp_path / "events.db"
    log = EventLog(str(path), "sess_x", "ws_x").create()
    items = [("agent_message", "turn_a" if i % 2 else "turn_b", content, "general")
             for i, content in enumerate(ODD_CONTENTS)] + [("session_stopped", None, {"stop_reason": "x"}, None)]
    records = log.append(items)
    assert [compact_json(r) for r in log.read(after_sequence=0)] == [r.json() for r in records]
    assert [r["content"] for r in log.read(after_sequence=0)] == [c for _, _, c, _ in items]
    assert [r["turn_id"] for r in log.read(turn_id="turn_a", after_sequence=0)] == ["turn_a"] * 5
    log.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT content FROM events ORDER BY sequence").fetchall() == [
            (compact_json(c),) for _, _, c, _ in items]
        assert db.execute("SELECT COUNT(*) FROM event_messages").fetchone() == (3,)  # m1, m"2}, ""
    rows = packed_rows(path)
    assert rows[0] == ('{"text":"chunk 1 "}', 1, "integer") and rows[1][1] == 1  # (content, message, time)
    assert [row[1] is None for row in rows] == [False, False, False, True, True, True, True, True, False, False, True]


def test_appends_after_a_reopen_and_a_rolled_back_batch_reuse_the_keys_in_the_file(tmp_path):
    path = str(tmp_path / "events.db")
    log = EventLog(path, "sess_x", "ws_x").create()
    log.append([("agent_message", "turn_a", {"text": "a", "agent_message_id": "m1"}, "general")])
    with pytest.raises(sqlite3.Error):  # a value SQLite cannot bind: the batch rolls back, its new keys with it
        log.append([("agent_message", "turn_b", {"text": "b", "agent_message_id": "m2"}, object())])
    log.close()
    log = EventLog(path, "sess_x", "ws_x")
    log.append([("agent_message", "turn_b", {"text": "c", "agent_message_id": "m2"}, "general"),
                ("agent_message", "turn_a", {"text": "d", "agent_message_id": "m1"}, "general")])
    assert [(r["turn_id"], r["content"]) for r in log.read_all()] == [
        ("turn_a", {"text": "a", "agent_message_id": "m1"}), ("turn_b", {"text": "c", "agent_message_id": "m2"}),
        ("turn_a", {"text": "d", "agent_message_id": "m1"})]
    log.close()


def test_a_batch_stores_its_timestamp_once_and_every_row_reads_it(tmp_path):
    path = str(tmp_path / "events.db")
    log = EventLog(path, "sess_x", "ws_x").create()
    first = log.append([("agent_message", "turn_a", {"text": str(n), "agent_message_id": "m"}, "general")
                        for n in range(50)])
    second = log.append([("done", "turn_a", {}, "general")])
    log.close()
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT timestamp FROM events ORDER BY sequence").fetchall() == [
            (r["timestamp"],) for r in first + second]
        assert db.execute("SELECT COUNT(*) FROM event_times").fetchone() == (2,)


@pytest.mark.parametrize("timestamp", ["2026-12-04T09:27:24.049330Z", "1969-12-31T23:59:59.999999Z", "later", ""])
def test_any_timestamp_text_reads_back_as_it_was(tmp_path, timestamp):
    path = str(tmp_path / "events.db")
    EventLog(path, "sess_x", "ws_x").create().close()
    with closing(sqlite3.connect(path)) as db, db:
        Packer().insert(_Peewee(db), [(1, "evt_1", "turn_a", "done", "general", "{}", timestamp)],
                        [("done", "turn_a", {}, "general")])
        assert db.execute("SELECT timestamp FROM events").fetchone() == (timestamp,)


class _Peewee:
    """The one call Packer makes of the store's peewee database, on a plain connection."""

    def __init__(self, db):
        self.db = db

    def execute_sql(self, sql, params=()):
        return self.db.execute(sql, params)

    def cursor(self):
        return self.db.cursor()


@pytest.mark.parametrize("sizes", [(1, 7, 8, 9), (63, 64, 65), (200, 1, 129)])
def test_batches_of_any_size_are_stored_whole_and_in_order(tmp_path, sizes):
    """A batch is written in statements of 64, 8 and 1 rows (packing.insert_rows): every size reads back."""
    log = EventLog(str(tmp_path / "events.db"), "sess_x", "ws_x").create()
    written = []
    for size in sizes:
        items = [("agent_message", "turn_a", {"text": f"chunk {len(written) + i} ", "agent_message_id": "m1"},
                  "general") for i in range(size)]
        records = log.append(items)
        assert [r["sequence"] for r in records] == list(range(len(written) + 1, len(written) + size + 1))
        written += records
    read = log.read_all()
    assert [compact_json(r) for r in read] == [r.json() for r in written]
    assert [r["sequence"] for r in read] == list(range(1, sum(sizes) + 1))
    log.close()
