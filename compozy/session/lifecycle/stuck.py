"""A runtime stuck in a transitional status: the `runtime` supervision source (issue 20).

Layer 4. binding, reconfiguring and recovering each end within a bound the daemon's own timeouts
give them (the handshake, loading the agent session, recovery's backoff, plus 5 s), and only while a turn owns
them. A status past its bound, or left with no turn to own it for 5 s, is stuck: a bug, shown to
people (attention `runtime_stuck`, `supervision.stuck` with how long) rather than left silent.
"""

from compozy.acp.opening import LOAD_TIMEOUT
from compozy.clock import iso_from_epoch
from compozy.config import DEFAULT_HANDSHAKE_TIMEOUT
from compozy.session.lifecycle.recovery import DELAYS
from compozy.states import RuntimeStatus

SLACK = 5.0
UNOWNED_AFTER = 5.0  # a transitional status with no turn owning it is stuck after this long
TRANSITIONAL = (RuntimeStatus.BINDING, RuntimeStatus.RECONFIGURING, RuntimeStatus.RECOVERING)


def bound(status, session):
    """How long status may last: every route's handshake and session load, recovery's backoff, plus 5 s."""
    config = session.services.config
    agent = config.agents.get(session.record.agent_name)  # a reload may have removed it: one default route
    chain = [route.provider for route in agent.fallback_chain] if agent is not None and agent.fallback_chain \
        else [agent.provider if agent is not None else None]
    handshakes = [getattr(config.provider(name), "handshake_timeout", DEFAULT_HANDSHAKE_TIMEOUT) for name in chain]
    one_route = max(handshakes) + LOAD_TIMEOUT
    if status == RuntimeStatus.RECONFIGURING:
        return one_route + SLACK
    if status == RuntimeStatus.RECOVERING:
        return sum(DELAYS) + len(DELAYS) * len(chain) * one_route + SLACK
    return len(chain) * one_route + SLACK


def stuck(session, now):
    """None, or what a stuck runtime looks like: its status, since when, for how long, and its bound."""
    status = RuntimeStatus(session.record.runtime.status)
    since = session.runtime_since
    if status not in TRANSITIONAL or since is None:
        return None
    seconds, limit = now - since, bound(status, session)
    unowned = session.turn is None and session.stop_operation is None
    if seconds <= limit and not (unowned and seconds > UNOWNED_AFTER):
        return None
    wall = session.services.clock.wall()
    return {"status": status.value, "since": iso_from_epoch(wall - seconds), "seconds": round(seconds, 1),
            "bound_seconds": round(limit, 1), "owned_by_turn": not unowned}
