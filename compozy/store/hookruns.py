"""A session's hook-run history: a table of its own in the session's events.db.

Layer 2. Hook runs are not transcript events: they take no sequence number, so recording one never
moves a session's fences. The table is created on first use, so stores written before it exist
read as having no runs.
"""

import json

from peewee import OperationalError

from compozy.ids import new_id

DDL = ("CREATE TABLE IF NOT EXISTS hook_runs (id TEXT PRIMARY KEY, event TEXT NOT NULL, "
       "started_at TEXT NOT NULL, document TEXT NOT NULL)")
COLUMNS = ("event", "command", "exit_code", "timed_out", "duration_ms", "output", "truncated", "error")


def record(log, run):
    """Commit one run ({"event", "started_at", ...COLUMNS}); answers it with its id."""
    run = {"id": new_id("hook"), **run}
    with log._write() as db:  # noqa: SLF001 (the store's own writer: one connection per file)
        db.execute_sql(DDL)
        db.execute_sql("INSERT INTO hook_runs (id, event, started_at, document) VALUES (?, ?, ?, ?)",
                       (run["id"], run["event"], run["started_at"], json.dumps(run, separators=(",", ":"))))
    return run


def recent(log, limit=20):
    """The newest `limit` runs, oldest first."""
    with log._read() as db:  # noqa: SLF001
        try:
            rows = db.execute_sql("SELECT document FROM hook_runs ORDER BY rowid DESC LIMIT ?", (limit,)).fetchall()
        except OperationalError:  # no run was ever recorded in this store
            return []
    return [json.loads(row[0]) for row in reversed(rows)]
