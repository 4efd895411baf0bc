"""The permission policy for the agent's requests: who decides, and what waits for a person.

Layer 4. A request is answered only with an option it offered (compozy.session.turns.choices), or
cancelled. approve-all allows, deny-all rejects, approve-reads allows reads and holds the rest as
pending interactions until POST .../approve or the timeout (which rejects); a policy that finds no
option of the kind it wants holds the request for a person when it would allow, and answers it
cancelled when it would reject. File requests reach only the workspace's own folder. The ACP seam
(compozy.acp.requests) decodes the requests, does the file I/O and answers each one through the
reply it hands in here. The agent's native tool calls are decided the same way: a read of sessions
as a read, anything that changes one as an edit; a held tool call keeps its caller waiting until
it is decided.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from compozy.clock import iso_from_epoch
from compozy.errors import CompozyError, invalid
from compozy.ids import new_id
from compozy.session.records.control import settle_interaction
from compozy.session.records.governed import permission_mode
from compozy.session.records.live import LiveSession
from compozy.session.records.services import Services
from compozy.session.records.workspaces import protected_homes, unsafe_reason
from compozy.session.turns.choices import (ALLOWING, DAEMON_OPTIONS, REJECTING, chosen, decision_of,
                                           first_of_kinds, outcome)
from compozy.states import InteractionState, PermissionMode
from compozy.store.records import Interaction

log = logging.getLogger("compozy.permissions")

READ_KINDS = ("read", "search")
SHUTDOWN_POLL = 1.0
NO_OPTIONS = "no_options"  # the reason for cancelling a request that offered nothing to choose
SETTLED_BY = {"user": InteractionState.RESOLVED, "timeout": InteractionState.TIMED_OUT,
              "cancelled": InteractionState.CANCELED}  # a decision's reason -> where its interaction goes


@dataclass
class PendingRequest:
    request_id: str
    reply: object  # answer(option) answers the agent with that option, or cancelled for None (compozy.acp.requests)
    turn_id: str | None
    kind: str  # "permission", "fs_write", "tool_call" or "question"
    created: float  # on the services' monotonic clock
    options: tuple  # what may answer it, in the offered order
    held_since: str | None = None  # when a person was first asked (wall time, as reads write it)


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
    def __init__(self, services: Services) -> None:
        self.services = services

    def mode(self, session: LiveSession | None = None) -> str:
        return permission_mode(self.services.config, session.record if session is not None else None)

    def files_denied(self, session: LiveSession | None = None) -> bool:
        return self.mode(session) == PermissionMode.DENY_ALL

    def workspace_root(self, session: LiveSession) -> str | None:
        """The canonical folder stored at registration (never re-resolved); None for a workspace
        registered before the home rules, which may hold the daemon's home: it gets no file access."""
        workspace = self.services.catalog.workspace(session.record.workspace_id)
        root = workspace["path"] if workspace else session.record.cwd
        if unsafe_reason(root, protected_homes(self.services.home.root)):
            return None
        return root

    # -- permission prompts ---------------------------------------------------------------

    def permission(self, session, ask, reply):
        """Answer by policy now, or hold the ask for a person."""
        root = self.workspace_root(session)
        escaping = [p for p in ask.paths if inside(root, p) is None]
        details = {"tool_call_id": ask.tool_call_id, "title": ask.title, "action": ask.kind,
                   "resource": ask.paths[0] if ask.paths else None, "options": list(ask.options)}
        pending = PendingRequest(new_id("perm"), reply, session.current_turn_id(), "permission",
                                 self.services.clock.monotonic(), tuple(ask.options))
        verdict = self._policy(ask.kind, escaping, session, pending.options)
        if verdict is None:
            self._hold(session, pending, details)
            return
        option, reason = verdict
        session.append_event("permission", {"request_id": pending.request_id, **details, **outcome(option),
                                            "reason": reason}, pending.turn_id)
        reply.answer(option)

    def write(self, session, path, reply):
        """A file write inside the workspace: done at once under approve-all, else held for a person."""
        if self.mode(session) == PermissionMode.APPROVE_ALL:
            return reply.answer(DAEMON_OPTIONS[0])
        pending = PendingRequest(new_id("perm"), reply, session.current_turn_id(), "fs_write",
                                 self.services.clock.monotonic(), DAEMON_OPTIONS)
        self._hold(session, pending, {"tool_call_id": None, "title": f"Write {path}", "action": "edit",
                                      "resource": path, "options": list(DAEMON_OPTIONS)})

    def question(self, session, ask, reply):
        """A question from the agent (ACP form elicitation): always held for a person, whatever the mode (no
        policy answers for them), as a pending request whose options are the form's choices and decline."""
        pending = PendingRequest(new_id("perm"), reply, session.current_turn_id(), "question",
                                 self.services.clock.monotonic(), tuple(ask.options))
        self._hold(session, pending, {"tool_call_id": None, "title": ask.message, "action": "question",
                                      "resource": None, "options": list(ask.options),
                                      "question": {"message": ask.message, "schema": ask.schema}})

    def tool_call(self, session, title, target, changes, wanted=None):
        """The decision on a native tool call of this session (blocking while a person decides). A held call
        is cancelled when the daemon shuts down or `wanted()` turns false (its caller's binding ended)."""
        action = "edit" if changes else "read"
        details = {"tool_call_id": None, "title": title, "action": action, "resource": target,
                   "options": list(DAEMON_OPTIONS)}
        pending = PendingRequest(new_id("perm"), ToolCallReply(), session.current_turn_id(), "tool_call",
                                 self.services.clock.monotonic(), DAEMON_OPTIONS)
        verdict = self._policy(action, [], session, pending.options)
        if verdict is not None:
            option, reason = verdict
            if option is None or option["kind"] not in ALLOWING:  # an allowed call leaves no event
                session.append_event("permission", {"request_id": pending.request_id, **details, **outcome(option),
                                                    "reason": reason}, pending.turn_id)
            return decision_of(option)
        self._hold(session, pending, details)
        while not pending.reply.decided.wait(SHUTDOWN_POLL):
            if not self.services.accepting or (wanted is not None and not wanted()):
                self.decide(session, pending.request_id, None, "cancelled")
        return pending.reply.decision

    def _policy(self, action, escaping, session, options):
        """(the option to answer with, None for cancelled; why), or None when a person decides."""
        mode = self.mode(session)
        if escaping or mode == PermissionMode.DENY_ALL:
            return first_of_kinds(options, REJECTING), "outside_workspace" if escaping else f"mode {mode}"
        allows = mode == PermissionMode.APPROVE_ALL or (mode == PermissionMode.APPROVE_READS and action in READ_KINDS)
        option = first_of_kinds(options, ALLOWING) if allows else None
        if option is not None:
            return option, f"mode {mode}"
        if not options:
            return None, NO_OPTIONS  # nothing a person could choose either
        return None  # approve-reads and not a read, or no option of an allowing kind: a person decides

    def _hold(self, session, pending, details):
        pending.held_since = iso_from_epoch(self.services.clock.wall())
        with session.lock:
            session.hold_permission(pending)
            turn = session.turn
            if turn is not None and turn.id == pending.turn_id:
                turn.permission_held()
        self.services.catalog.add_interaction(Interaction(id=pending.request_id, session_id=session.id,
                                                          turn_id=pending.turn_id, kind=pending.kind,
                                                          status=InteractionState.PENDING.value, payload=details))
        session.append_event("permission", {"request_id": pending.request_id, **details}, pending.turn_id)

    def approve(self, session, request_id, option_id=None, decision=None, content=None):
        """A person's answer to a held request, by option ID or by decision: the option chosen. Refused
        (and the request left pending) when it names no offered option. content: a question's answer, the
        form's fields (its `accept` option), kept with the option."""
        with session.lock:
            pending = session.permissions.get(request_id)
        if pending is None:
            raise CompozyError("permission_request_not_found", f"no pending request {request_id}")
        option = chosen(pending.options, option_id, decision)
        if pending.kind == "question" or content is not None:
            option = answered(pending, option, content)
        if not self.decide(session, request_id, option, "user"):
            raise CompozyError("permission_request_not_found", f"no pending request {request_id}")
        return option

    def decide(self, session: LiveSession, request_id: str, option: dict | None, reason: str = "user") -> bool:
        """Answer a held request with one of its options (None: cancelled); False when it is no longer pending."""
        with session.lock:
            pending = session.release_permission(request_id)
            turn = session.turn
            if pending and turn is not None and turn.id == pending.turn_id:
                turn.permission_settled()  # the wait for a person never counts as agent silence
        if pending is None:
            return False
        settle_interaction(self.services.catalog, request_id, SETTLED_BY[reason], decision_of(option))
        session.append_event("permission", {"request_id": request_id, **outcome(option), "reason": reason},
                             pending.turn_id)
        pending.reply.answer(option)
        return True

    def cancel_all(self, session: LiveSession, turn_id: str | None = None) -> None:
        """ACP requires every pending permission of a cancelled turn to be answered cancelled."""
        for request_id, pending in list(session.permissions.items()):
            if turn_id is None or pending.turn_id == turn_id:
                self.decide(session, request_id, None, "cancelled")

    def expire(self, session: LiveSession, timeout: float, now: float) -> None:
        """Nobody answered in time: the first rejecting option offered, else cancelled."""
        for request_id, pending in list(session.permissions.items()):
            if now - pending.created >= timeout:
                self.decide(session, request_id, first_of_kinds(pending.options, REJECTING), "timeout")


