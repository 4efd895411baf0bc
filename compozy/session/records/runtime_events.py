"""RuntimeEvents: what a session hears from its agent, in the domain's words.

Layer 4. The ACP seam (compozy.acp.client) calls it from the agent's reader thread after decoding;
it commits the output through LiveSession.append and tells the current turn what it heard (through
the turn's own methods).
"""

import logging

log = logging.getLogger("compozy.session")

COMMANDS_UPDATE = "available_commands_update"  # the system event that announces the agent's commands
NOT_AN_ANSWER = ("system", "usage")  # what an agent says of itself, not of the prompt: no end to its wait


class RuntimeEvents:
    """What a session hears from its agent, in the domain's words: the ACP seam calls it from the
    agent's reader thread after decoding (compozy.acp.client)."""

    def __init__(self, session, requests, lost_outside_turn):
        self.session, self.requests, self.lost_outside_turn = session, requests, lost_outside_turn

    def is_current(self, runtime):
        """Output counts only from the runtime serving the session, or the one being bound for it."""
        return runtime is self.session.runtime or runtime is self.session.candidate

    def output(self, runtime, events):
        """Commit the agent's translated output under the turn it belongs to (persist, then forward)."""
        if not self.is_current(runtime):
            log.warning("session %s: dropped %d late event(s) from a retired agent process (pid %s)",
                        self.session.id, len(events), runtime.process.pid)
            return
        turn = self.session.turn
        turn_id = turn.id if turn is not None and turn.accepts_output else None
        agent_name = self.session.record.agent_name
        self.session.append([(kind, turn_id, content, agent_name) for kind, content in events])
        self.session.touch(events[-1][0])
        self._keep_agent_state(runtime, events, turn if turn_id is not None else None)
        if turn is not None:
            if turn_id is not None:
                turn.heard_output(any(kind not in NOT_AN_ANSWER for kind, _ in events))
                for kind, content in events:
                    turn.track_tool(kind, content)
            turn.progress()

    def _keep_agent_state(self, runtime, events, turn):
        """The agent's commands (kept in the session's runtime), its cumulative cost (for a turn's share of it)
        and the turn's last usage report."""
        for kind, content in events:
            if kind == "system" and content.get("title") == COMMANDS_UPDATE and runtime.available_commands is not None \
                    and runtime.available_commands != self.session.record.runtime.commands:
                self.session.update_runtime(commands=runtime.available_commands)
            elif kind == "usage":
                cost = content.get("cost")
                if isinstance(cost, dict):
                    self.session.saw_cost(runtime.acp_session_id, cost)
                if turn is not None:
                    turn.usage_reported(content)

    def permission(self, runtime, ask, reply):
        self._heard_from_agent()
        self.requests.permission(self.session, ask, reply)

    def write(self, runtime, path, reply):
        self._heard_from_agent()
        self.requests.write(self.session, path, reply)

    def question(self, runtime, ask, reply):
        self._heard_from_agent()
        self.requests.question(self.session, ask, reply)

    def _heard_from_agent(self):
        turn = self.session.turn
        if turn is not None:
            turn.heard_output()  # a request is output: the turn is no longer waiting for the agent's first word

    def workspace_root(self):
        return self.requests.workspace_root(self.session)

    def files_denied(self):
        return self.requests.files_denied(self.session)

    def exited(self, runtime):
        turn = self.session.turn
        if turn is not None:
            turn.wake_up()
        self.session.services.observers.emit("agent_exited", self.session, runtime)
        self.lost_outside_turn(self.session, runtime)
