"""Daemon-managed sessions: what the daemon governs for itself (governed spawned children, system and
coordinator sessions) and what users may not do to them; the permission mode a session runs under.

Layer 4. A spawned child records the permission mode it runs under when it is created, never wider
than its parent's: its own mode is the narrowest of that and the daemon's `permissions.mode`.
"""

from __future__ import annotations

from compozy.clock import epoch_from_iso
from compozy.errors import CompozyError
from compozy.session.records.record import SessionRecord
from compozy.states import LineageKind, PermissionMode, SessionState, SessionType

DAEMON_MANAGED = (SessionType.SYSTEM, SessionType.COORDINATOR, SessionType.SPAWNED)
MAX_AGENT_DEPTH = 3  # a session an agent creates is at most this many levels below its root
MAX_AGENT_TREE = 20  # sessions no TTL governs below one root (not archived), when an agent adds one
NARROWNESS = (PermissionMode.APPROVE_ALL, PermissionMode.APPROVE_READS, PermissionMode.DENY_ALL)  # wide -> narrow


def is_daemon_managed(record: SessionRecord) -> bool:
    return record.type in DAEMON_MANAGED


def is_spawned_child_of(record: SessionRecord, parent_id: str) -> bool:
    """A governed child of that parent: the one session besides the daemon that may stop it."""
    return record.type == SessionType.SPAWNED and (record.lineage or {}).get("parent_session_id") == parent_id


def refuse_user_action(record: SessionRecord, action: str) -> None:
    """Users do not stop, remove (or attach, rename, clear) a daemon-managed session: the daemon owns it."""
    if is_daemon_managed(record):
        raise CompozyError("session_daemon_managed", f"session {record.id} is daemon-managed ({record.type}); "
                           f"it cannot be {action} by a user", session_id=record.id, session_type=record.type)


def refuse_removal(store, record):
    """Users do not remove a daemon-managed session, but for a spawned child that is stopped and whose
    parent is stopped or gone: nothing owns it any more, and its history is theirs to delete."""
    if record.type != SessionType.SPAWNED:
        return refuse_user_action(record, "removed")
    parent_id = (record.lineage or {}).get("parent_session_id")
    parent = store.get(parent_id) if parent_id else None
    if record.state == SessionState.STOPPED and (parent is None or parent.state == SessionState.STOPPED):
        return None
    raise CompozyError("session_daemon_managed", f"session {record.id} is a governed child of session "
                       f"{parent_id}; it can be removed once it and its parent are stopped",
                       session_id=record.id, session_type=record.type, parent_session_id=parent_id)


def refuse_expired(record: SessionRecord, now: float) -> None:
    """A governed child past its TTL (spawn.expires_at) never runs again: no prompt admits it, no bind
    starts its agent, no reply wake resumes it."""
    expires = ((record.extra or {}).get("spawn") or {}).get("expires_at")
    if expires and epoch_from_iso(expires) <= now:
        raise CompozyError("session_expired", f"session {record.id} is a governed child whose TTL ended at "
                           f"{expires}; it does not run again", session_id=record.id, expires_at=expires)


def check_agent_creation(catalog, creator, lineage):
    """A session the agent of `creator` (its session's record) asks for, with this lineage (create, spawn,
    continue, fork; the tool or the identity headers). A governed session creates none (spawned children,
    like the daemon's own sessions, are leaves: nothing they make outlives their TTL); one below a root is
    at most MAX_AGENT_DEPTH deep, and a root's tree holds at most MAX_AGENT_TREE sessions no TTL governs.
    A new root (a create in another workspace) joins no tree."""
    if is_daemon_managed(creator):
        raise CompozyError("spawn_depth_exceeded", f"session {creator.id} is {creator.type}: a governed session "
                           "creates no sessions", session_id=creator.id, session_type=creator.type)
    kind = lineage.get("kind") or LineageKind.ROOT.value
    if kind == LineageKind.ROOT:
        return
    depth = int(lineage.get("spawn_depth") or 0)
    if depth > MAX_AGENT_DEPTH:
        raise CompozyError("spawn_depth_exceeded", f"a session created by {creator.id} would be {depth} levels "
                           f"below its root; agents create at most {MAX_AGENT_DEPTH} levels deep",
                           session_id=creator.id, session_type=creator.type, limit=MAX_AGENT_DEPTH)
    root = lineage["root_session_id"]
    size = catalog.tree_size(root) if kind != LineageKind.SPAWN else 0
    if size >= MAX_AGENT_TREE:
        raise CompozyError("session_tree_limit_reached", f"the tree of root session {root} already holds {size} "
                           f"sessions created below it (at most {MAX_AGENT_TREE}); archive some first",
                           root_session_id=root, limit=MAX_AGENT_TREE, sessions=size)


def narrowest(*modes):
    return max((PermissionMode(m) for m in modes if m), key=NARROWNESS.index)


def permission_mode(config, record=None):
    """The mode a session's requests are decided by: the daemon's, narrowed by what its spawn recorded."""
    recorded = ((record.extra.get("spawn") or {}).get("permissions") or {}).get("mode") if record else None
    return narrowest(config["permissions.mode"], recorded).value
