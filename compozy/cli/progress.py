"""Binding progress on stderr: a prompt that must start its agent says which and how long it takes.

Layer 6 (surface). Before a prompt to a session without a ready agent the CLI prints
`starting <agent> (<command>)…`; on a terminal the elapsed seconds tick beside it, and when the
first answer frame arrives the line ends with the time it took. Nothing is printed for a session
whose agent is already running, nor with -o json.
"""

import os
import threading
import time
from contextlib import contextmanager

import click

from compozy.cli.output import on_terminal
from compozy.errors import CompozyError

TICK = 1.0


class BindingProgress:
    def __init__(self, obj, session_id):
        self.obj, self.session_id = obj, session_id
        self.started = None
        self.finished = threading.Event()

    def begin(self):
        try:
            session = self.obj.call("session.get", session_id=self.session_id)["session"]
            if session["runtime"].get("status") == "ready":
                return self
            agents = {a["name"]: a for a in self.obj.call("agent.list")["agents"]}
        except (CompozyError, KeyError):
            return self  # the prompt itself will say what is wrong
        agent = agents.get(session["agent_name"]) or {"command": []}
        command = " ".join([os.path.basename(agent["command"][0]), *agent["command"][1:]]) if agent["command"] else "?"
        self.label = f"starting {session['agent_name']} ({command})…"
        self.started = time.monotonic()
        click.echo(self.label, err=True, nl=not self.ticking)
        if self.ticking:
            threading.Thread(target=self._tick, daemon=True).start()
        return self

    @property
    def ticking(self):
        return on_terminal(click.get_text_stream("stderr"))

    def _tick(self):
        while not self.finished.wait(TICK):
            click.echo(f"\r{self.label} {time.monotonic() - self.started:.0f}s", err=True, nl=False)

    def end(self, ok=True):
        """The first frame arrived (or the prompt failed): say how long the start took."""
        if self.started is None or self.finished.is_set():
            return
        self.finished.set()
        elapsed = time.monotonic() - self.started
        outcome = f"ready after {elapsed:.1f}s" if ok else f"failed after {elapsed:.1f}s"
        click.echo(f"\r{self.label} {outcome}" if self.ticking else outcome, err=True)

    @contextmanager
    def until_answered(self):
        try:
            yield
        except BaseException:
            self.end(ok=False)
            raise
        self.end()

    def frames(self, pairs):
        """The answer's frames, ending the progress line at the first one."""
        with self.until_answered():
            for pair in pairs:
                self.end()
                yield pair
