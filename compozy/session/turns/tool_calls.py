"""Bound agents as callers: who a binding secret names, and how a native tool call is decided.

Layer 4. Mixed into SessionManager, which supplies services and requests.
"""

from contextlib import contextmanager

from compozy.errors import CompozyError


class ToolCalls:
    """Identity, bounds and permission for native tool calls (mixed into SessionManager)."""

    def identify(self, secret):
        """The bound agent a binding secret names while its binding lasts (else agent_identity_invalid)."""
        return self.services.identities.require(secret)

    def still_bound(self, caller):
        """Whether the binding that made a call still serves its session (a call waiting for it may end)."""
        return self.services.identities.caller(caller.secret) is not None

    @contextmanager
    def tool_call_slot(self, caller):
        """One of the caller's session.tools.max_concurrent_calls places for a call in flight (running, held
        for approval or waiting on a turn): one call more is refused at once, so no agent holds many threads."""
        session, limit = caller.session, self.services.config["session.tools.max_concurrent_calls"]
        with session.lock:
            if not session.take_tool_call_slot(limit):
                raise CompozyError("tool_call_limit_reached", f"session {session.id} already has {limit} native "
                                   f"tool calls in flight (at most {limit} at once); call again when one has ended",
                                   limit=limit, session_id=session.id)
        try:
            yield
        finally:
            with session.lock:
                session.free_tool_call_slot()

    @contextmanager
    def serving_tool_call(self, caller, title, target, changes):
        """Decide a native tool call by the permission mode (a held call waits for a person), then serve it
        with the caller's turn waiting on the daemon rather than on its agent."""
        with caller.session.serving_tool_call():
            decision = self.requests.tool_call(caller.session, title, target, changes,
                                               wanted=lambda: self.still_bound(caller))
            if not decision.startswith("allow"):
                raise CompozyError("tool_call_rejected", f"{title} was not allowed ({decision})", decision=decision)
            yield
