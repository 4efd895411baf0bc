"""What the page shows of the agent itself, in headless Chromium against the real daemon: the failure card with
the agent's own error and stderr, an agent starting, a prompt without output yet, the agent's commands and its
session modes as a runtime choice."""

import json
import sys

import pytest

from compozy.cli.client import Client
from tests.harness.daemon import DaemonProcess
from tests.test_web import WAIT_MS, chromium, needs_browser  # noqa: F401 (the module's browser fixture)

AGENT = f'command = [{json.dumps(sys.executable)}, "-m", "compozy.agents.reference"]\n'
CONFIG = ('[session.supervision]\nfirst_output_after = "1s"\n\n'
          f'[providers.failing]\n{AGENT}'
          'env = {COMPOZY_REFERENCE_FAIL_OPEN = "1", REFERENCE_API_KEY = "sk-ref-0123456789"}\n'
          f'[agents.failing]\nprovider = "failing"\n\n'
          f'[providers.modal]\n{AGENT}env = {{COMPOZY_REFERENCE_START_DELAY = "3", COMPOZY_REFERENCE_COMMANDS = "1", '
          'COMPOZY_REFERENCE_MODES = "1"}\n[agents.modal]\nprovider = "modal"\n')


@pytest.fixture
def page_on(home, workspace, chromium):  # noqa: F811 (the fixture imported above)
    (home / "config.toml").write_text(CONFIG)
    daemon = DaemonProcess(home).start()
    context = chromium.new_context(viewport={"width": 1280, "height": 860})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    client = Client(daemon.socket_url)

    def open_session(agent):
        _, document = client.call("POST", "/api/sessions", {"workspace_path": str(workspace), "agent_name": agent})
        page.goto(daemon.page_url(f"/sessions/{document['session']['id']}"))
        return document["session"]
    yield page, open_session, workspace
    context.close()
    daemon.stop()
    assert errors == []


def send(page, text):
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    page.get_by_role("button", name="Send", exact=True).click()


@needs_browser
def test_the_failure_card_shows_the_agents_error_and_its_stderr(page_on):
    from playwright.sync_api import expect
    page, open_session, _ = page_on
    open_session("failing")
    send(page, "hello?")
    expect(page.get_by_role("alert")).to_contain_text("Reference process exited with code 1")
    card = page.locator("#failure-section")
    expect(card).to_be_visible()
    expect(card).to_contain_text("startup_failure")
    expect(card).to_contain_text('Internal error (-32603): {"details":"Reference process exited with code 1')
    expect(card.locator("pre.stderr")).to_contain_text("fatal: cannot reach the model with key [redacted]")
    assert "\x1b" not in card.text_content() and "sk-ref-0123456789" not in card.text_content()
    expect(page.locator("#transcript .marker").last).to_contain_text("Reference process exited with code 1")


@needs_browser
def test_starting_no_output_commands_and_modes_are_shown(page_on):
    from playwright.sync_api import expect
    page, open_session, workspace = page_on
    open_session("modal")
    send(page, "[wait g1] first")
    expect(page.locator("#working")).to_contain_text("Starting modal…")
    expect(page.locator("#working")).to_contain_text("no output from the agent for")
    expect(page.locator("#transcript .marker").last).to_contain_text("no output from modal after")
    (workspace / ".compozy-gates").mkdir(exist_ok=True)
    (workspace / ".compozy-gates" / "g1").touch()
    expect(page.locator("#transcript .msg.agent .body").last).to_have_text("echo: first")
    expect(page.locator("#working")).to_have_text("")

    commands = page.locator("#commands")
    expect(commands).to_contain_text("/echo")
    expect(commands).to_contain_text("Echo the text back")
    commands.get_by_role("button", name="/recall").click()
    expect(page.get_by_role("textbox", name="Message")).to_have_value("/recall ")

    mode = page.locator("#runtime-form select[name=mode]")  # labelled "Mode" (and named with its choice)
    mode.select_option("plan")
    page.get_by_role("button", name="Select runtime").click()
    expect(page.locator("#runtime")).to_contain_text("mode=plan (revision 1)")
    page.get_by_role("textbox", name="Message").fill("[mode] now")
    page.get_by_role("button", name="Send", exact=True).click()
    expect(page.locator("#transcript .msg.agent .body").last).to_have_text("mode: plan echo: now")
    expect(mode).to_contain_text("current: plan")
