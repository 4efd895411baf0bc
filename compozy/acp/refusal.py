"""BindFailure: an agent that could not serve a session, refused before ACP acceptance.

Layer 3 (the ACP seam). The error carries a stable code for the caller and the failure kind
the evidence shows; the agent's last stderr lines are added, with the provider's secrets redacted.
"""

from compozy.errors import CompozyError
from compozy.redact import redact


class BindFailure(Exception):
    """Binding refused before ACP acceptance; `error` is the CompozyError to report."""

    def __init__(self, error, failure_kind):
        self.error, self.failure_kind = error, failure_kind
        super().__init__(error.message)


def refused(client, failure_kind, message, code="provider_unavailable"):
    tail = client.process.stderr_tail().strip().splitlines()[-3:]
    if tail:
        message += " | stderr: " + " / ".join(tail)[:400]
    return BindFailure(CompozyError(code, redact(message, {**client.provider.env, **client.identity})), failure_kind)


def auth_refused(client):
    return refused(client, "provider_auth_failure", f"provider {client.provider.name!r} requires authentication",
                   code="provider_auth_failure")
