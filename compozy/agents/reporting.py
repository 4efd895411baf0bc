"""Directives that report or change what the reference agent knows of the protocol: the methods this process
was asked, closes, the session mode and the session's title. Mixed into the Turn beside DirectiveSteps.
"""

from __future__ import annotations

from datetime import datetime, timezone


class ProtocolSteps:
    """Relies on the Turn's agent, session, say and update."""

    def do_methods(self) -> None:
        with self.agent.lock:
            asked = list(self.agent.journal)
        self.say("methods: " + " ".join(asked) + " ")

    def do_closes(self) -> None:
        self.say(f"closes: {self.session.closes} ")

    def do_mode(self) -> None:
        self.say(f"mode: {self.session.mode} ")

    def do_switch_mode(self, mode: str) -> None:
        """The agent changes its own mode (as agents do after planning) and says so with current_mode_update."""
        if not self.agent.settings.modes or mode != self.agent.known_mode(mode):
            self.say(f"no mode {mode} ")
            return
        with self.agent.lock:
            self.session.mode = mode
            self.agent.store.save(self.session)
        self.update({"sessionUpdate": "current_mode_update", "currentModeId": mode})

    def do_title(self, title: str) -> None:
        self.update({"sessionUpdate": "session_info_update", "title": title.strip(),
                     "updatedAt": datetime.now(timezone.utc).isoformat(timespec="seconds")})
