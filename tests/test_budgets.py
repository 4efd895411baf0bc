"""Budgets in-process with the real manager and reference agents: a workspace's cost budget leaves other
workspaces alone, and queued input held back by a spent budget runs once the limit is raised."""

import time

import pytest

from compozy.config import from_document
from compozy.errors import CompozyError
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.turns.budgets import period_bounds


def until(check, within=20.0):
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("not reached in time")
        time.sleep(0.05)


def ended(manager, session_id, turn_id):
    events = manager.events(session_id, None, {"turn_id": turn_id, "type": "done,error"})["events"]
    return bool(events)


@pytest.fixture
def build(home):
    made = []

    def make(budgets):
        made.append(SessionManager(Home(home), from_document({"budgets": budgets})).start())
        return made[-1]
    yield make
    for manager in made:
        manager.shutdown()


def test_a_workspace_cost_budget_refuses_only_its_own_workspace(build, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    manager = build([{"name": "first-money", "period": "month", "limit_cost": 0.25, "currency": "USD",
                      "workspace": "first"}])
    manager.create_workspace({"name": "first", "path": str(first)})
    spender = manager.create_session({"workspace": "first"})["session"]["id"]
    other = manager.create_session({"workspace_path": str(second)})["session"]["id"]
    turn = manager.prompt(spender, None, {"message": "[usage] spend"})["prompt"]["turn_id"]
    until(lambda: ended(manager, spender, turn))
    with pytest.raises(CompozyError) as refused:
        manager.prompt(spender, None, {"message": "more"})
    assert refused.value.code == "budget_exceeded"
    assert refused.value.details["spent"] == 0.25 and refused.value.details["scope"] == {"workspace": "first"}
    assert manager.prompt(other, None, {"message": "elsewhere"})["prompt"]["disposition"] == "started"


def test_held_queued_input_runs_once_the_limit_is_raised(build, workspace):
    manager = build([{"name": "tokens", "period": "day", "limit_tokens": 1000}])
    session_id = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    first = manager.prompt(session_id, None, {"message": "[usage] [hold g1] spend"})["prompt"]
    queued = manager.prompt(session_id, None, {"message": "later", "mode": "queue"})["prompt"]
    assert queued["disposition"] == "queued"
    (workspace / ".compozy-gates").mkdir()
    (workspace / ".compozy-gates" / "g1").touch()
    until(lambda: ended(manager, session_id, first["turn_id"]))
    until(lambda: manager.list_inputs(session_id, None)["entries"][0].get("waiting"))
    assert not ended(manager, session_id, queued["turn_id"])
    manager.services.config = from_document({"budgets": [{"name": "tokens", "period": "day", "limit_tokens": 5000}]})
    until(lambda: ended(manager, session_id, queued["turn_id"]))
    assert manager.list_inputs(session_id, None)["entries"] == []


def test_periods_are_utc_days_weeks_from_monday_and_months():
    thursday = 1796299200.0  # 2026-12-03T12:00:00Z
    assert period_bounds("day", thursday) == ("2026-12-03T00:00:00.000000Z", "2026-12-04T00:00:00.000000Z")
    assert period_bounds("week", thursday) == ("2026-11-30T00:00:00.000000Z", "2026-12-07T00:00:00.000000Z")
    assert period_bounds("month", thursday) == ("2026-12-01T00:00:00.000000Z", "2027-01-01T00:00:00.000000Z")
