"""Stuck is visible (issue 20, item 3): a session whose runtime stays in a transitional status past its
bound, or with no turn owning it, is flagged with how long: attention `runtime_stuck`, the `runtime`
supervision source `stuck` and `supervision.stuck` in GET /api/sessions, a line in `compozy status`, a
badge on the page. The state such a bug leaves (the wedge of issue 20: `recovering`, no turn) is written
past the runtime table into a real daemon's memory, served in the test process over HTTP and its socket.
"""

import time

import pytest

from compozy.cli.client import Client
from tests.harness import browser
from tests.harness.api import wait_for
from tests.harness.cli import run_cli
from tests.harness.served import ServedManager

WITHIN = 20.0


def _wait(predicate, what):
    return wait_for(predicate, timeout=WITHIN, interval=0.05, what=what)


@pytest.fixture
def served_manager(home):
    served = ServedManager(home).start()
    yield served
    served.close()


def _wedge(served, workspace, seconds_ago):
    """A session left `recovering` with no turn, as the bug of issue 20 left it, since seconds_ago."""
    client = Client(served.socket_url)  # the owner's socket: no secret needed
    session = client.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    live = served.manager._session(session["id"])
    live.save(runtime=live.record.runtime.replace(status="recovering", transition="automatic_recovery"))
    live.runtime_since -= seconds_ago
    return client, session


def _secret(served):
    return (served.home.root / "auth_token").read_text().strip()


def _listed(client, session_id):
    return next(s for s in client.call("GET", "/api/sessions")[1]["sessions"] if s["id"] == session_id)


@pytest.mark.illegal_transitions("runtime:recovering->binding")
def test_a_stuck_runtime_is_flagged_with_how_long_and_clears_once_it_settles(served_manager, workspace):
    client, session = _wedge(served_manager, workspace, seconds_ago=125)
    listed = _wait(lambda: (row := _listed(client, session["id"])).get("attention") == "runtime_stuck" and row,
                   "the stuck flag in the list")
    stuck = listed["supervision"]["stuck"]
    assert listed["supervision"]["sources"]["runtime"] == "stuck"
    assert stuck["status"] == "recovering" and stuck["owned_by_turn"] is False
    assert 125 <= stuck["seconds"] < 125 + WITHIN and stuck["bound_seconds"] > 0 and stuck["since"].endswith("Z")
    assert listed["health"]["health"] == "degraded"

    status = client.call("GET", "/api/status")[1]["status"]
    flagged = next(s for s in status["attention"] if s["id"] == session["id"])
    assert flagged.get("attention") == "runtime_stuck" and flagged["stuck"]["status"] == "recovering"
    shown = run_cli(served_manager.home.root, "status")
    assert shown.returncode == 0, shown.stderr
    line = next(line for line in shown.stdout.splitlines() if session["id"] in line)
    assert "runtime_stuck: runtime recovering for 2m" in line, line

    # The next prompt meets the bug (the table refuses recovering -> binding), settles it, and runs after.
    scoped = f"/api/workspaces/{session['workspace_id']}/sessions/{session['id']}"
    with pytest.raises(Exception):
        client.call("POST", f"{scoped}/prompt", {"message": "meets the bug"})
    client.call("POST", f"{scoped}/prompt", {"message": "runs"})
    cleared = _wait(lambda: (row := _listed(client, session["id"])).get("attention") is None and row, "the flag cleared")
    assert cleared["supervision"]["stuck"] is None and cleared["supervision"]["sources"]["runtime"] == "ok"


def test_a_transitional_status_a_turn_owns_within_its_bound_is_not_stuck(served_manager, workspace):
    """A bind held in progress is no wedge: a turn owns it and it is within its bound."""
    client, session = _wedge(served_manager, workspace, seconds_ago=0)
    live = served_manager.manager.live[session["id"]]
    live.save(runtime=live.record.runtime.replace(status="unbound", transition=""))  # undo the wedge
    time.sleep(1.0)  # four sweeps
    assert _listed(client, session["id"])["supervision"]["stuck"] is None


@pytest.mark.skipif(browser.unavailable() is not None, reason=str(browser.unavailable()))
def test_the_page_shows_a_stuck_runtime_and_for_how_long(served_manager, workspace):
    from playwright.sync_api import expect, sync_playwright
    client, session = _wedge(served_manager, workspace, seconds_ago=300)
    _wait(lambda: _listed(client, session["id"]).get("attention") == "runtime_stuck", "the stuck flag")
    with sync_playwright() as playwright:
        chromium = browser.launch(playwright)
        try:
            page = chromium.new_page()
            page.goto(f"{served_manager.http_url}/sessions/{session['id']}?token={_secret(served_manager)}")
            expect(page.locator("#session-badges")).to_contain_text("stuck recovering for 5m", timeout=20_000)
            page.goto(served_manager.http_url + "/")
            expect(page.locator("table")).to_contain_text("stuck recovering for 5m", timeout=20_000)
        finally:
            chromium.close()