ANSWER_TYPES = {"string": (str,), "number": (int, float), "integer": (int,), "boolean": (bool,)}


def answered(pending, option, content):
    """The option a question is answered with, carrying the form's content: required for its `accept` option
    (and only there), each field given of the type the form asks, every required one given."""
    if pending.kind != "question":
        raise invalid("content answers a question (an agent's form), not a permission request", field="content")
    needs = option["option_id"] == "accept" and option.get("kind") == "accept"
    if needs != (content is not None):
        raise invalid("this question's accept option takes content: the form's fields" if needs else
                      f"option {option['option_id']!r} answers the question by itself; content is not taken",
                      field="content")
    if content is None:
        return option
    schema = pending.reply.schema if hasattr(pending.reply, "schema") else {}
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    missing = [name for name in schema.get("required") or [] if name not in content]
    kinds = {name: spec.get("type") if isinstance(spec, dict) else None for name, spec in properties.items()}
    wrong = [name for name, value in content.items() if name not in kinds or not isinstance(
        value, ANSWER_TYPES.get(kinds[name], (str, int, float, bool)))
        or (isinstance(value, bool) and kinds[name] in ("number", "integer"))]
    if missing or wrong:
        raise invalid(f"the answer does not fit the form: missing {missing}, not of the form {wrong}",
                      field="content", missing=missing, unexpected=wrong)
    return {**option, "content": dict(content)}


class ToolCallReply:
    """A held native tool call: the caller's request thread waits until a decision answers it."""

    def __init__(self):
        self.decided = threading.Event()
        self.decision = None

    def answer(self, option):
        self.decision = decision_of(option)
        self.decided.set()
