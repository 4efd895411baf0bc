"""Stores written before the packed layout (issue 26 item 7) still read, stream, export, search-index, rewind,
append and compact the same. A session is recorded by the real daemon and reference agent in the packed layout,
every read surface is answered, then the daemon stops and its events.db is rewritten in layout 1 exactly as the
code before the change wrote it (the schema below is copied from such a store; the rows are what the view reads);
a new daemon must give every surface the same answer, keep appending to the old file in its own layout, rewind in
it, and compaction must leave the same events in both layouts.
"""

import sqlite3
from contextlib import closing
from unittest.mock import ANY

import pytest

from compozy.store.compaction import compact
from tests.harness.api import events, run_turn, spath, wait_for
from tests.harness.sse import Viewer
from tests.test_tool_server import create

# sqlite_master of an events.db written before the packed layout (main at 9507ec8), verbatim.
LAYOUT_1 = (
    'CREATE TABLE "carried_context" ("singleton" INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1), '
    '"document" TEXT NOT NULL)',
    'CREATE TABLE "events" ("sequence" INTEGER NOT NULL PRIMARY KEY, "id" VARCHAR(255) NOT NULL, '
    '"turn_id" VARCHAR(255), "type" VARCHAR(255) NOT NULL, "agent_name" VARCHAR(255), "content" TEXT NOT NULL, '
    '"archived" INTEGER NOT NULL DEFAULT 0, "timestamp" VARCHAR(255) NOT NULL)',
    'CREATE INDEX "events_turn" ON "events" ("turn_id", "sequence")',
    'CREATE INDEX "events_type" ON "events" ("type", "sequence")',
    'CREATE TABLE "store_owner" ("singleton" INTEGER NOT NULL PRIMARY KEY CHECK (singleton = 1), '
    '"session_id" VARCHAR(255) NOT NULL, "workspace_id" VARCHAR(255) NOT NULL, "created_at" VARCHAR(255) NOT NULL)',
    'CREATE TABLE "token_usage" ("turn_id" VARCHAR(255) NOT NULL PRIMARY KEY, "usage" TEXT NOT NULL, '
    '"updated_at" VARCHAR(255) NOT NULL)',
    "CREATE TRIGGER store_owner_immutable BEFORE UPDATE ON store_owner\n"
    "        BEGIN SELECT RAISE(ABORT, 'store_owner is immutable'); END",
    "CREATE TRIGGER carried_context_immutable BEFORE UPDATE ON carried_context\n"
    "        BEGIN SELECT RAISE(ABORT, 'carried_context is immutable'); END",
    "CREATE TRIGGER events_append_only BEFORE DELETE ON events\n"
    "        BEGIN SELECT RAISE(ABORT, 'events are append-only'); END",
)
COPIED = ("events", "token_usage", "store_owner", "carried_context")


def layout_of(path):
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute("SELECT type FROM sqlite_master WHERE name = 'events'").fetchone()[0]


def rows_of(path):
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return db.execute("SELECT * FROM events ORDER BY sequence").fetchall()


