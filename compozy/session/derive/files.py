"""What turns did to the workspace's files, and putting them back: checkpoints, diffs, restores.

Layer 4 (session.derive). Checkpoints are the session's `checkpoint` events (recorded by
session.turns.checkpoints); their trees live in the workspace's shadow repository. A turn's diff
is its start checkpoint against its end one (or the next one, or the folder now). A restore puts
the folder back to a checkpoint's tree: it refuses while any session working in the same folder
has a turn in flight (workspace_busy), and first takes a checkpoint of the folder as it is, so a
restore can itself be undone. A dry run changes nothing and names what would change, and which of
those files other sessions in the folder changed after the checkpoint.
"""

import logging

from compozy import validate as v
from compozy.checkpoints.shadow import ShadowError
from compozy.errors import CompozyError, invalid
from compozy.ids import validate_id

log = logging.getLogger("compozy.files")

MAX_PATCH_BYTES = 1 << 20
OTHER_SESSIONS_SCANNED = 200


def entries(session):
    """Every checkpoint event of the session's active transcript, oldest first, as list entries."""
    return [_entry(event) for event in session.log.read_all(types=["checkpoint"])]


def _entry(event):
    return {**event["content"], "turn_id": event["turn_id"], "sequence": event["sequence"],
            "created_at": event["timestamp"]}


def find(session, checkpoint_id):
    validate_id(checkpoint_id, "ckpt", not_found="checkpoint_not_found")
    for entry in entries(session):
        if entry.get("checkpoint_id") == checkpoint_id:
            return entry
    raise CompozyError("checkpoint_not_found", f"session {session.id} has no checkpoint {checkpoint_id}",
                       checkpoint_id=checkpoint_id)


def _unavailable(message, **details):
    return CompozyError("checkpoint_not_found", message, **details)


