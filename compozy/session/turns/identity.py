"""Who is calling: one secret per agent binding, the caller it names, and the tool server offered with it.

Layer 4. Every agent process the daemon binds gets a fresh secret, handed over in its environment
and in the address of the native tool server (the URL over HTTP, the relay's environment over
stdio), never in argv. A secret names its caller only while its process serves the session (or is
being bound for it): once that runtime is replaced, released or stopped, the secret names nobody.
Secrets live in memory only: agents do not outlive the daemon that bound them.
"""

import secrets
import threading
from dataclasses import dataclass

from compozy.api import SECRET_ENV, SESSION_ENV, TOOL_SERVER_PATH
from compozy.errors import CompozyError
from compozy.location import import_environment, self_command

SERVER_NAME = "compozy"


@dataclass(frozen=True)
class ToolEndpoints:
    """Where the daemon serves: its loopback HTTP address (None without TCP) and its socket."""

    http_url: str | None
    socket_path: str


@dataclass(frozen=True)
class ToolServer:
    """The native tool server as offered to one binding: its URL (None without TCP) and headers, and the
    stdio command that relays to the daemon's socket with its environment."""

    name: str
    url: str | None
    headers: dict
    command: list
    env: dict


@dataclass(frozen=True)
class Caller:
    """A bound agent calling the daemon: its session (the LiveSession) and the secret that proved it."""

    session: object
    secret: str

    @property
    def id(self):
        return self.session.id

    @property
    def workspace_id(self):
        return self.session.record.workspace_id


class Identities:
    def __init__(self, endpoints=None):
        self.endpoints = endpoints
        self._bindings = {}  # secret -> [LiveSession, runtime (None until attached)]
        self._lock = threading.Lock()

    def issue(self, session):
        """A fresh secret for a binding about to start; it names nobody until attach()."""
        secret = secrets.token_urlsafe(32)
        with self._lock:
            for stale in [s for s, (owner, runtime) in self._bindings.items()
                          if runtime is not None and not _serving(owner, runtime)]:
                del self._bindings[stale]
            self._bindings[secret] = [session, None]
        return secret

    def attach(self, secret, runtime):
        with self._lock:
            self._bindings[secret][1] = runtime

    def forget(self, secret):
        with self._lock:
            self._bindings.pop(secret, None)

    def caller(self, secret):
        """The Caller a secret names while its binding lasts, else None."""
        with self._lock:
            session, runtime = self._bindings.get(secret, (None, None))
        if runtime is None or not _serving(session, runtime):
            return None
        return Caller(session, secret)

    def require(self, secret):
        """The caller a secret names, else agent_identity_invalid."""
        caller = self.caller(secret) if secret else None
        if caller is None:
            raise CompozyError("agent_identity_invalid", "the binding secret names no live binding")
        return caller

    def presented(self, session_id, secret):
        """The caller of a request's identity headers: both given, and the secret one of that session."""
        caller = self.require(secret)
        if caller.id != session_id:
            raise CompozyError("agent_identity_invalid", f"the binding secret is not one of session {session_id}",
                               session_id=session_id)
        return caller

    def offer(self, secret, session_id):
        """The tool server as this binding may reach it; None when the daemon serves nowhere an agent can."""
        if self.endpoints is None:
            return None
        # The binding secret is the whole credential: the daemon's token (a remote daemon's) is never
        # handed to an agent; the tool server's path and the owner-only socket do not ask for it.
        http_url = self.endpoints.http_url
        relay = self_command("--url", "unix://" + str(self.endpoints.socket_path), "mcp", "relay")
        env = {SESSION_ENV: session_id, SECRET_ENV: secret, **import_environment()}
        return ToolServer(SERVER_NAME, http_url + TOOL_SERVER_PATH + secret if http_url else None, {}, relay, env)


def _serving(session, runtime):
    serving = runtime is session.runtime or runtime is session.candidate
    return serving and not runtime.released and runtime.alive
