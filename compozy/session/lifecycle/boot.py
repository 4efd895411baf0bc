"""Boot reconciliation: the catalog is rebuilt from the session directories, which it never rewrites.

Layer 4. A directory whose meta.json names an unknown session type or a retired spawn role is
skipped (logged once per daemon run) and never deleted, moved or rewritten.
"""

import logging
import os

from compozy.ids import is_valid_id
from compozy.store.meta import MetaError, read_meta
from compozy.states import RETIRED_SPAWN_ROLES, SessionType

log = logging.getLogger("compozy.boot")
KNOWN_TYPES = tuple(t.value for t in SessionType)
BATCH = 500  # rows indexed per statement: one statement, not a savepoint per session, and bounded memory


def skip_reason(document):
    if document.get("type") not in KNOWN_TYPES:
        return "unknown_session_type"
    if (document.get("lineage") or {}).get("spawn_role") in RETIRED_SPAWN_ROLES:
        return "retired_spawn_role"
    return None


class Reconciler:
    """Runs once per daemon: index every recoverable directory, orphan what cannot be recovered."""

    def __init__(self, store):
        self.store = store
        self.warned = set()
        self.skipped = {}

    def run(self):
        on_disk, rows = set(), []
        indexed = self.store.catalog.indexed_mtimes()
        sessions_dir = str(self.store.home.sessions_dir)  # plain strings: pathlib cost ~1 s over 10,000 folders
        with self.store.catalog.transaction():  # one commit for the whole index, not one per session
            for name in sorted(self.store.directories()):  # in ID order: the index b-trees grow at their end
                if not is_valid_id(name, "sess"):
                    log.warning("ignoring %s in the sessions folder: not a session ID", name[:80])
                    continue
                on_disk.add(name)
                path = os.path.join(sessions_dir, name, "meta.json")
                mtime = _mtime(path)
                if mtime is None or indexed.get(name) != mtime:  # unchanged files are already indexed
                    rows += self._reconcile_directory(name, path, mtime)
                if len(rows) >= BATCH:
                    self.store.catalog.upsert_sessions(rows)
                    rows = []
            self.store.catalog.upsert_sessions(rows)
        for session_id in set(self.store.catalog.session_ids()) - on_disk:
            log.warning("session %s has a catalog row but no directory; marked orphaned", session_id)
            self.store.catalog.set_orphaned(session_id)
        return self.skipped

    def _reconcile_directory(self, session_id, path, mtime):
        """The catalog rows to write for one folder: its own, or none (skipped or unrecoverable)."""
        try:
            document = read_meta(path)
            reason = skip_reason(document) if document["id"] == session_id else "id_mismatch"
            if not reason:
                return [self.store.indexable(document, meta_mtime=mtime)]
            self._skip(session_id, document, reason)
        except MetaError as exc:
            log.warning("cannot recover session %s: %s", session_id, exc)
            self._orphan_existing_row(session_id)
        return []

    def _skip(self, session_id, document, reason):
        self.skipped[session_id] = reason
        if session_id not in self.warned:
            self.warned.add(session_id)
            log.warning("observe.session_recovery_skipped session_id=%s session_type=%s spawn_role=%s reason=%s",
                        session_id, document.get("type"), (document.get("lineage") or {}).get("spawn_role"),
                        reason)
        self._orphan_existing_row(session_id)

    def _orphan_existing_row(self, session_id):
        if self.store.catalog.session_flags(session_id):
            self.store.catalog.set_orphaned(session_id)


def _mtime(path):
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
