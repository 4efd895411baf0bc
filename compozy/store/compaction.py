"""Compacting an archived session's event store, and the bytes a home's files take.

Layer 2. Compaction folds each run of an agent's chunks (one type, one turn, one archived mark) into its
first event, whose text becomes the run's joined text (the caller's fold redacts it: a value split across
chunks is whole once they are joined), deletes the rest of the run, checkpoints the WAL and VACUUMs. It is
the one write that deletes events, so it lifts the append-only trigger inside its own transaction and puts
it back before the commit; sequences stay what they were (no longer dense: a read pages by sequence
anyway). Only the retention policy calls it, on archived sessions that no process has open.
"""

import json
import os
import sqlite3

from compozy.store.eventschema import PACKED_TRIGGERS, TABLE_TRIGGERS

CHUNK_TYPES = ("agent_message", "thought")
APPEND_ONLY = "events_append_only"


def file_bytes(path):
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def tree_bytes(path):
    """The bytes of every regular file under a folder (not following links)."""
    total = 0
    for root, _, files in os.walk(path):
        total += sum(file_bytes(os.path.join(root, name)) for name in files)
    return total


def store_bytes(path):
    """(events.db bytes, its WAL and shared-memory bytes)."""
    return file_bytes(path), file_bytes(f"{path}-wal") + file_bytes(f"{path}-shm")


def chunk_runs(rows):
    """Runs of two or more consecutive chunk rows (sequence, type, turn_id, archived, content) of one kind."""
    runs, current, key = [], [], None
    for row in rows:
        row_key = (row[1], row[2], row[3]) if row[1] in CHUNK_TYPES else None
        if row_key is None or row_key != key:
            if len(current) > 1:
                runs.append(current)
            current, key = [], row_key
        if row_key is not None:
            current.append(row)
    if len(current) > 1:
        runs.append(current)
    return runs


def compact(path, fold):
    """Fold the store's chunk runs (fold(texts) -> the run's stored text), checkpoint, VACUUM.
    Returns {"folded_runs", "deleted_events", "bytes_before", "bytes_after"}."""
    before = sum(store_bytes(path))
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout=5000")
        rows = db.execute("SELECT sequence, type, turn_id, archived, content FROM events ORDER BY sequence").fetchall()
        runs = chunk_runs(rows)
        deleted = sum(len(run) - 1 for run in runs)
        if runs:
            db.execute("BEGIN IMMEDIATE")
            # the rows live in `events` (layout 1) or under the `events` view (packed); the trigger is put back
            # as the schema has it, also where it was missing
            packed = db.execute("SELECT type FROM sqlite_master WHERE name = 'events'").fetchone()[0] == "view"
            table, trigger = ("event_rows", PACKED_TRIGGERS[0]) if packed else ("events", TABLE_TRIGGERS[0])
            db.execute(f"DROP TRIGGER IF EXISTS {APPEND_ONLY}")
            for run in runs:
                first = json.loads(run[0][4])
                content = json.dumps({**first, "text": fold([json.loads(row[4]).get("text", "") for row in run]),
                                      "folded_chunks": len(run)}, separators=(",", ":"))
                db.execute(f"UPDATE {table} SET content = ?{', message = NULL' if packed else ''} WHERE sequence = ?",
                           (content, run[0][0]))
                db.execute(f"DELETE FROM {table} WHERE sequence BETWEEN ? AND ?", (run[1][0], run[-1][0]))
            if packed:  # the batches' timestamps and the messages no row refers to any more
                db.execute("DELETE FROM event_times WHERE time NOT IN (SELECT time FROM event_rows)")
                db.execute("DELETE FROM event_messages WHERE message NOT IN "
                           "(SELECT message FROM event_rows WHERE message IS NOT NULL)")
            db.execute(trigger)
            db.execute("COMMIT")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        db.close()
    return {"folded_runs": len(runs), "deleted_events": deleted, "bytes_before": before,
            "bytes_after": sum(store_bytes(path))}
