"""Supervision sources: what the sweep can verify about a session's work, each `ok`, `stale` or `unknown`.

Layer 4. A running tool is a work signal only while it is verified: the agent's process tree has a
live descendant (the tool's process) or the tool had an update within quiet_after. A running tool
that is not verified is stale: it raises attention and stops counting as work. A source that cannot
be inspected (the process table cannot be read) is unknown: it raises attention and keeps the
automatic inactivity stop from firing until it can be inspected again. A stopping child is stale.
"""

import logging
from dataclasses import dataclass, field

from compozy.session.lifecycle.stuck import stuck as runtime_stuck
from compozy.session.records.waiting import live_children
from compozy.states import Attention, SessionState

log = logging.getLogger("compozy.supervision")

OK, STALE, UNKNOWN, STUCK = "ok", "stale", "unknown", "stuck"
SUPERVISION_ATTENTION = {UNKNOWN: Attention.SUPERVISION_UNKNOWN.value, STALE: Attention.SUPERVISION_STALE.value,
                         STUCK: Attention.RUNTIME_STUCK.value}
RESCAN_SECONDS = 1.0  # the process table is read at most this often per session


@dataclass
class Sources:
    agent: str = OK
    tools: str = OK
    children: str = OK
    runtime: str = OK  # STUCK: a transitional runtime status past its bound or owned by no turn (lifecycle.stuck)
    verified_tools: tuple = ()
    scanned_at: float | None = None
    descendants: bool = field(default=False, repr=False)
    stuck: dict | None = None

    def view(self):
        return {"agent": self.agent, "tools": self.tools, "children": self.children, "runtime": self.runtime}

    @property
    def worst(self):
        states = (self.agent, self.tools, self.children)
        return UNKNOWN if UNKNOWN in states else STALE if STALE in states else OK


def inspect(session, now, quiet_after, processes):
    """The session's sources now (kept on session.sources for reads)."""
    previous = session.sources or Sources()
    sources = Sources(scanned_at=previous.scanned_at, descendants=previous.descendants)
    runtime, turn = session.runtime, session.turn
    tools = dict(turn.open_tools) if turn is not None and not turn.finished else {}
    fresh = [tool for tool, updated in tools.items() if quiet_after and now - updated < quiet_after]
    waiting = [tool for tool in tools if tool not in fresh]
    if waiting and runtime is not None:  # only then is the agent's tree needed (and inspected)
        sources.agent = previous.agent
        _scan(sources, runtime, now, processes)
    verified_by_tree = sources.descendants and sources.agent == OK
    sources.verified_tools = tuple(sorted(t for t in tools if t in fresh or verified_by_tree))
    if sources.agent == UNKNOWN and waiting:
        sources.tools = UNKNOWN
    elif len(sources.verified_tools) < len(tools):
        sources.tools = STALE
    sources.children = STALE if any(c.state == SessionState.STOPPING for c in live_children(session)) else OK
    sources.stuck = runtime_stuck(session, now)
    sources.runtime = STUCK if sources.stuck else OK
    session.inspected(sources)
    return sources


def _scan(sources, runtime, now, processes):
    if sources.scanned_at is not None and now - sources.scanned_at < RESCAN_SECONDS and sources.agent == OK:
        return
    sources.scanned_at = now
    try:
        leader = runtime.process.identity
        sources.descendants = bool(leader is not None and processes.related(leader))
        sources.agent = OK
    except OSError as exc:
        log.warning("cannot inspect the agent's process tree: %s", exc)
        sources.agent, sources.descendants = UNKNOWN, False


def attention_for(record, sources):
    """The supervision attention the sources call for, leaving any other attention (a failed stop) alone."""
    if record.attention and record.attention not in SUPERVISION_ATTENTION.values():
        return record.attention
    return SUPERVISION_ATTENTION.get(STUCK if sources.stuck else sources.worst)
