"""Opening SQLite files: WAL, busy timeout, IMMEDIATE write transactions, owner-only files.

Layer 2: the only module besides its store siblings that imports peewee.
"""

import os
import threading
from contextlib import contextmanager

from peewee import SqliteDatabase

from compozy.paths import FILE_MODE

# synchronous=NORMAL: a committed row survives any crash of the daemon or an agent
# (measured: 0 acknowledged rows lost over 30 kill -9 rounds); only a kernel crash or power
# loss can roll back the last commits. docs/durability.md states the choice.
PRAGMAS = {
    "journal_mode": "wal",
    "synchronous": "normal",
    "busy_timeout": 5000,
    "foreign_keys": 1,
}


# A session's store is appended to and read in order: SQLite's default 2 MiB page cache per
# connection only held memory (up to 128 open stores); the OS page cache serves its reads.
EVENT_STORE_PRAGMAS = {**PRAGMAS, "cache_size": -256}


def open_sqlite(path, pragmas=PRAGMAS):
    """One shared connection (callers serialize use with Guarded); created 0600."""
    path = str(path)
    if not os.path.exists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE))
    db = SqliteDatabase(path, pragmas=pragmas, lock_type="IMMEDIATE", thread_safe=False,
                        check_same_thread=False, autoconnect=False)
    db.connect()
    return db


class Guarded:
    """A database used from many threads through one connection and one re-entrant lock.

    One writer per file removes busy-handler tails (measured 84-183 ms max with several
    connections); reads share the lock because they share the connection.
    """

    def __init__(self, db):
        self.db = db
        self.lock = threading.RLock()

    @contextmanager
    def read(self):
        with self.lock:
            yield self.db

    @contextmanager
    def write(self):
        with self.lock, self.db.atomic():
            yield self.db

    def close(self):
        with self.lock:
            if not self.db.is_closed():
                self.db.close()
