"""The permission policy for the agent's requests: who decides, and what waits for a person.

Layer 4. approve-all allows once, deny-all rejects, approve-reads allows reads and holds the
rest as pending interactions until POST .../approve or the timeout (reject-once). File requests
reach only the workspace's own folder. The ACP seam (compozy.acp.requests) decodes the requests,
does the file I/O and answers each one through the reply it hands in here. The agent's native
tool calls are decided the same way: a read of sessions as a read, anything that changes one as
an edit; a held tool call keeps its caller waiting until it is decided.
"""

import logging
import os
import threading
from dataclasses import dataclass

from compozy.ids import new_id
from compozy.session.records.governed import permission_mode
from compozy.session.records.workspaces import protected_homes, unsafe_reason
from compozy.states import PermissionDecision, PermissionMode

log = logging.getLogger("compozy.permissions")

READ_KINDS = ("read", "search")
TOOL_OPTIONS = [{"option_id": "allow-once", "name": "Allow", "kind": "allow_once"},  # the interface's shape
                {"option_id": "reject-once", "name": "Reject", "kind": "reject_once"}]
SHUTDOWN_POLL = 1.0


@dataclass
class PendingRequest:
    request_id: str
    reply: object  # answer(decision) answers the agent (compozy.acp.requests)
    turn_id: str | None
    kind: str  # "permission", "fs_write" or "tool_call"
    created: float  # on the services' monotonic clock


def inside(root, path):
    """The canonical path when path is absolute and (symlinks followed) inside root, else None. root is
    the canonical folder stored at registration and is not resolved again: if it became a symlink to
    elsewhere, paths through it resolve elsewhere and are outside."""
    if root is None or not isinstance(path, str) or "\x00" in path or not os.path.isabs(path):
        return None
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    return real if real == root or real.startswith(root.rstrip(os.sep) + os.sep) else None


class AgentRequests:
    def __init__(self, services):
        self.services = services

    def mode(self, session=None):
        return permission_mode(self.services.config, session.record if session is not None else None)

    def files_denied(self, session=None):
        return self.mode(session) == PermissionMode.DENY_ALL

    def workspace_root(self, session):
        """The canonical folder stored at registration (never re-resolved); None for a workspace
        registered before the home rules, which may hold the daemon's home: it gets no file access."""
        workspace = self.services.catalog.workspace(session.record.workspace_id)
        root = workspace["path"] if workspace else session.record.cwd
        if unsafe_reason(root, protected_homes(self.services.home.root)):
            return None
        return root

    # -- permission prompts ---------------------------------------------------------------

    def permission(self, session, ask, reply):
        """Decide now by policy, or hold the ask for a person."""
        root = self.workspace_root(session)
        escaping = [p for p in ask.paths if inside(root, p) is None]
        details = {"tool_call_id": ask.tool_call_id, "title": ask.title, "action": ask.kind,
                   "resource": ask.paths[0] if ask.paths else None, "options": ask.option_ids}
        decision = self._decide(ask.kind, escaping, session)
        turn_id = session.current_turn_id()
        pending = PendingRequest(new_id("perm"), reply, turn_id, "permission", self.services.clock.monotonic())
        if decision is None:
            self._hold(session, pending, details)
            return
        reason = "outside_workspace" if escaping else f"mode {self.mode(session)}"
        session.append_event("permission", {"request_id": pending.request_id, **details,
                                            "decision": decision, "reason": reason}, turn_id)
        reply.answer(decision)

    def write(self, session, path, reply):
        """A file write inside the workspace: done at once under approve-all, else held for a person."""
        if self.mode(session) == PermissionMode.APPROVE_ALL:
            return reply.answer(PermissionDecision.ALLOW_ONCE.value)
        pending = PendingRequest(new_id("perm"), reply, session.current_turn_id(), "fs_write",
                                 self.services.clock.monotonic())
        self._hold(session, pending, {"tool_call_id": None, "title": f"Write {path}",
                                      "action": "edit", "resource": path, "options": []})

    def tool_call(self, session, title, target, changes):
        """The decision on a native tool call of this session (blocking while a person decides)."""
        action = "edit" if changes else "read"
        details = {"tool_call_id": None, "title": title, "action": action, "resource": target,
                   "options": TOOL_OPTIONS}
        pending = PendingRequest(new_id("perm"), ToolCallReply(), session.current_turn_id(), "tool_call",
                                 self.services.clock.monotonic())
        decision = self._decide(action, [], session)
        if decision == PermissionDecision.ALLOW_ONCE:
            return decision
        if decision is not None:
            session.append_event("permission", {"request_id": pending.request_id, **details, "decision": decision,
                                                "reason": f"mode {self.mode(session)}"}, pending.turn_id)
            return decision
        self._hold(session, pending, details)
        while not pending.reply.decided.wait(SHUTDOWN_POLL):
            if not self.services.accepting:
                self.decide(session, pending.request_id, "cancelled", "cancelled")
        return pending.reply.decision

    def _decide(self, kind, escaping, session):
        if escaping:
            return PermissionDecision.REJECT_ONCE.value
        mode = self.mode(session)
        if mode == PermissionMode.APPROVE_ALL or (mode == PermissionMode.APPROVE_READS and kind in READ_KINDS):
            return PermissionDecision.ALLOW_ONCE.value
        if mode == PermissionMode.DENY_ALL:
            return PermissionDecision.REJECT_ONCE.value
        return None  # approve-reads and not a read: a person decides

    def _hold(self, session, pending, details):
        with session.lock:
            session.permissions[pending.request_id] = pending
            turn = session.turn
            if turn is not None and turn.id == pending.turn_id:
                turn.pending_permissions += 1
        self.services.catalog.add_interaction(id=pending.request_id, session_id=session.id, turn_id=pending.turn_id,
                                              kind=pending.kind, status="pending", payload=details)
        session.append_event("permission", {"request_id": pending.request_id, **details}, pending.turn_id)

    def decide(self, session, request_id, decision, reason="user"):
        """Answer a held request; False when it is no longer pending."""
        with session.lock:
            pending = session.permissions.pop(request_id, None)
            turn = session.turn
            if pending and turn is not None and turn.id == pending.turn_id:
                turn.pending_permissions = max(0, turn.pending_permissions - 1)
                turn.progress()  # the wait for a person never counts as agent silence
        if pending is None:
            return False
        status = {"user": "resolved", "timeout": "timed_out", "cancelled": "canceled"}[reason]
        self.services.catalog.resolve_interaction(request_id, status, decision)
        session.append_event("permission", {"request_id": request_id, "decision": decision, "reason": reason},
                             pending.turn_id)
        pending.reply.answer(decision)
        return True

    def cancel_all(self, session, turn_id=None):
        """ACP requires every pending permission of a cancelled turn to be answered cancelled."""
        for request_id, pending in list(session.permissions.items()):
            if turn_id is None or pending.turn_id == turn_id:
                self.decide(session, request_id, "cancelled", "cancelled")

    def expire(self, session, timeout, now):
        for request_id, pending in list(session.permissions.items()):
            if now - pending.created >= timeout:
                self.decide(session, request_id, PermissionDecision.REJECT_ONCE.value, "timeout")


class ToolCallReply:
    """A held native tool call: the caller's request thread waits until a decision answers it."""

    def __init__(self):
        self.decided = threading.Event()
        self.decision = None

    def answer(self, decision):
        self.decision = decision
        self.decided.set()
