"""Logging an agent in for its user (`compozy agent login`).

Layer 3 (the ACP seam). The agent's authMethods come from one initialize. A terminal method runs the
agent's own program with the method's args and env in the user's terminal (ACP terminal authentication:
exit status 0 is a login); any other method is sent to `authenticate` on a connection of its own, which
the agent may answer only after a login in a browser, so it may take minutes.
"""

import subprocess

from compozy.acp import auth
from compozy.acp.auth import TERMINAL
from compozy.acp.client import BindFailure, agent_environment, launch
from compozy.acp.driver import AcpError, AgentExited
from compozy.errors import CompozyError

LOGIN_TIMEOUT = 600.0
STOP_GRACE = 2.0


class Unattended:
    """The listener of a connection nobody watches: output is dropped, the agent's requests refused."""

    def output(self, runtime, events):
        pass

    def permission(self, runtime, ask, reply):
        reply.answer("reject-once")

    def write(self, runtime, path, reply):
        reply.answer("reject-once")

    def question(self, runtime, ask, reply):
        reply.answer(None)  # nobody to ask: cancelled

    def workspace_root(self):
        return None

    def files_denied(self):
        return True

    def exited(self, runtime):
        pass


def offered_methods(provider, cwd, agent_home):
    """The provider's agent's authMethods (compozy.acp.auth.methods), from one initialize."""
    client = _started(provider, cwd, agent_home)
    try:
        return auth.methods(client)
    finally:
        _stop(client)


def pick(provider_name, methods, wanted=None):
    """The method to log in with: the one named, else the only terminal one, else the only one."""
    offered = ", ".join(m["id"] for m in methods)
    if wanted is not None:
        found = next((m for m in methods if m["id"] == wanted), None)
        if found is None:
            raise CompozyError("invalid_request", f"provider {provider_name!r} offers no auth method {wanted!r}; "
                               f"it offers: {offered or 'none'}", field="method", offered=[m["id"] for m in methods])
        return found
    terminal = [m for m in methods if m["type"] == TERMINAL]
    choices = terminal if len(terminal) == 1 else methods
    if len(choices) == 1:
        return choices[0]
    raise CompozyError("invalid_request", f"provider {provider_name!r} offers several auth methods ({offered}); "
                       "name one with --method", field="method", offered=[m["id"] for m in methods])


def run_in_terminal(provider, method, cwd, agent_home):
    """The agent's program with the terminal method's args and env, attached to this terminal; its exit status."""
    argv = [*provider.command, *method.get("args", [])]
    env = {**agent_environment(provider, agent_home), **method.get("env", {})}
    try:
        return subprocess.run(argv, cwd=cwd, env=env, check=False).returncode
    except OSError as exc:
        raise CompozyError("provider_unavailable", f"cannot start provider {provider.name!r}: {exc}") from None


def authenticate_now(provider, method, cwd, agent_home):
    """`authenticate` with a non-terminal method on a connection of its own; provider_auth_failure when refused."""
    client = _started(provider, cwd, agent_home)
    try:
        client.process.call(auth.AUTHENTICATE, {"methodId": method["id"]}, LOGIN_TIMEOUT)
    except (AcpError, AgentExited, TimeoutError) as exc:
        raise auth.auth_refused(client, tried=method, exc=exc).error from None
    finally:
        _stop(client)


def _started(provider, cwd, agent_home):
    try:
        return launch(provider, "login", cwd, Unattended(), agent_home)
    except BindFailure as failure:
        raise failure.error from None


def _stop(client):
    client.process.close_stdin()
    client.process.kill_tree(STOP_GRACE, STOP_GRACE)
