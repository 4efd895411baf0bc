"""A session's turns: the turn engine (admission, the durable input queue, the runner), binding a
runtime through the ACP seam, and the permission policy for the agent's requests.

The highest of the session packages: it imports session.records and session.lifecycle.
"""