class Files:
    def __init__(self, services, sessions_in):
        """sessions_in(record): the records of the other sessions working in the same folder."""
        self.services, self.sessions_in = services, sessions_in

    @property
    def checkpointer(self):
        return self.services.checkpoints

    def list(self, session):
        self.checkpointer.settle(session.record.workspace_id)
        return {"checkpoints": entries(session)}

    # -- diffs ------------------------------------------------------------------------------

    def turn_diff(self, session, turn_id, query=None):
        query = dict(query or {})
        unknown = sorted(set(query) - set(v.DIFF_QUERY))
        if unknown:
            raise invalid(f"unknown parameter(s): {', '.join(unknown)}", parameters=unknown)
        if query.get("against", "end") not in v.DIFF_QUERY["against"].choices:
            raise invalid("against must be end or current", field="against")
        stat_only = bool(v.query_bool(query.get("stat"), "stat"))
        validate_id(turn_id, "turn", not_found="turn_not_found")
        self.checkpointer.settle(session.record.workspace_id)
        known = entries(session)
        start, end = _turn_bounds(session, known, turn_id)
        start, end = self.present(session, start), end and self.present(session, end)
        repo = self.checkpointer.repo(session.record)
        if query.get("against") == "current" or end is None:
            target = {"checkpoint_id": None, "tree": self._current_tree(session), "current": True}
        else:
            target = {"checkpoint_id": end["checkpoint_id"], "tree": end["tree"], "current": False}
        return {"diff": {"turn_id": turn_id, "against": "current" if target["current"] else "end",
                         **self._compare(repo, start, target, stat_only)}}

    def _compare(self, repo, start, target, stat_only):
        try:
            files = repo.numstat(start["tree"], target["tree"])
            document = {"from": {"checkpoint_id": start["checkpoint_id"], "tree": start["tree"]}, "to": target,
                        "files": files, "files_changed": len(files)}
            if not stat_only:
                document["patch"], document["truncated"] = repo.diff(start["tree"], target["tree"], MAX_PATCH_BYTES)
            return document
        except ShadowError as error:
            raise _unavailable(f"the checkpoint cannot be read: {error.message}", reason=error.reason) from None

    def _current_tree(self, session):
        """The folder's state now, read through the same index (not recorded as a checkpoint)."""
        config = self.services.config
        try:
            snapshot = self.checkpointer.repo(session.record).snapshot(
                None, config["checkpoints.max_file_bytes"], config["checkpoints.max_files"])
        except ShadowError as error:
            raise _unavailable(f"the folder's current state cannot be read: {error.message}",
                               reason=error.reason) from None
        return snapshot.tree

    # -- restores ---------------------------------------------------------------------------

    def restore(self, session, checkpoint_id, body):
        """Put the folder back to a checkpoint (files only; the conversation is untouched)."""
        body = v.check_body(body, v.RESTORE_FIELDS)
        entry = self.present(session, _usable(find(session, checkpoint_id)))
        with session.lock:
            if body.get("dry_run"):  # a look is never refused: it shows what a busy folder's restore would undo
                return {"restore": self.plan(session, entry)}
            self.check_not_busy(session)
            return {"restore": self.apply(session, entry)}

    def present(self, session, entry):
        """The entry, once its tree is known to be in the repository (gc drops what retention lets go)."""
        try:
            kept = self.checkpointer.repo(session.record).has(entry["tree"])
        except ShadowError as error:
            raise _unavailable(f"the checkpoint cannot be read: {error.message}", reason=error.reason) from None
        if kept:
            return entry
        left = self.checkpointer.uncarried(session.record)
        if left is not None:
            raise _unavailable(f"checkpoint {entry['checkpoint_id']} stayed on node {left.get('from_node')} when this "
                               f"session was adopted: its checkpoints could not be brought over ({left.get('error')})",
                               reason="not_carried", checkpoint_id=entry["checkpoint_id"])
        raise _unavailable(f"checkpoint {entry['checkpoint_id']} was dropped by gc (checkpoints.keep_last, "
                           "checkpoints.keep_for)", reason="pruned", checkpoint_id=entry["checkpoint_id"])

    def check_not_busy(self, session):
        busy = [{"session_id": other.id, "turn_id": other.turn.id} for other in self.services.live_sessions()
                if other.record.cwd == session.record.cwd and other.turn is not None]
        if busy:
            names = ", ".join(item["session_id"] for item in busy)
            raise CompozyError("workspace_busy", f"a turn is in flight in {session.record.cwd} (session {names}); "
                               "restore files once it has ended", sessions=busy, folder=session.record.cwd)

    def plan(self, session, entry):
        """What a restore to the entry would change; nothing is written."""
        repo = self.checkpointer.repo(session.record)
        compared = self._compare(repo, {"checkpoint_id": None, "tree": self._current_tree(session)},
                                 {"checkpoint_id": entry["checkpoint_id"], "tree": entry["tree"], "current": False},
                                 stat_only=False)
        changed = {item["path"] for item in compared["files"]} | {item["from"] for item in compared["files"]
                                                                    if "from" in item}
        return {"checkpoint_id": entry["checkpoint_id"], "dry_run": True, "files": compared["files"],
                "files_changed": compared["files_changed"], "patch": compared["patch"],
                "truncated": compared["truncated"], "other_sessions": self._others(session, entry, changed)}

    def apply(self, session, entry):
        """The undo point first, then the files; a `files_restored` event records both."""
        undo = self.checkpointer.take(session, "restore")
        if not undo or undo.get("status") != "taken":
            reason = (undo or {}).get("reason", "error")
            raise CompozyError("checkpoint_failed", "the folder's current state could not be checkpointed, so the "
                               f"restore would not be undoable: {(undo or {}).get('message', 'no checkpoint')}",
                               reason=reason)
        repo = self.checkpointer.repo(session.record)
        try:
            files = repo.numstat(undo["tree"], entry["tree"])
            repo.restore(undo["tree"], entry["tree"])
        except ShadowError as error:
            raise CompozyError("checkpoint_failed", f"the restore failed: {error.message}", reason=error.reason,
                               undo_checkpoint_id=undo["checkpoint_id"]) from None
        result = {"checkpoint_id": entry["checkpoint_id"], "undo_checkpoint_id": undo["checkpoint_id"],
                  "dry_run": False, "files": files, "files_changed": len(files)}
        session.append_event("files_restored", {**result, "files": files[:100]})
        log.info("session %s: files restored to %s (%d changed; undo with %s)", session.id, entry["checkpoint_id"],
                 len(files), undo["checkpoint_id"])
        return result

    def _others(self, session, entry, changed):
        """The files of `changed` other sessions in the folder changed after the checkpoint was taken."""
        found = []
        for record in self.sessions_in(session.record)[:OTHER_SESSIONS_SCANNED]:
            log_ = self.services.store.events(record)
            touched = set()
            for event in log_.read_all(types=["checkpoint"]):  # an end checkpoint lists what its turn changed
                if event["content"].get("kind") == "end" and event["timestamp"] > entry["created_at"]:
                    touched.update(item["path"] for item in event["content"].get("files", ()))
            overlap = sorted(touched & changed)
            if overlap:
                found.append({"session_id": record.id, "files": overlap})
        return found


