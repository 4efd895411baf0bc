"""The session store: each SessionRecord's directory, its meta.json, and the catalog index kept in step.

Layer 4. The directory is the source of truth: meta.json is written first, the catalog row second,
so a crash between the two is repaired by boot reconciliation.
"""

import logging
import os
import shutil

from compozy.clock import now_iso
from compozy.errors import CompozyError
from compozy.paths import make_private_dir
from compozy.serialize import encode, session_resource
from compozy.session.records.record import RuntimeRecord, SessionRecord
from compozy.store.meta import MetaError, write_meta
from compozy.store.sessionindex import session_row

log = logging.getLogger("compozy.session")

TRASH_PREFIX = ".removing-"


def new_record(session_id, *, name, session_type, agent_name, workspace_id, cwd, lineage):
    """An active session with its runtime unbound."""
    stamp = now_iso()
    return SessionRecord(session_id, session_type, agent_name, workspace_id, cwd, stamp, stamp, name=name,
                         lineage=lineage, runtime=RuntimeRecord())


class SessionStore:
    """Creates, saves, reads and removes session records on disk and in the catalog."""

    def __init__(self, home, catalog, logs, agent_defaults=lambda agent_name: None):
        """agent_defaults(agent_name): that agent's configured runtime, shown by list rows of sessions that
        never ran and select nothing."""
        self.home, self.catalog, self.logs = home, catalog, logs
        self.agent_defaults = agent_defaults

    def create(self, record, carried=None):
        """Directory, events.db (with the context a derived session carries), meta.json, then the
        catalog row (the seed's creation steps 2-4)."""
        directory = self.home.session_dir(record.id)
        make_private_dir(directory)
        self.logs.get(record.id, record.workspace_id).create(carried)
        self.save(record, touch=False)
        return record

    def discard_directory(self, session_id):
        """A session directory nothing indexes (a creation an unclean exit interrupted)."""
        self.logs.forget(session_id)
        shutil.rmtree(self.home.session_dir(session_id), ignore_errors=True)

    def save(self, record, touch=True):
        if touch:
            record.updated_at = now_iso()
        path = self.home.meta_file(record.id)
        document = record.to_dict()
        write_meta(path, document)
        self.index(record, document, meta_mtime=os.stat(path).st_mtime_ns)
        return record

    def index(self, record, document=None, orphaned=False, meta_mtime=None):
        """The catalog row, with the rendered read a list returns for sessions not live here."""
        self.catalog.upsert_sessions([index_row(record, document, orphaned, meta_mtime,
                                                self.agent_defaults(record.agent_name))])

    def get(self, session_id):
        """The indexed record, or None when the catalog does not know the ID."""
        document = self.catalog.session_doc(session_id)
        return SessionRecord.from_dict(document) if document is not None else None

    def require(self, session_id, workspace_id=None):
        record = self.get(session_id)
        flags = record and self.catalog.session_flags(session_id)
        if record is None or flags["orphaned"] or (workspace_id and record.workspace_id != workspace_id):
            raise CompozyError("session_not_found", f"no session {session_id}", session_id=session_id)
        return record

    def in_states(self, states, where="1"):
        """The records in these states; where narrows them in SQL first (boot reads 10,000 rows)."""
        return [SessionRecord.from_dict(d) for d in self.catalog.documents_in_states(states, where)]

    def events(self, record):
        return self.logs.get(record.id, record.workspace_id)

    def indexable(self, document, meta_mtime=None):
        """The catalog row of a meta.json document (read_meta); MetaError when it is no complete
        session document: a field every session has is missing, or a value is not of its kind."""
        try:
            record = SessionRecord.from_dict(document)
            return index_row(record, meta_mtime=meta_mtime, agent_defaults=self.agent_defaults(record.agent_name))
        except (TypeError, ValueError, AttributeError) as exc:
            raise MetaError(f"session {document.get('id')}: not a complete session document ({exc})") from None

    def remove(self, record):
        """Rename the directory away, drop the catalog row, then delete; never half-removed."""
        session_id = record.id
        self.logs.forget(session_id)
        directory = self.home.session_dir(session_id)
        trash = directory.with_name(TRASH_PREFIX + session_id)
        try:
            os.rename(directory, trash)
        except FileNotFoundError:
            trash = None
        except OSError as exc:
            raise CompozyError("internal_error", f"cannot remove {directory}: {exc}") from exc
        try:
            self.catalog.delete_session(session_id)
        except Exception:
            if trash:
                os.rename(trash, directory)  # restore catalog truth: the session is still whole
            raise
        if trash:
            shutil.rmtree(trash, ignore_errors=True)

    def directories(self):
        """Session IDs with a directory on disk (leftover removals are finished here)."""
        found = []
        for entry in os.scandir(self.home.sessions_dir):
            if entry.name.startswith(TRASH_PREFIX):
                shutil.rmtree(entry.path, ignore_errors=True)
            elif entry.is_dir(follow_symlinks=False) and not entry.name.startswith("."):
                found.append(entry.name)
        return found


def index_row(record, document=None, orphaned=False, meta_mtime=None, agent_defaults=None):
    max_sequence = (record.fences or {}).get("max_sequence", 0)
    resource = encode(session_resource(record, None, max_sequence, agent_defaults))
    return session_row(document or record.to_dict(), resource, orphaned, meta_mtime)


__all__ = ["SessionStore", "new_record", "MetaError"]
