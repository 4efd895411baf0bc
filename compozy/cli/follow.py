"""Following a session's committed events over GET S/stream, resuming by sequence when the
connection drops (a daemon restart, a network blip) until the follower is told to stop.

Layer 6 (surface).
"""

import http.client
import time

import click

from compozy.errors import CompozyError

RETRY_EVERY = 0.5


class Follower:
    def __init__(self, obj, session):
        self.obj, self.session_id, self.workspace = obj, session["id"], session["workspace_id"]
        self.last = session["fences"]["max_sequence"]  # from now, unless the caller shows older events first

    def records(self):
        """Every record committed after `last`, once each and in order, across reconnections."""
        while True:
            try:
                for _, record in self.obj.stream("session.stream", session_id=self.session_id,
                                                 workspace=self.workspace, after_sequence=self.last):
                    if isinstance(record, dict) and isinstance(record.get("sequence"), int):
                        if record["sequence"] > self.last:
                            self.last = record["sequence"]
                            yield record
            except CompozyError as exc:
                if exc.code != "daemon_unavailable":
                    raise
            except (OSError, http.client.HTTPException, ValueError):
                pass
            self._reconnect()

    def _reconnect(self):
        click.echo(f"\n[connection lost after #{self.last}; reconnecting…]", err=True)
        while True:
            try:
                self.obj.call("daemon.health")
                break
            except CompozyError:
                time.sleep(RETRY_EVERY)
        click.echo(f"[reconnected; resuming after #{self.last}]", err=True)
