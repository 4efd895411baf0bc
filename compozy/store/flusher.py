"""Deferred fsync for meta.json: renamed at once, flushed to the disk in batches.

Layer 2. Like SQLite's WAL with synchronous=NORMAL: a write is atomic (temp file, rename) and
visible to every reader at once, so it survives any crash of the process; the fsync of the file
and of its folder runs on this thread, at most INTERVAL seconds later, once per file and once per
folder however many writes came in between. Only a power loss or kernel crash inside that window
can lose the newest writes (see docs/durability.md).
"""

import atexit
import logging
import os
import threading

log = logging.getLogger("compozy.store")

INTERVAL = 0.5  # seconds a renamed file may wait for its fsync


class Flusher:
    """A set of paths waiting for their fsync, and the one thread that flushes them."""

    def __init__(self, interval=INTERVAL):
        self.interval = interval
        self._pending = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread = None

    def defer(self, path):
        with self._lock:
            self._pending.add(os.fspath(path))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="meta-flusher", daemon=True)
                self._thread.start()

    def flush(self):
        """fsync every pending file, then each of their folders once."""
        with self._lock:
            paths, self._pending = self._pending, set()
        folders = {os.path.dirname(path) for path in paths}
        for path in sorted(paths) + sorted(folders):
            fsync_path(path)

    def _run(self):
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            try:
                self.flush()
            except Exception:  # never let the flusher die: the next round retries what is left
                log.exception("deferred fsync failed")


def fsync_path(path):
    """fsync a file or a folder; one removed meanwhile (a deleted session) needs none."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


FLUSHER = Flusher()
atexit.register(FLUSHER.flush)
