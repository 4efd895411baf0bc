"""What the page shows of the agent itself, in headless Chromium against the real daemon, at a desktop and a
phone's width: a failure as a card in the transcript (which agent, its own reason and last output, what to do)
with the alert never pushing the composer off screen, the side panel's failure, an agent starting, a prompt
without output yet, the agent's commands and its session modes as a runtime choice."""

from tests.harness.web import REFERENCE, needs_browser, web_fixture

CONFIG = ('[session.supervision]\nfirst_output_after = "1s"\n\n'
          f'[providers.failing]\n{REFERENCE}'
          'env = {COMPOZY_REFERENCE_FAIL_OPEN = "1", REFERENCE_API_KEY = "sk-ref-0123456789"}\n'
          '[agents.failing]\nprovider = "failing"\n\n'
          f'[providers.locked]\n{REFERENCE}env = {{COMPOZY_REFERENCE_REQUIRE_AUTH = "1", '
          'COMPOZY_REFERENCE_AUTH_REFUSE = "1"}\n[agents.locked]\nprovider = "locked"\n\n'
          f'[providers.modal]\n{REFERENCE}env = {{COMPOZY_REFERENCE_START_DELAY = "3", COMPOZY_REFERENCE_COMMANDS = "1", '
          'COMPOZY_REFERENCE_MODES = "1"}\n[agents.modal]\nprovider = "modal"\n')


web = web_fixture(CONFIG)


def open_session(web, agent):
    session = web.session(f"{agent} session", agent_name=agent)
    web.open(f"/sessions/{session['id']}")
    return session


def send(page, text):
    page.get_by_role("textbox", name="Message").fill(text)
    page.get_by_role("button", name="Send", exact=True).click()


@needs_browser
def test_a_provider_failure_is_a_card_in_the_transcript_and_the_composer_stays_on_screen(web):
    from playwright.sync_api import expect
    page = web.page
    open_session(web, "failing")
    send(page, "hello?")
    expect(page.get_by_role("alert")).to_contain_text("Reference process exited with code 1")
    for control in (page.get_by_role("textbox", name="Message"), page.get_by_role("button", name="Send", exact=True)):
        assert web.on_screen(control)  # the alert takes room from the transcript, never from the composer
    expect(page.get_by_role("textbox", name="Message")).to_have_value("hello?")  # kept, to send again
    card = page.get_by_role("group", name="Agent failure")
    expect(card.locator("header")).to_contain_text("failing could not start")
    expect(card).to_contain_text("The agent said: Reference process exited with code 1 (COMPOZY_REFERENCE_FAIL_OPEN)")
    expect(card.locator("pre.stderr")).to_contain_text("fatal: cannot reach the model with key [redacted]")
    expect(card.locator(".next-step")).to_contain_text("What to do: Check that failing's command runs in a terminal")
    assert "\x1b" not in card.text_content() and "sk-ref-0123456789" not in card.text_content()
    assert "route 1" not in page.locator("#transcript").text_content()
    assert web.fits() == []

    side = page.locator("#failure-section")  # the side panel keeps the evidence too, under Details
    expect(side).to_contain_text("startup failure")
    expect(side).to_contain_text('Internal error (-32603): {"details":"Reference process exited with code 1')
    expect(side.locator("pre.stderr")).to_contain_text("fatal: cannot reach the model with key [redacted]")
    assert "sk-ref-0123456789" not in side.text_content()


@needs_browser
def test_a_login_failure_says_which_command_logs_the_agent_in(web):
    from playwright.sync_api import expect
    page = web.page
    open_session(web, "locked")
    send(page, "hello?")
    card = page.get_by_role("group", name="Agent failure")
    expect(card.locator("header")).to_contain_text("locked needs you to log in")
    expect(card).to_contain_text("The agent said: the reference login is switched off")
    expect(card.locator(".next-step code")).to_have_text("compozy agent login locked --method reference-login")
    page.get_by_role("button", name="Dismiss").click()
    expect(page.get_by_role("alert")).to_be_hidden()
    assert web.fits() == []


@needs_browser
def test_starting_no_output_commands_and_modes_are_shown(web):
    from playwright.sync_api import expect
    page = web.page
    open_session(web, "modal")
    send(page, "[wait g1] first")
    expect(page.locator("#working")).to_contain_text("Starting modal…")
    expect(page.locator("#health")).to_contain_text("starting")  # in words, not binding, initial_bind
    expect(page.locator("#working")).to_contain_text("no output from the agent for")
    expect(page.locator("#transcript .marker").last).to_contain_text("no output from modal after")
    web.release("g1")
    expect(web.agent_text().last).to_have_text("echo: first")
    expect(page.locator("#working")).to_have_text("")
    assert "initial_bind" not in page.locator("body").text_content()

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
    expect(web.agent_text().last).to_have_text("mode: plan echo: now")
    expect(mode).to_contain_text("current: plan")
    assert web.fits() == []
