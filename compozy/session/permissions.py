"""The agent's requests to us: permission prompts through the policy, and file access inside
the workspace only.

Layer 4. approve-all allows once, deny-all rejects, approve-reads allows reads and holds the
rest as pending interactions until POST .../approve or the timeout (reject-once). Paths are
opened race-free beneath the workspace root (compozy.boundary); nothing outside is ever touched.
"""

import logging
import os
import threading
from dataclasses import dataclass, field

from compozy import boundary
from compozy.acp import protocol
from compozy.clock import monotonic
from compozy.ids import new_id
from compozy.session.workspaces import protected_homes, unsafe_reason
from compozy.states import PermissionDecision, PermissionMode

log = logging.getLogger("compozy.permissions")

ACCESS_DENIED = -32001
READ_KINDS = ("read", "search")
MAX_READ_BYTES = 8 * 1024 * 1024
OPTION_KIND = {PermissionDecision.ALLOW_ONCE: ("allow_once", "allow_always"),
               PermissionDecision.ALLOW_ALWAYS: ("allow_always", "allow_once"),
               PermissionDecision.REJECT_ONCE: ("reject_once", "reject_always"),
               PermissionDecision.REJECT_ALWAYS: ("reject_always", "reject_once")}


@dataclass
class PendingRequest:
    request_id: str
    runtime: object
    rpc_id: object
    turn_id: str | None
    kind: str  # "permission" or "fs_write"
    options: list = field(default_factory=list)
    write: tuple | None = None  # (workspace root, path, bytes) for a held file write
    created: float = field(default_factory=monotonic)


def inside(root, path):
    """The canonical path when path is absolute and (symlinks followed) inside root, else None."""
    if root is None or not isinstance(path, str) or "\x00" in path or not os.path.isabs(path):
        return None
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real if real == real_root or real.startswith(real_root + os.sep) else None


