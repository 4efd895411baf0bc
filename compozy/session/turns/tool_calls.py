"""Bound agents as callers: who a binding secret names, and how a native tool call is decided.

Layer 4. Mixed into SessionManager, which supplies services and requests.
"""

from contextlib import contextmanager

from compozy.errors import CompozyError


class ToolCalls:
    """Identity and permission for native tool calls (mixed into SessionManager)."""

    def identify(self, secret):
        """The bound agent a binding secret names while its binding lasts (else agent_identity_invalid)."""
        return self.services.identities.require(secret)

    @contextmanager
    def serving_tool_call(self, caller, title, target, changes):
        """Decide a native tool call by the permission mode (a held call waits for a person), then serve it
        with the caller's turn waiting on the daemon rather than on its agent."""
        with caller.session.serving_tool_call():
            decision = self.requests.tool_call(caller.session, title, target, changes)
            if not decision.startswith("allow"):
                raise CompozyError("tool_call_rejected", f"{title} was not allowed ({decision})", decision=decision)
            yield