def _usable(entry):
    if entry.get("status") != "taken":
        raise _unavailable(f"checkpoint {entry.get('checkpoint_id')} was not taken: {entry.get('message')}",
                           reason=entry.get("reason"))
    return entry


def start_of(session, turn_id, known=None):
    """The start checkpoint of a turn (the state before it acted)."""
    for entry in known if known is not None else entries(session):
        if entry["turn_id"] == turn_id and entry["kind"] == "start":
            return _usable(entry)
    raise _unavailable(f"turn {turn_id} has no start checkpoint (checkpoints were off, or the turn is older)",
                       turn_id=turn_id)


def end_of(session, turn_id, known=None):
    """The state after a turn: its end checkpoint, else the next one taken after its start, else None."""
    known = known if known is not None else entries(session)
    start = start_of(session, turn_id, known)
    later = [e for e in known if e["sequence"] > start["sequence"] and e.get("status") == "taken"]
    own = [e for e in later if e["turn_id"] == turn_id and e["kind"] == "end"]
    return (own or later or [None])[0]


def _turn_bounds(session, known, turn_id):
    if not session.log.read(turn_id=turn_id, limit=1, archive="active"):
        raise CompozyError("turn_not_found", f"session {session.id} has no turn {turn_id} in its active transcript",
                           turn_id=turn_id)
    return start_of(session, turn_id, known), end_of(session, turn_id, known)


class FileOperations:
    """The façade's file checkpoint operations (mixed into SessionManager, which supplies _session, catalog and
    rewinder: its Files)."""

    @property
    def files(self):
        return self.rewinder.files

    def list_checkpoints(self, session_id, workspace):
        """The session's checkpoints, oldest first."""
        return self.files.list(self._session(session_id, workspace))

    def turn_diff(self, session_id, workspace, turn_id, query=None):
        """What a turn changed in the workspace's files (or, against=current, what changed since it started)."""
        return self.files.turn_diff(self._session(session_id, workspace), turn_id, query)

    def gc(self, body=None):
        """Checkpoint retention and pruning in every workspace's shadow repository."""
        v.check_body(body or {}, v.GC_FIELDS)
        try:
            return {"gc": self.services.checkpoints.gc(set(self.catalog.session_ids()))}
        except ShadowError as error:
            raise CompozyError("checkpoint_failed", f"gc failed: {error.message}", reason=error.reason) from None

    def restore_checkpoint(self, session_id, workspace, checkpoint_id, body=None):
        """Put the files back to a checkpoint (dry_run: what would change); the conversation is untouched."""
        return self.files.restore(self._session(session_id, workspace), checkpoint_id, body)


def sessions_in_folder(catalog, store):
    """sessions_in(record) for Files: the other sessions of the record's workspace working in its folder."""
    def sessions_in(record):
        rows, _, _ = catalog.list_sessions({"workspace_id": record.workspace_id, "archive": "include"}, 1000)
        others = (store.get(row[0]) for row in rows if row[0] != record.id)
        return [other for other in others if other is not None and other.cwd == record.cwd]
    return sessions_in
