"""BindFailure: an agent that could not serve a session, refused before ACP acceptance.

Layer 3 (the ACP seam). The error carries a stable code for the caller and the failure kind the
evidence shows; an agent's JSON-RPC error keeps its data (`details.agent_error`) and the agent's last
stderr lines are added (`details.stderr_tail`, and the message), with the agent's secrets redacted.
"""

from compozy.acp.evidence import agent_error, described
from compozy.errors import CompozyError
from compozy.redact import redact

STDERR_LINES = 5
STDERR_IN_MESSAGE = 400
EVIDENCE = ("agent_error", "stderr_tail", "next_step", "next_command")


class BindFailure(Exception):
    """Binding refused before ACP acceptance; `error` is the CompozyError to report. `runtime` is the agent
    that was refused (None when none started): its process and stderr are the failure's evidence.
    `agent_fault`: the agent failed (its handshake, its opening, its login), not a choice it does not offer."""

    def __init__(self, error, failure_kind, runtime=None, agent_fault=False):
        self.error, self.failure_kind, self.runtime, self.agent_fault = error, failure_kind, runtime, agent_fault
        super().__init__(error.message)

    @property
    def evidence(self):
        """The failure's evidence besides its message: the agent's error, its stderr lines and, for a login, the
        next step (what a person runs), when any."""
        return {key: self.error.details[key] for key in EVIDENCE if key in self.error.details}

    def with_stderr(self, runtime):
        """The same failure with the last stderr lines of the agent it happened on (once)."""
        if self.runtime is None:
            self.runtime = runtime
        if "stderr_tail" not in self.error.details:
            tail = runtime.process.stderr_tail(STDERR_LINES).splitlines()
            if tail:
                self.error.details["stderr_tail"] = tail
                self.error.message += " | stderr: " + " / ".join(tail)[-STDERR_IN_MESSAGE:]
        return self


def refused(client, failure_kind, message, code="provider_unavailable", exc=None, **details):
    """A BindFailure of this agent; exc (an AcpError) adds its reason to the message and its data as agent_error."""
    env = client.process.env
    if exc is not None:
        message += f": {described(exc, env)}"
        error = agent_error(exc, env)
        if error is not None:
            details["agent_error"] = error
    failure = BindFailure(CompozyError(code, redact(message, {**env, **client.identity}), **details), failure_kind,
                          client, agent_fault=True)
    return failure.with_stderr(client)
