"""Busy input says what happened (issue 20, item 4): with an agent that cannot steer, the default `steer`
interrupts the running turn instead, and `session prompt` and the page say so in plain words, never
"steered" (attach: tests/test_cli_attach.py; the answer's `note` and the marker: the scenario
spec/busy-input/busy-steer-interrupt-fallback.yaml). A real daemon and the reference agent (no steering).
"""

import pytest

from tests.harness import browser
from tests.harness.api import events, spath, wait_for
from tests.harness.cli import run_cli

SAID = "interrupted the running turn: this agent cannot steer"


def _held(daemon, workspace):
    client = daemon.client()
    session = client.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    client.call("POST", spath(session, "prompt"), {"message": "[hold g1] long work"})
    wait_for(lambda: events(client, session, type="agent_message"), what="the held turn")
    return client, session


def test_session_prompt_says_it_interrupted_because_the_agent_cannot_steer(daemon, workspace):
    client, session = _held(daemon, workspace)
    result = run_cli(daemon.home, "session", "prompt", session["id"], "do this instead")
    assert result.returncode == 0, result.stderr
    assert SAID in result.stderr and "steered" not in result.stderr, result.stderr
    assert "echo: do this instead" in result.stdout
    detached = run_cli(daemon.home, "session", "prompt", session["id"], "[hold g2] again", "--detach")
    assert detached.returncode == 0
    wait_for(lambda: [e for e in events(client, session, type="agent_message") if "holding g2" in e["content"]["text"]],
             what="the second held turn")
    quiet = run_cli(daemon.home, "session", "prompt", session["id"], "then this", "--mode", "steer", "--detach")
    assert quiet.returncode == 0 and quiet.stdout.startswith(SAID), quiet.stdout
    (workspace / ".compozy-gates").mkdir(exist_ok=True)
    (workspace / ".compozy-gates" / "g2").touch()


@pytest.mark.skipif(browser.unavailable() is not None, reason=str(browser.unavailable()))
def test_the_page_says_it_interrupted_because_the_agent_cannot_steer(daemon, workspace):
    from playwright.sync_api import expect, sync_playwright
    client, session = _held(daemon, workspace)
    with sync_playwright() as playwright:
        chromium = browser.launch(playwright)
        try:
            page = chromium.new_page()
            page.goto(daemon.page_url(f"/sessions/{session['id']}"))
            expect(page.locator("#busy-controls")).to_be_visible(timeout=20_000)
            page.get_by_role("textbox", name="Message").fill("smaller patch please")
            page.get_by_role("button", name="Steer", exact=True).click()
            expect(page.locator("#composer-note")).to_have_text(SAID, timeout=20_000)
            expect(page.locator("#transcript")).to_contain_text(f"{SAID}: smaller patch please", timeout=20_000)
            expect(page.locator("#composer-note")).not_to_contain_text("steered")
        finally:
            chromium.close()
