"""Daemon-managed sessions: what the daemon governs for itself (governed spawned children, system and
coordinator sessions) and what users may not do to them; the permission mode a session runs under.

Layer 4. A spawned child records the permission mode it runs under when it is created, never wider
than its parent's: its own mode is the narrowest of that and the daemon's `permissions.mode`.
"""

from compozy.errors import CompozyError
from compozy.states import PermissionMode, SessionType

DAEMON_MANAGED = (SessionType.SYSTEM, SessionType.COORDINATOR, SessionType.SPAWNED)
NARROWNESS = (PermissionMode.APPROVE_ALL, PermissionMode.APPROVE_READS, PermissionMode.DENY_ALL)  # wide -> narrow


def is_daemon_managed(record):
    return record.type in DAEMON_MANAGED


def is_spawned_child_of(record, parent_id):
    """A governed child of that parent: the one session besides the daemon that may stop it."""
    return record.type == SessionType.SPAWNED and (record.lineage or {}).get("parent_session_id") == parent_id


def refuse_user_action(record, action):
    """Users do not stop, remove (or attach, rename, clear) a daemon-managed session: the daemon owns it."""
    if is_daemon_managed(record):
        raise CompozyError("session_daemon_managed", f"session {record.id} is daemon-managed ({record.type}); "
                           f"it cannot be {action} by a user", session_id=record.id, session_type=record.type)


def narrowest(*modes):
    return max((PermissionMode(m) for m in modes if m), key=NARROWNESS.index)


def permission_mode(config, record=None):
    """The mode a session's requests are decided by: the daemon's, narrowed by what its spawn recorded."""
    recorded = ((record.extra.get("spawn") or {}).get("permissions") or {}).get("mode") if record else None
    return narrowest(config["permissions.mode"], recorded).value
