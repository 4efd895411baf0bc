"""Observers: what other concerns (hooks, reply wakes, governed children, titles) hear of sessions.

Layer 4. The session's one write path (LiveSession) and creation tell the observers what happened;
each observer method is optional, must return quickly (work of its own runs on its own thread) and
can never break the write that told it: a failing observer is logged and skipped.
"""

import logging

log = logging.getLogger("compozy.observers")

# The names an observer may implement, and what each receives:
#   created(record)                        a session was created (any surface, a derive, a spawn)
#   removed(record)                        a session was removed (its directory and catalog row are gone)
#   state_changed(session, old, new)       a LiveSession's lifecycle state moved along an edge
#   appended(session, records)             events were committed to a LiveSession's events.db
#   agent_exited(session, runtime)         an agent process of the session ended (for any reason)
#   attention_changed(session, old, new)   the session's attention changed
#   failure_changed(session, old, new)     the failure the session keeps was set, replaced or cleared
#   started()                              the daemon finished its boot
#   closing()                              the daemon is shutting down
SIGNALS = ("created", "removed", "state_changed", "appended", "agent_exited", "attention_changed", "failure_changed",
           "started", "closing")


class Observers:
    def __init__(self):
        self._subscribers = []

    def add(self, subscriber):
        self._subscribers.append(subscriber)
        return subscriber

    def emit(self, signal, *args):
        assert signal in SIGNALS, signal
        for subscriber in self._subscribers:
            method = getattr(subscriber, signal, None)
            if method is None:
                continue
            try:
                method(*args)
            except Exception:  # noqa: BLE001 (an observer never breaks the session's own write)
                log.exception("observer %s failed on %s", type(subscriber).__name__, signal)
