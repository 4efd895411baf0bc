"""A fleet: daemons on several hosts that share one PostgreSQL catalog (docs/fleet.md).

Each module sits in the layer of what it touches: `settings` (layer 0, the [fleet] table of config.toml),
`catalog` (layer 2, the PostgreSQL tables through peewee and psycopg), `mirror` (layer 4, the node's
registration, heartbeat and the mirror of its session index, on one thread of its own), `adoption` (layer 4,
the steps of taking over a session whose node went away), `views` (layer 5, the façade's fleet half: a
SessionManager mixin) and `relay` (layer 6, the HTTP side: a peer's secret checked, an operation relayed to the
session's owner).
"""
