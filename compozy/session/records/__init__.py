"""A session's durable record and its reads: the typed record and the store that writes it, the
in-memory LiveSession (the one path for its writes), the event feed, transcript folding and
replay, the control rows' tables, workspaces, creation and the runtime selection.

The lowest of the session packages: it imports no other one.
"""
