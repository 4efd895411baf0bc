"""Budgets: limits on what the agents report, per workspace, agent or the whole daemon, per day, week or month.

Layer 4. A budget's spending is the usage ledger's sum over its current period (UTC; weeks start on Monday)
and its scope. At 80% of its limit an attention item (`budget_warning`) opens, once per period, and
resolves when the period resets. At 100% a new prompt under it is refused (`budget_exceeded`, with the
budget, what was spent, the limit and when it resets), a queued prompt waits in the queue with that
reason until the period resets or the limit is raised, and a running turn is never cut. A person can go
past it with `override_budget` on a prompt; the override is recorded in the turn's ledger row and its
user_message.
"""

import json
import logging
from datetime import datetime, timedelta, timezone

from compozy.errors import CompozyError
from compozy.session.turns.ledger import total_of

log = logging.getLogger("compozy.budgets")

WARN_AT = 0.8
SWEEP_SECONDS = 2.0  # how often waiting prompts and warnings of past periods are looked at again
UTC_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def period_bounds(period, now):
    """(start, next start) of the period that holds `now` (epoch seconds), as the ledger stores times."""
    moment = datetime.fromtimestamp(now, timezone.utc)
    start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "week":
        start -= timedelta(days=start.weekday())
        end = start + timedelta(days=7)
    elif period == "month":
        start = start.replace(day=1)
        end = (start + timedelta(days=32)).replace(day=1)
    else:
        end = start + timedelta(days=1)
    return start.strftime(UTC_FORMAT), end.strftime(UTC_FORMAT)


class Budgets:
    def __init__(self, services):
        self.services = services
        self.waiting = {}  # session_id -> (session, the exceeded budget's state): queued input held back
        self.restart = None  # callable(session): take the session's next queued entry (set by the engine)
        self._last_sweep = 0.0

    def applicable(self, record):
        budgets = []
        for budget in self.services.config.budgets:
            if budget.agent is not None and budget.agent != record.agent_name:
                continue
            if budget.workspace is not None and not self._same_workspace(budget.workspace, record.workspace_id):
                continue
            budgets.append(budget)
        return budgets

    def _same_workspace(self, reference, workspace_id):
        if reference == workspace_id:
            return True
        found = self.services.catalog.workspace_by(name=reference)
        return found is not None and found["id"] == workspace_id

    def state(self, budget, workspace_id):
        """{budget, scope, period, unit, limit, spent, resets_at}: the budget in its current period."""
        start, resets_at = period_bounds(budget.period, self.services.clock.wall())
        where, params = "1", []
        if budget.workspace is not None:
            where, params = "workspace_id = ?", [workspace_id]
        elif budget.agent is not None:
            where, params = "agent = ?", [budget.agent]
        total = total_of(self.services.catalog.ledger.sums(None, start, None, where, params))
        if budget.limit_tokens is not None:
            spent = total["tokens"]["total"]
        else:
            spent = next((cost["amount"] for cost in total["cost"] if cost["currency"] == budget.currency), 0)
        return {"budget": budget.name, "scope": budget.scope, "period": budget.period, "unit": budget.unit,
                "limit": budget.limit, "spent": spent, "period_start": start, "resets_at": resets_at}

    def exceeded(self, record):
        """The state of the first budget of this session that is spent, or None."""
        for budget in self.applicable(record):
            state = self.state(budget, record.workspace_id)
            if state["spent"] >= state["limit"]:
                return state
        return None

    # -- admission, the queue, the end of a turn ----------------------------------------------------

    def admit(self, session, override):
        """None when no budget is spent; the override to record when a person goes past a spent one; else
        refused with budget_exceeded."""
        state = self.exceeded(session.record)
        if state is None:
            return None
        if override:
            log.info("session %s: budget %s overridden (%s of %s %s)", session.id, state["budget"], state["spent"],
                     state["limit"], state["unit"])
            return json.dumps(state, separators=(",", ":"))
        raise CompozyError("budget_exceeded", f"budget {state['budget']} is spent: {state['spent']} of "
                           f"{state['limit']} {state['unit']} this {state['period']}, until {state['resets_at']}; "
                           "override_budget goes past it", **state)

    def holds(self, session, entry):
        """True when the next queued entry must wait for a spent budget (it stays queued, with the reason)."""
        if entry.budget_override:
            return False
        state = self.exceeded(session.record)
        if state is None:
            self.waiting.pop(session.id, None)
            return False
        if session.id not in self.waiting:
            session.append_event("runtime_warning", {"text": f"queued input waits: budget {state['budget']} is spent "
                                                     f"until {state['resets_at']}", "code": "budget_exceeded",
                                                     "budget": state})
        self.waiting[session.id] = (session, state)
        return True

    def waiting_for(self, session):
        held = self.waiting.get(session.id)
        return {"reason": "budget_exceeded", **held[1]} if held else None

    def turn_ended(self, record):
        """Warn once per period when a budget of this session reaches 80%."""
        for budget in self.applicable(record):
            state = self.state(budget, record.workspace_id)
            if state["spent"] >= WARN_AT * state["limit"]:
                scope = budget.workspace and record.workspace_id
                share = round(100 * state["spent"] / state["limit"])
                self.services.inbox.open(
                    f"budget:{budget.name}:{scope or ''}:{state['period_start']}", "budget_warning", None,
                    f"budget {budget.name}: {share}% spent ({state['spent']} of {state['limit']} {state['unit']} "
                    f"this {budget.period})", [{"id": "dismiss", "label": "Dismiss", "operation": None, "with": {}}],
                    state, workspace_id=scope or None)

    # -- the periodic look (compozy.session.lifecycle.supervision's sweep) ---------------------------------

    def sweep(self, now):
        if now - self._last_sweep < SWEEP_SECONDS:
            return
        self._last_sweep = now
        for cause in self.services.catalog.attention.open_causes("budget:"):
            if self._period_over(cause):
                self.services.inbox.resolve_cause(cause, "the budget's period reset")
        for session_id, (session, _) in list(self.waiting.items()):
            if self.exceeded(session.record) is None:
                self.waiting.pop(session_id, None)
                self.restart(session)

    def _period_over(self, cause):
        _, name, _, start = cause.split(":", 3)  # budget:NAME:WORKSPACE:PERIOD_START
        budget = next((b for b in self.services.config.budgets if b.name == name), None)
        return budget is None or period_bounds(budget.period, self.services.clock.wall())[0] != start
