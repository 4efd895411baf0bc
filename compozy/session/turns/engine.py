"""The turn engine: everything that decides and runs a session's turns, built in one place.

Layer 4. Admission decides what an input does (start, queue, steer, interrupt); the input queue
holds what waits, durably; the runner runs one turn at a time and asks recovery to replace an
agent lost mid-turn. Each part refers only to the parts below it: queue <- runner <- admission.
"""

from __future__ import annotations

from typing import Any, Mapping

from compozy.errors import CompozyError
from compozy.session.records.live import LiveSession
from compozy.session.records.services import Services
from compozy.session.turns.admission import Admission
from compozy.session.turns.budgets import Budgets
from compozy.session.turns.queue import InputQueue
from compozy.session.lifecycle.recovery import Recovery
from compozy.session.turns.runner import Runner
from compozy.session.turns.turn import Turn
from compozy.states import MarkerKind, SessionState, TurnPhase


class TurnEngine:
    def __init__(self, services: Services, binder: Any, requests: Any) -> None:
        self.queue = InputQueue(services)
        self.budgets = Budgets(services)
        self.runner = Runner(services, binder, requests, self.queue, Recovery(services, binder), self.budgets)
        self.admission = Admission(services, self.queue, self.runner, self.budgets)
        self.queue.held = self.budgets.holds
        self.queue.waiting = self.budgets.waiting_for  # type: ignore[method-assign]
        self.budgets.restart = self._restart
        services.sweeps.append(self.budgets.sweep)

    def _restart(self, session):
        """Queued input held back (a spent budget) may run now: the next entry becomes the current turn."""
        with session.lock:
            if session.turn is None and session.stop_operation is None and session.state == SessionState.ACTIVE:
                turn = self.queue.next_turn(session)
                if turn is not None:
                    self.runner.start(session, turn)

    def prompt(self, session: LiveSession, body: Mapping[str, Any]) -> dict:
        """Admit a prompt: started, queued, steered or interrupted, answered after the durable write."""
        return self.admission.prompt(session, body)

    def steer_input(self, session: LiveSession, entry_id: str, body: Mapping[str, Any]) -> dict:
        return self.admission.promote(session, entry_id, body)

    def list_inputs(self, session: LiveSession) -> dict:
        return self.queue.list(session)

    def edit_input(self, session: LiveSession, entry_id: str, body: Mapping[str, Any]) -> dict:
        return self.queue.edit(session, entry_id, body)

    def cancel_input(self, session: LiveSession, entry_id: str) -> dict:
        return self.queue.cancel(session, entry_id)

    def cancel_turn(self, session: LiveSession, body: Mapping[str, Any] | None) -> dict:
        """A person cancels the current turn; the session stays active."""
        with session.lock:
            turn = session.turn
            if turn is None:
                raise CompozyError("prompt_not_in_progress", "no turn is running")
            session.marker(MarkerKind.PROMPT_CANCEL, f"turn {turn.id} canceled", turn.id)
            self.runner.cancel(session, "canceled")
        return {"cancel": {"turn_id": turn.id, "status": TurnPhase.CANCELLING.value}}

    def cancel(self, session: LiveSession, reason: str) -> Turn | None:
        """Cooperative cancel of the current turn (the stop ladder, supervision); the turn or None."""
        return self.runner.cancel(session, reason)
