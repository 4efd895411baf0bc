"""Work derived from durable history: the preview of what a derivation carries, rewind, continue
and fork (with the agent's own clone), and their retries.

The highest of the session packages: it imports session.records, session.lifecycle and session.turns.
"""
