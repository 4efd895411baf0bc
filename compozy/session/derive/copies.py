"""A fork's own copy of the files: the source's checkpoint checked out into a new folder.

Layer 4 (session.derive). A fork with `files: copy` works in a new folder next to the source's
(`<folder>-fork-<suffix>`), registered as a workspace of its own (so the agent's file access and the
busy checks are the copy's), holding the files of the checkpoint that ends the turn it forks through
(a whole fork: the source's last checkpoint). The checkout comes from the workspace's shadow repository
(as `git worktree add` would make it); nothing of the source's folder or of the user's .git is touched.
"""

import shutil
from pathlib import Path

from compozy.checkpoints.shadow import ShadowError
from compozy.errors import CompozyError
from compozy.session.derive.files import end_of, entries


class Copy:
    def __init__(self, entry):
        self.entry, self.folder, self.workspace = entry, None, None

    def check_out(self, services, session, child_id, workspaces):
        """Make the folder and register it; the new session's (workspace_id, cwd)."""
        source = Path(session.record.cwd)
        self.folder = source.parent / f"{source.name}-fork-{child_id[-8:].lower()}"
        try:
            services.checkpoints.repo(session.record).copy_to(self.entry["tree"], self.folder)
        except (ShadowError, OSError) as error:
            self.discard()
            raise CompozyError("checkpoint_failed", f"the files could not be copied to {self.folder}: "
                               f"{getattr(error, 'message', error)}", reason=getattr(error, "reason", "os_error"))
        self.workspace = workspaces.for_path(str(self.folder))
        return self.workspace["id"], str(self.folder)

    @property
    def described(self):
        return {"mode": "copy", "path": str(self.folder), "workspace_id": self.workspace["id"],
                "checkpoint_id": self.entry["checkpoint_id"], "tree": self.entry["tree"]}

    def discard(self):
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def copy_source(session, turn_id):
    """The checkpoint a fork through turn_id (None: the whole conversation) copies."""
    if turn_id is not None:
        entry = end_of(session, turn_id)
    else:
        taken = [e for e in entries(session) if e.get("status") == "taken"]
        entry = taken[-1] if taken else None
    if entry is None:
        raise CompozyError("checkpoint_not_found", f"session {session.id} has no checkpoint to copy the files from "
                           "(checkpoints were off, or no turn has run)", turn_id=turn_id)
    return Copy(entry)
