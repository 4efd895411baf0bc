"""An adoption copies the session's folder from shared storage (fleet/adoption.copy_in): its SQLite stores through
SQLite's backup, each a snapshot of what was committed, whatever their WAL still held and while their old node
may still be writing; every other file as it is, and nothing of the stores' WAL or shared-memory files."""

import os
import sqlite3
import stat
from contextlib import closing

from compozy.fleet.adoption import copy_in


def test_the_copy_holds_every_committed_row_of_a_store_still_open_for_writing(tmp_path):
    source, staging = tmp_path / "sess_a", tmp_path / "staging"
    source.mkdir()
    (source / "meta.json").write_text('{"id": "sess_a"}')
    (source / "notes").mkdir()
    (source / "notes" / "a.txt").write_text("kept")
    writer = sqlite3.connect(source / "events.db", isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")  # every commit stays in the WAL
        writer.execute("CREATE TABLE rows (n INTEGER)")
        for number in range(100):
            writer.execute("INSERT INTO rows VALUES (?)", (number,))
        writer.execute("BEGIN IMMEDIATE")  # a transaction under way when the copy is taken: not in it
        writer.execute("INSERT INTO rows VALUES (-1)")
        assert (source / "events.db-wal").stat().st_size > 0
        staging.mkdir()
        copy_in(source, staging)
    finally:
        writer.close()
    with closing(sqlite3.connect(staging / "events.db")) as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert copy.execute("SELECT COUNT(*), MIN(n), MAX(n) FROM rows").fetchone() == (100, 0, 99)
    assert (staging / "meta.json").read_text() == '{"id": "sess_a"}'
    assert (staging / "notes" / "a.txt").read_text() == "kept"
    assert not (staging / "events.db-wal").exists() and not (staging / "events.db-shm").exists()
    assert stat.S_IMODE((staging / "events.db").stat().st_mode) == 0o600


def test_links_are_copied_as_links(tmp_path):
    source, staging = tmp_path / "sess_a", tmp_path / "staging"
    source.mkdir()
    (tmp_path / "elsewhere.db").write_bytes(b"not ours")
    (source / "linked.db").symlink_to(tmp_path / "elsewhere.db")
    (source / "notes.txt").symlink_to("meta.json")
    staging.mkdir()
    copy_in(source, staging)
    assert os.readlink(staging / "linked.db") == str(tmp_path / "elsewhere.db")
    assert os.readlink(staging / "notes.txt") == "meta.json"
