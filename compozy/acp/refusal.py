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


def refused(client, failure_kind, message, code="provider_unavailable", **details):
    tail = client.process.stderr_tail().strip().splitlines()[-3:]
    if tail:
        message += " | stderr: " + " / ".join(tail)[:400]
    return BindFailure(CompozyError(code, redact(message, {**client.provider.env, **client.identity}), **details),
                       failure_kind)


def auth_methods(client):
    """The authMethods the agent advertised in initialize, as {id, name, description} strings only."""
    methods = [m for m in client.auth_methods if isinstance(m, dict) and isinstance(m.get("id"), str)]
    return [{k: str(m[k])[:200] for k in ("id", "name", "description") if m.get(k) is not None} for m in methods]


def auth_refused(client):
    """auth_required: the agent wants a login compozy cannot do for it; name the methods it offers so the
    person can run the agent's own login (or set its key in the provider's env) and prompt again."""
    methods = auth_methods(client)
    offered = "; ".join(f"{m.get('name') or m['id']} ({m['id']})" + (f": {m['description']}" if m.get("description")
                                                                      else "") for m in methods)
    how = f"; it offers: {offered}" if offered else ""
    return refused(client, "provider_auth_failure", f"provider {client.provider.name!r} requires authentication{how}. "
                   "Log in with the agent's own command, or set its API key in the provider's env, then prompt again",
                   code="provider_auth_failure", auth_methods=methods)
