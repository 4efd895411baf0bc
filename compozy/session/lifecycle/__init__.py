"""A session's life around its turns: the stop ladder, recovery of a lost agent, supervision's
timers, crash bundles, boot reconciliation and repair, and the stop/archive requests.

Imports session.records only.
"""
