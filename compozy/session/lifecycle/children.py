"""Governed children: compozy__session_create with `spawn` makes a `spawned` child the daemon reaps.

Layer 4. A child records its parent, root, depth, role, TTL and permission metadata (its mode, the
parent's mode: never wider). Only a user session spawns (so a child is at most one level below a
user session), and a parent has at most MAX_LIVE_CHILDREN live children. The daemon stops a child
when its TTL expires or its parent stops (stop_cause ttl_expired or parent_stopped, in the child's
stop_detail and session_stopped event). Boot reaps what expired or lost its parent meanwhile.
"""

import logging
import re
import threading

from compozy.clock import epoch_from_iso, iso_from_epoch
from compozy.config import parse_duration
from compozy.errors import CompozyError, invalid
from compozy.session.records.creation import create_session
from compozy.session.records.governed import permission_mode
from compozy.states import LIVE_STATES, SessionState, SessionType, StopCause

log = logging.getLogger("compozy.children")

MAX_LIVE_CHILDREN = 5
DEFAULT_TTL = "30m"
MAX_TTL_SECONDS = 24 * 3600
DEFAULT_ROLE = "worker"
_ROLE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class Children:
    """An observer (compozy.session.records.observers) and the spawn path of the create tool."""

    def __init__(self, services, stopper, sessions, workspaces):
        self.services, self.stopper, self.sessions, self.workspaces = services, stopper, sessions, workspaces
        self.lock = threading.Lock()
        self.timers = {}  # child id -> the cancel event of its TTL (services.threads.after)

    # -- spawning ----------------------------------------------------------------------------

    def spawn(self, caller, body, spawn):
        """A new spawned child of the caller, in the caller's workspace (the record, created)."""
        ttl, role = _ttl(spawn.get("ttl")), spawn.get("role") or DEFAULT_ROLE
        if not _ROLE.match(role):
            raise invalid("spawn.role uses letters, digits, _ . and - (at most 64)", field="spawn.role")
        with self.lock:
            parent = self.services.store.require(caller.id)
            if parent.type != SessionType.USER:
                raise CompozyError("spawn_depth_exceeded", f"session {parent.id} is {parent.type}: only a user "
                                   "session spawns children", session_id=parent.id, session_type=parent.type)
            live = self.live_children(parent.id)
            if len(live) >= MAX_LIVE_CHILDREN:
                raise CompozyError("spawn_limit_reached", f"session {parent.id} already has {len(live)} live "
                                   "spawned children", limit=MAX_LIVE_CHILDREN, children=[c.id for c in live])
            config = self.services.config
            metadata = {"role": role, "ttl": ttl[0], "expires_at": iso_from_epoch(self.services.clock.wall() + ttl[1]),
                        "permissions": {"mode": permission_mode(config, parent),
                                        "parent_mode": permission_mode(config, parent)}}
            record = create_session({**body, "workspace": parent.workspace_id, "parent_session_id": parent.id},
                                    config=config, workspaces=self.workspaces, store=self.services.store,
                                    spawn=metadata, creator=parent)
        self._schedule(record)
        log.info("session %s spawned child %s (role %s, ttl %s)", parent.id, record.id, role, ttl[0])
        return record

    def live_children(self, parent_id):
        rows, _, _ = self.services.catalog.list_sessions({"archive": "include", "parent_session_id": parent_id},
                                                         1000)
        children = (self.services.store.get(row[0]) for row in rows)
        return [c for c in children if c is not None and c.type == SessionType.SPAWNED and c.state in LIVE_STATES]

    # -- reaping -----------------------------------------------------------------------------

    def started(self):
        """Boot: reap children whose TTL ran out or whose parent stopped while no daemon watched; time the rest."""
        for record in self.services.store.in_states(LIVE_STATES, f"type = '{SessionType.SPAWNED.value}'"):
            if record.type != SessionType.SPAWNED:
                continue
            parent = self.services.store.get((record.lineage or {}).get("parent_session_id") or "")
            if parent is None or parent.state == SessionState.STOPPED:
                self._reap(record.id, StopCause.PARENT_STOPPED)
            else:
                self._schedule(record)

    def state_changed(self, session, old, new):
        if new != SessionState.STOPPED:
            return
        self._cancel(session.id)
        if session.record.type == SessionType.USER:
            self.services.threads.start(f"reap-{session.id}", self._reap_children, session.id)

    def closing(self):
        with self.lock:
            timers, self.timers = list(self.timers.values()), {}
        for timer in timers:
            timer.set()

    def _reap_children(self, parent_id):
        if not self.services.accepting:
            return  # a shutdown stops every parent: it stops the children itself, and boot reaps the rest
        try:
            children = self.live_children(parent_id)
        except Exception:  # noqa: BLE001 (the catalog closed under a shutdown that began meanwhile)
            if self.services.accepting:
                log.exception("finding the spawned children of %s failed", parent_id)
            return
        for child in children:
            self._reap(child.id, StopCause.PARENT_STOPPED, f"parent session {parent_id} stopped")

    def _schedule(self, record):
        expires = ((record.extra or {}).get("spawn") or {}).get("expires_at")
        if not expires:
            return
        delay = max(0.0, epoch_from_iso(expires) - self.services.clock.wall())
        timer = self.services.threads.after(f"ttl-{record.id}", delay, self._reap, record.id, StopCause.TTL_EXPIRED)
        with self.lock:
            previous, self.timers[record.id] = self.timers.get(record.id), timer
        if previous is not None:
            previous.set()

    def _cancel(self, session_id):
        with self.lock:
            timer = self.timers.pop(session_id, None)
        if timer is not None:
            timer.set()

    def _reap(self, child_id, cause, detail=None):
        if not self.services.accepting:
            return  # the shutdown stops every live runtime itself
        try:
            session = self.sessions(child_id)
            if session.state in LIVE_STATES:
                log.info("reaping spawned session %s (%s)", child_id, cause.value)
                self.stopper.request(session, cause, wait=False, detail=detail)
        except CompozyError:
            pass  # removed meanwhile
        except Exception:  # noqa: BLE001 (a timer thread never dies loudly)
            log.exception("reaping spawned session %s failed", child_id)


def _ttl(text):
    """(text, seconds) of a spawn's ttl: a duration above zero, at most 24h."""
    text = text or DEFAULT_TTL
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise invalid(f"spawn.ttl: {exc}", field="spawn.ttl") from None
    if not 0 < seconds <= MAX_TTL_SECONDS:
        raise invalid("spawn.ttl must be above zero and at most 24h", field="spawn.ttl")
    return text, seconds
