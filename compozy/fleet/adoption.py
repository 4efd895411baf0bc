"""Adopting a session whose node went away: its folder copied from shared storage with its control rows (its
admissions, queued inputs, permission requests, rewind receipts and the derivations made from it, read from that
node's catalog beside the folder), the lease taken with a new fencing token, the folder moved into this node's
home and pointed at this node's workspace of the same name. That node's home also holds the shadow repository
its checkpoints are in (node_home) and the sessions a continue or fork of it made there (meta_there).

Layer 4. The façade (fleet.views.adopt_session) runs the steps in order, carries the session's checkpoints
(session.turns.checkpoints) and runs the boot repair after them; the lease
is PostgreSQL's (compozy.fleet.catalog.take_lease), taken only after the copy is whole, so a failed copy
leaves the session where it was.
"""

import contextlib
import fnmatch
import glob
import json
import logging
import os
import shutil
import sqlite3
import tempfile

from pathlib import Path

from compozy.errors import CompozyError
from compozy.fleet.catalog import FleetDown
from compozy.paths import FILE_MODE, Home
from compozy.store.meta import MetaError, read_meta
from compozy.store.handover import Unreadable, read_session_rows

log = logging.getLogger("compozy.fleet")


def refuse(session_id, reason, message, **details):
    return CompozyError("session_not_adoptable", message, session_id=session_id, reason=reason, **details)


def check(catalog, session_id, this_node, local_workspace):
    """What the fleet catalog says of the session, once every rule of an adoption holds; else refused.
    local_workspace(name): this node's workspace of that name, or None."""
    try:
        found = catalog.adoption(session_id)
    except FleetDown as exc:
        raise CompozyError("fleet_catalog_unavailable", f"the fleet catalog cannot be reached: {exc}") from None
    if found is None:
        raise CompozyError("session_not_found", f"no node of the fleet has session {session_id}", session_id=session_id)
    node = found["node"]
    if node == this_node:
        raise refuse(session_id, "already_here", f"session {session_id} is this node's already", node=node)
    if found["up"]:
        raise refuse(session_id, "node_up", f"node {node!r} holds session {session_id} and answers: act on it "
                                            f"there (any node relays to it)", node=node)
    if not found["shared_storage"]:
        raise refuse(session_id, "not_shared", f"workspace {found['workspace']!r} of node {node!r} is not on shared "
                                               f"storage (fleet.shared_storage); its sessions cannot be adopted",
                     node=node, workspace=found["workspace"])
    if local_workspace(found["workspace"]) is None:
        raise refuse(session_id, "no_workspace", f"this node has no workspace named {found['workspace']!r}: add it "
                                                 f"(compozy workspace add {found['workspace']} PATH) first",
                     node=node, workspace=found["workspace"])
    if not os.path.isfile(os.path.join(found["folder"], "meta.json")):
        raise refuse(session_id, "folder_unreachable", f"the session's folder {found['folder']} cannot be read from "
                                                       f"this node", node=node, folder=found["folder"])
    return found


def gather(session_id, found, staging):
    """The session's folder copied to staging and its control rows read from its node's catalog, or refused with
    nothing moved."""
    try:
        copy_in(found["folder"], staging)
        return control_rows(session_id, found)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise refuse(session_id, "folder_unreachable", f"the session's folder {found['folder']} could not be copied: "
                     f"{exc}", node=found["node"]) from None
    except CompozyError:
        shutil.rmtree(staging, ignore_errors=True)
        raise


STORE_FILES = ("*.db", "*.db-wal", "*.db-shm", "*.db-journal")


def copy_in(source, staging):
    """The session's folder copied beside this home's sessions (not yet among them), into this attempt's own
    staging folder (staging_folder). Its SQLite stores are copied through SQLite's backup, each a snapshot of
    its committed rows: a node the fleet lost touch with may still be writing, and a file copy could take the
    database and its WAL at different moments."""
    shutil.copytree(source, staging, symlinks=True, dirs_exist_ok=True, ignore=_store_files)
    for store in sorted(Path(source).rglob("*.db")):
        if store.is_file() and not store.is_symlink():
            copy_store(store, Path(staging) / store.relative_to(source))


def _store_files(folder, names):
    """What copytree leaves to copy_store: the stores and their journals (a link is copied as a link)."""
    return {name for name in names if any(fnmatch.fnmatch(name, pattern) for pattern in STORE_FILES)
            and not os.path.islink(os.path.join(folder, name))}


def copy_store(source, target):
    """A consistent copy of one SQLite database (with what its WAL holds), owner-only."""
    with contextlib.closing(sqlite3.connect(source)) as reading, contextlib.closing(sqlite3.connect(target)) as copy:
        reading.backup(copy)
    os.chmod(target, FILE_MODE)


