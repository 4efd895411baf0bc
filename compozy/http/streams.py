"""Routes that read or follow a session's event store: events, history, Server-Sent Events.

Layer 6 (surface).
"""

ROUTES = ()
