"""The agent's own clone: a whole-session fork of an idle, bound source whose agent can clone and
load sessions asks it for a clone (through compozy.acp.client.fork_session).

Layer 4 (session.derive). The clone is loaded by the new session's own process at its first prompt,
under the provider identity it was created with (turns/binding.py settles native_state). The source
keeps its events, fences and runtime; the carried context is stored all the same, as the fallback.
"""

from dataclasses import dataclass

from compozy.acp.client import CloneFailed, fork_session
from compozy.session.derive.sources import native_fork_possible
from compozy.session.records.snapshots import FIELDS
from compozy.states import NativeState


@dataclass(frozen=True)
class Clone:
    acp_session_id: str | None
    identity: dict  # the provider identity the clone was created with
    error: str | None = None


def clone(source, services):
    """The agent's clone of source, a Clone carrying the redacted error when the request failed, or
    None when cloning is not possible (any more)."""
    with source.lock:  # no prompt starts on the source while its agent clones it
        if not native_fork_possible(source, services.catalog):
            return None
        runtime = source.runtime
        identity = {name: runtime.effective[name] for name in FIELDS if runtime.effective.get(name)}
        try:
            return Clone(fork_session(runtime, source.record.cwd), identity)
        except CloneFailed as failure:
            return Clone(None, identity, str(failure)[:500])


def seeded(derivation, runtime, found):
    """The derivation and runtime fields of a new session seeded by this clone (or by replay, when it failed)."""
    if found.acp_session_id is None:
        return {**derivation, "native_fork_error": found.error}, runtime
    derivation = {**derivation, "seed": "native_fork", "native_state": NativeState.PENDING.value,
                  "acp_session_id": found.acp_session_id}
    return derivation, {**(runtime or {}), "acp_session_id": found.acp_session_id, "last_known": found.identity}
