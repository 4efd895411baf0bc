"""Boot reconciliation: the catalog is rebuilt from the session directories, which it never rewrites.

Layer 4. A directory whose meta.json names an unknown session type or a retired spawn role is
skipped (logged once per daemon run) and never deleted, moved or rewritten.
"""

import logging
import os

from compozy.ids import is_valid_id
from compozy.session.records.store import MetaError
from compozy.states import RETIRED_SPAWN_ROLES, SessionType

log = logging.getLogger("compozy.boot")
KNOWN_TYPES = tuple(t.value for t in SessionType)


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
        on_disk = set()
        indexed = self.store.catalog.indexed_mtimes()
        sessions_dir = str(self.store.home.sessions_dir)  # plain strings: pathlib cost ~1 s over 10,000 folders
        with self.store.catalog.transaction():  # one commit for the whole index, not one per session
            for name in self.store.directories():
                if not is_valid_id(name, "sess"):
                    log.warning("ignoring %s in the sessions folder: not a session ID", name[:80])
                    continue
                on_disk.add(name)
                mtime = _mtime(os.path.join(sessions_dir, name, "meta.json"))
                if mtime is None or indexed.get(name) != mtime:  # unchanged files are already indexed
                    self._reconcile_directory(name, mtime)
        for session_id in set(self.store.catalog.session_ids()) - on_disk:
            log.warning("session %s has a catalog row but no directory; marked orphaned", session_id)
            self.store.catalog.set_orphaned(session_id)
        return self.skipped

    def _reconcile_directory(self, session_id, mtime=None):
        try:
            document = self.store.read_directory(session_id)
            reason = skip_reason(document) if document["id"] == session_id else "id_mismatch"
            if reason:
                self._skip(session_id, document, reason)
            else:
                self.store.index(self.store.typed(document), meta_mtime=mtime)
        except MetaError as exc:
            log.warning("cannot recover session %s: %s", session_id, exc)
            self._orphan_existing_row(session_id)

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