class AgentRequests:
    def __init__(self, services):
        self.services = services
        self._lock = threading.Lock()

    def mode(self):
        return self.services.config["permissions.mode"]

    def workspace_root(self, session):
        """The canonical folder stored at registration (never re-resolved); None for a workspace
        registered before the home rules, which may hold the daemon's home: it gets no file access."""
        workspace = self.services.catalog.workspace(session.document["workspace_id"])
        root = workspace["path"] if workspace else session.document["cwd"]
        if unsafe_reason(root, protected_homes(self.services.home.root)):
            return None
        return root

    def handle(self, session, runtime, request):
        handler = {"session/request_permission": self._permission, "fs/read_text_file": self._read,
                   "fs/write_text_file": self._write}.get(request.method)
        process = runtime.process
        if handler is None:
            process.respond_error(request.id, protocol.METHOD_NOT_FOUND, "Method not found",
                                  {"method": request.method[:200]})
            return
        if request.params.get("sessionId") != runtime.acp_session_id:
            log.warning("session %s: refused %s for foreign ACP session", session.id, request.method)
            process.respond_error(request.id, protocol.INVALID_PARAMS, "unknown sessionId")
            return
        handler(session, runtime, request)

    # -- permission prompts ---------------------------------------------------------------

    def _permission(self, session, runtime, request):
        tool_call = request.params.get("toolCall") if isinstance(request.params.get("toolCall"), dict) else {}
        options = [o for o in request.params.get("options") or [] if isinstance(o, dict)]
        kind = str(tool_call.get("kind") or "other")
        paths = [loc.get("path") for loc in tool_call.get("locations") or [] if isinstance(loc, dict)]
        root = self.workspace_root(session)
        escaping = [p for p in paths if inside(root, p) is None]
        details = {"tool_call_id": tool_call.get("toolCallId"), "title": tool_call.get("title"),
                   "action": kind, "resource": paths[0] if paths else None,
                   "options": [o.get("optionId") for o in options]}
        decision = self._decide(kind, escaping)
        turn_id = session.current_turn_id()
        pending = PendingRequest(new_id("perm"), runtime, request.id, turn_id, "permission", options)
        if decision is None:
            self._hold(session, pending, details)
            return
        reason = "outside_workspace" if escaping else f"mode {self.mode()}"
        session.append_event("permission", {"request_id": pending.request_id, **details,
                                            "decision": decision, "reason": reason}, turn_id)
        self._answer(pending, decision)

    def _decide(self, kind, escaping):
        if escaping:
            return PermissionDecision.REJECT_ONCE.value
        mode = self.mode()
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
        self._answer(pending, decision)
        return True

    def cancel_all(self, session, turn_id=None):
        """ACP requires every pending permission of a cancelled turn to be answered cancelled."""
        for request_id, pending in list(session.permissions.items()):
            if turn_id is None or pending.turn_id == turn_id:
                self.decide(session, request_id, "cancelled", "cancelled")

    def expire(self, session, timeout):
        for request_id, pending in list(session.permissions.items()):
            if monotonic() - pending.created >= timeout:
                self.decide(session, request_id, PermissionDecision.REJECT_ONCE.value, "timeout")

    def _answer(self, pending, decision):
        process = pending.runtime.process
        if pending.kind == "fs_write":
            return self._finish_write(pending, decision)
        if decision == "cancelled":
            return process.respond(pending.rpc_id, {"outcome": {"outcome": "cancelled"}})
        option = self._option_for(pending.options, decision)
        if option is None:
            return process.respond(pending.rpc_id, {"outcome": {"outcome": "cancelled"}})
        return process.respond(pending.rpc_id, {"outcome": {"outcome": "selected", "optionId": option}})

    @staticmethod
    def _option_for(options, decision):
        for kind in OPTION_KIND[PermissionDecision(decision)]:
            for option in options:
                if option.get("kind") == kind:
                    return option.get("optionId")
        return None

    # -- file system -------------------------------------------------------------------------

    def _read(self, session, runtime, request):
        params, process = request.params, runtime.process
        if self.mode() == PermissionMode.DENY_ALL:
            return self._refuse(session, process, request, "fs/read_text_file", params.get("path"))
        try:
            data = boundary.read_file(self.workspace_root(session), params.get("path"), MAX_READ_BYTES)
        except boundary.OutsideWorkspace as exc:
            return self._refuse(session, process, request, "fs/read_text_file", params.get("path"), str(exc))
        except FileNotFoundError:
            return process.respond_error(request.id, protocol.RESOURCE_NOT_FOUND, "Resource not found",
                                         {"path": params.get("path")})
        except OSError as exc:
            return process.respond_error(request.id, protocol.INTERNAL_ERROR, f"cannot read: {exc.strerror}")
        text = data.decode("utf-8", errors="replace")
        process.respond(request.id, {"content": _slice_lines(text, params.get("line"), params.get("limit"))})

    def _write(self, session, runtime, request):
        params, process = request.params, runtime.process
        path, content = params.get("path"), params.get("content")
        mode, root = self.mode(), self.workspace_root(session)
        try:
            boundary.relative_part(root, path)
        except boundary.OutsideWorkspace as exc:
            return self._refuse(session, process, request, "fs/write_text_file", path, str(exc))
        if mode == PermissionMode.DENY_ALL:
            return self._refuse(session, process, request, "fs/write_text_file", path)
        if not isinstance(content, str):
            return process.respond_error(request.id, protocol.INVALID_PARAMS, "content must be a string")
        try:
            data = content.encode("utf-8")
        except UnicodeEncodeError:
            return process.respond_error(request.id, protocol.INVALID_PARAMS, "content is not valid Unicode text")
        pending = PendingRequest(new_id("perm"), runtime, request.id, session.current_turn_id(), "fs_write",
                                 write=(root, path, data))
        if mode == PermissionMode.APPROVE_ALL:
            return self._finish_write(pending, PermissionDecision.ALLOW_ONCE.value)
        self._hold(session, pending, {"tool_call_id": None, "title": f"Write {path}",
                                      "action": "edit", "resource": path, "options": []})

    def _finish_write(self, pending, decision):
        """The write happens now, opened race-free beneath the root: whatever the path became while
        the request waited for approval, nothing outside the workspace is touched."""
        process = pending.runtime.process
        if not decision.startswith("allow"):
            return process.respond_error(pending.rpc_id, ACCESS_DENIED, f"write not approved ({decision})")
        root, path, data = pending.write
        try:
            boundary.write_file(root, path, data)
        except boundary.OutsideWorkspace as exc:
            log.warning("refused fs/write_text_file of %r: %s", str(path)[:200], exc)
            return process.respond_error(pending.rpc_id, ACCESS_DENIED, f"access denied: {exc}",
                                         {"path": str(path)[:500]})
        except OSError as exc:
            return process.respond_error(pending.rpc_id, protocol.INTERNAL_ERROR, f"cannot write: {exc.strerror}")
        process.respond(pending.rpc_id, None)

    def _refuse(self, session, process, request, method, path, why=None):
        log.warning("session %s: refused %s of %r", session.id, method, str(path)[:200])
        reason = why or f"{method} is limited to the session's workspace"
        if self.mode() == PermissionMode.DENY_ALL:
            reason += " and the deny-all policy refuses it"
        process.respond_error(request.id, ACCESS_DENIED, f"access denied: {reason}", {"path": str(path)[:500]})


def _slice_lines(text, line, limit):
    if not isinstance(line, int) and not isinstance(limit, int):
        return text
    lines = text.splitlines(keepends=True)
    start = max(0, (line if isinstance(line, int) else 1) - 1)
    end = start + limit if isinstance(limit, int) and limit >= 0 else len(lines)
    return "".join(lines[start:end])