def staging_folder(adopting, session_id):
    """This attempt's own empty folder under home/adopting (an attempt a crash left behind is removed first: the
    caller holds the session's adoption lock)."""
    os.makedirs(adopting, mode=0o700, exist_ok=True)
    for stale in glob.glob(os.path.join(glob.escape(str(adopting)), f"{session_id}.*.staging")):
        shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"{session_id}.", suffix=".staging", dir=adopting))


def note(adopting, session_id, found):
    """What the adoption started from, kept until it is whole: a retry after a crash resumes it (resumable)."""
    path = os.path.join(adopting, f"{session_id}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(found, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(path + ".tmp", path)


def forget(adopting, session_id):
    try:
        os.unlink(os.path.join(adopting, f"{session_id}.json"))
    except FileNotFoundError:
        pass


def finish(adopting, session_id):
    """An adoption whose session is held here already but whose note is still there (a crash after the folder was
    in place and indexed): the old node's folder removed, the note forgotten."""
    try:
        with open(os.path.join(adopting, f"{session_id}.json"), encoding="utf-8") as handle:
            source = json.load(handle)["folder"]
    except (OSError, ValueError, KeyError, TypeError):
        return
    if os.path.isdir(source):
        leave_source(source)
    forget(adopting, session_id)


def resumable(catalog, session_id, this_node, adopting):
    """(found, token) of an adoption this node took the lease for and did not finish (a crash or error after
    take_lease): PostgreSQL's lease names this node, its note says where the session came from. None otherwise."""
    try:
        lease = catalog.lease(session_id)
    except FleetDown as exc:
        raise CompozyError("fleet_catalog_unavailable", f"the fleet catalog cannot be reached: {exc}") from None
    if lease is None or lease[0] != this_node:
        return None
    try:
        with open(os.path.join(adopting, f"{session_id}.json"), encoding="utf-8") as handle:
            found = json.load(handle)
    except (OSError, ValueError):
        return None  # no adoption of it under way here: checked as any other
    if not os.path.isfile(os.path.join(found["folder"], "meta.json")):
        raise refuse(session_id, "folder_unreachable", f"the session's folder {found['folder']} cannot be read from "
                                                       f"this node", node=found["node"], folder=found["folder"])
    return found, lease[1]


def node_home(session_id, found):
    """The home of the session's node: its folder's home (a shared workspace's node keeps it on the shared
    storage); refused when the folder is not in a home's sessions folder."""
    folder = Path(found["folder"])
    home = Home(folder.parent.parent)
    if home.session_dir(session_id) != folder:
        raise refuse(session_id, "catalog_unreachable", f"the session's folder {folder} is not in a compozy home's "
                     f"sessions folder, so its node's catalog cannot be found", node=found["node"])
    return home


def meta_there(home, session_id):
    """The meta.json document of a session in the old node's home (a continue or fork of the adopted session made
    there), None when it was not written whole."""
    try:
        return read_meta(home.meta_file(session_id))
    except MetaError:
        return None


def control_rows(session_id, found):
    """The session's rows in its node's catalog (compozy.store.handover): that node's home is the folder's home
    (docs/fleet.md: a shared workspace's node keeps its home on the shared storage); refused when it cannot be
    read, so nothing acknowledged there is dropped."""
    home = node_home(session_id, found)
    try:
        return read_session_rows(home.catalog_file, session_id)
    except Unreadable as exc:
        raise refuse(session_id, "catalog_unreachable", f"the catalog of node {found['node']!r} (its queued inputs "
                     f"and requests) cannot be read from this node: {exc}", node=found["node"],
                     catalog=str(home.catalog_file)) from None


def settle_in(staging, target):
    """The copy becomes this home's session folder (a partial one an interrupted attempt left is replaced)."""
    if os.path.isdir(target) and not os.path.islink(target):
        shutil.rmtree(target)
    os.rename(staging, target)


def leave_source(source):
    """The other node's folder goes (it must not run it again): last, once the session is whole here."""
    try:
        shutil.rmtree(source)
    except OSError as exc:
        log.warning("adopted session folder %s could not be removed from its old node (%s); the lease fences it",
                    source, exc)


def repoint(record, workspace, old_path, token, node, from_node):
    """The record in this node's workspace of the same name; the lease it holds the session by."""
    if record.cwd == old_path or not record.cwd:
        record.cwd = workspace["path"]
    elif old_path and record.cwd.startswith(old_path.rstrip("/") + "/"):
        record.cwd = workspace["path"].rstrip("/") + record.cwd[len(old_path.rstrip("/")):]
    record.workspace_id = workspace["id"]
    record.extra["fleet_lease"] = {"node": node, "token": token, "adopted_from": from_node}
    return record