def rewrite_in_layout_1(path):
    """The store's records written again as the code before the packed layout wrote them (4 KiB pages, WAL)."""
    old = path.with_name("layout1.db")
    with closing(sqlite3.connect(path)) as source, closing(sqlite3.connect(old)) as target, target:
        target.execute("PRAGMA journal_mode=wal")
        for statement in LAYOUT_1:
            target.execute(statement)
        for table in COPIED:
            rows = source.execute(f"SELECT * FROM {table}").fetchall()
            if rows:
                target.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
    for suffix in ("", "-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    old.rename(path)


def streamed(daemon, session, last):
    viewer = Viewer(int(daemon.http_url.rsplit(":", 1)[1]), spath(session, "stream") + "?after_sequence=0")
    try:
        return [frame["data"] for frame in viewer.read_until(lambda frame: frame["data"]["sequence"] >= last)]
    finally:
        viewer.close()


def found(api, q, **filters):
    return api.call("GET", "/api/search", query={"q": q, **filters})[1]["search"]["hits"]


def hits(api, q):
    return [{key: hit[key] for key in ("session_id", "message_id", "turn_id", "sequence", "kind", "snippet")}
            for hit in found(api, q)]


def answers(daemon, api, session):
    """What every read surface answers about the session."""
    stored = events(api, session, archive="all", limit=1000)
    return {"events": stored,
            "turn": events(api, session, turn_id=[e for e in stored if e["type"] == "done"][-1]["turn_id"],
                           type="agent_message,done"),
            "history": api.call("GET", spath(session, "history"))[1],
            "exports": {name: api.fetch("GET", spath(session, "export"), query={"format": name})[1]
                        for name in ("jsonl", "md", "html")},
            "stream": streamed(daemon, session, stored[-1]["sequence"]),
            "search": wait_for(lambda: hits(api, "echo"), what="the answers indexed")}


def test_a_store_in_the_old_layout_answers_the_same_and_keeps_working(home, daemon, workspace):
    api = daemon.client(timeout=30)
    session = create(api, workspace, name="old")
    run_turn(api, session, "[chunks 40] [thought pondering] first")
    run_turn(api, session, "[tool Lint] [say the key is] [say 42] second")
    api.call("POST", spath(session, "stop"))  # its session_stopped now, not at the daemon's shutdown
    wait_for(lambda: events(api, session, type="session_stopped"), what="the session stopped")
    before = answers(daemon, api, session)
    daemon.stop()
    path = home / "sessions" / session["id"] / "events.db"
    assert layout_of(path) == "view"  # written in the packed layout
    packed_rows = rows_of(path)
    copies = {name: path.with_name(f"{name}.db") for name in ("packed", "table")}
    for copy in copies.values():
        with closing(sqlite3.connect(path)) as source, closing(sqlite3.connect(copy)) as target:
            source.backup(target)
    rewrite_in_layout_1(copies["table"])
    rewrite_in_layout_1(path)
    assert layout_of(path) == "table" and rows_of(path) == packed_rows

    bare = path.with_name("bare.db")  # a packed store whose append-only trigger was dropped by hand
    with closing(sqlite3.connect(copies["packed"])) as source, closing(sqlite3.connect(bare)) as target:
        source.backup(target)
        target.execute("DROP TRIGGER events_append_only")

    # Compaction leaves the same events whichever layout it folds.
    folded = [compact(str(copy), "".join) for copy in copies.values()]
    assert folded[0]["folded_runs"] == folded[1]["folded_runs"] > 0
    assert rows_of(copies["packed"]) == rows_of(copies["table"]) and len(rows_of(copies["table"])) < len(packed_rows)
    assert [layout_of(copy) for copy in copies.values()] == ["view", "table"]
    # ... also one without its trigger, which it puts back: the events stay append-only
    assert compact(str(bare), "".join) == {**folded[0], "bytes_before": ANY, "bytes_after": ANY}
    assert rows_of(bare) == rows_of(copies["packed"])
    with closing(sqlite3.connect(bare)) as db, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        db.execute("DELETE FROM event_rows")

    daemon.start()
    api = daemon.client(timeout=30)
    api.call("POST", "/api/search/reindex")  # the index built again from the old file
    wait_for(lambda: hits(api, "echo") == before["search"], what="the old store indexed again")
    assert answers(daemon, api, session) == before

    # The old file keeps its layout when the session goes on, and a rewind archives in it.
    third = run_turn(api, session, "[chunks 5] third")
    assert [e["content"].get("text") for e in third if e["type"] == "agent_message"][-1] == "echo: third"
    message_id = next(e for e in events(api, session, type="user_message", limit=1000)
                      if e["content"]["text"] == "[chunks 5] third")["content"]["message_id"]
    fences = api.call("GET", spath(session))[1]["session"]["fences"]
    api.call("POST", spath(session, "rewind"), {"message_id": message_id, "idempotency_key": "back",
                                                 **{f"expected_{name}": value for name, value in fences.items()}})
    active = events(api, session, limit=1000)
    assert active[:len(before["events"])] == before["events"]
    assert all(e["type"] != "user_message" for e in active[len(before["events"]):])
    archived = events(api, session, archive="archived", limit=1000)
    assert archived and all(e["archived"] for e in archived) and archived[0]["content"]["message_id"] == message_id
    assert api.call("GET", spath(session, "history"))[1]["messages"] == before["history"]["messages"]
    wait_for(lambda: [h for h in found(api, "third", rewound="true") if h["rewound"]], what="the rewind indexed")
    assert found(api, "third") == []
    daemon.stop()
    assert layout_of(path) == "table"
