"""Session records: the meta.json document, its directory, and the catalog index kept in step.

Layer 4. The directory is the source of truth: meta.json is written first, the catalog row second,
so a crash between the two is repaired by boot reconciliation.
"""

import json
import logging
import os
import shutil

from compozy.clock import now_iso
from compozy.errors import CompozyError
from compozy.paths import make_private_dir
from compozy.serialize import session_resource
from compozy.states import RuntimeStatus, SessionState
from compozy.store.meta import MetaError, read_meta, write_meta

log = logging.getLogger("compozy.session")

TRASH_PREFIX = ".removing-"


def new_document(session_id, *, name, session_type, agent_name, workspace_id, cwd, lineage):
    stamp = now_iso()
    return {
        "id": session_id, "name": name, "type": session_type, "agent_name": agent_name,
        "workspace_id": workspace_id, "cwd": cwd, "state": SessionState.ACTIVE.value,
        "created_at": stamp, "updated_at": stamp, "archived": False, "archived_at": None,
        "lineage": lineage,
        "runtime": {"status": RuntimeStatus.UNBOUND.value, "transition": "", "generation": 0,
                    "selected": None, "selection_revision": 0, "effective": None, "last_known": None,
                    "acp_session_id": None, "process": None, "recovery": None},
        "fences": {"epoch": 0, "generation": 0},
        "stop_reason": None, "stop_detail": None, "failure": None, "attention": None,
        "escalated": False, "verified": None,
    }


class SessionStore:
    """Creates, saves, reads and removes session records on disk and in the catalog."""

    def __init__(self, home, catalog, logs):
        self.home, self.catalog, self.logs = home, catalog, logs

    def create(self, document):
        """Directory, events.db, meta.json, then the catalog row (the seed's creation steps 2-4)."""
        directory = self.home.session_dir(document["id"])
        make_private_dir(directory)
        self.logs.get(document["id"], document["workspace_id"]).create()
        self.save(document, touch=False)
        return document

    def save(self, document, touch=True):
        if touch:
            document["updated_at"] = now_iso()
        path = self.home.meta_file(document["id"])
        write_meta(path, document)
        self.index(document, meta_mtime=os.stat(path).st_mtime_ns)
        return document

    def index(self, document, orphaned=False, meta_mtime=None):
        """The catalog row, with the rendered read a list returns for sessions not live here."""
        max_sequence = (document.get("fences") or {}).get("max_sequence", 0)
        resource = json.dumps(session_resource(document, None, max_sequence), separators=(",", ":"))
        self.catalog.upsert_session(document, resource, orphaned, meta_mtime)

    def get(self, session_id):
        """The indexed document, or None when the catalog does not know the ID."""
        return self.catalog.session_doc(session_id)

    def require(self, session_id, workspace_id=None):
        document = self.get(session_id)
        flags = document and self.catalog.session_flags(session_id)
        if document is None or flags["orphaned"] or (workspace_id and document["workspace_id"] != workspace_id):
            raise CompozyError("session_not_found", f"no session {session_id}", session_id=session_id)
        return document

    def events(self, document):
        return self.logs.get(document["id"], document["workspace_id"])

    def read_directory(self, session_id):
        return read_meta(self.home.meta_file(session_id))

    def remove(self, document):
        """Rename the directory away, drop the catalog row, then delete; never half-removed."""
        session_id = document["id"]
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


__all__ = ["SessionStore", "new_document", "MetaError"]
