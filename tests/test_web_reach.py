"""At a phone's width (390 px) and a desktop's, in headless Chromium against the real daemon: nothing on a busy
session's view scrolls sideways, and every action (the session's, a message's, the composer's busy controls, the
queue's, the runtime form's) can be scrolled to, lies wholly on screen, looks usable without hovering it and takes
a click."""

from tests.harness.web import needs_browser, web_fixture


web = web_fixture()


@needs_browser
def test_every_action_of_a_busy_session_is_on_screen_and_nothing_scrolls_sideways(web):
    from playwright.sync_api import expect
    page = web.page
    session = web.session("a session with a rather long name that has to wrap on a narrow screen")
    web.open(f"/sessions/{session['id']}")
    web.send("first: " + "a-very-long-unbroken-word-" * 12)
    expect(page.locator("#transcript .turn-end")).to_have_count(1)  # the first turn is over
    web.prompt(session, "```\n" + "x = 1  # a long line of code " * 10 + "\n```\n[hold g1] second")
    web.prompt(session, "queued behind it", mode="queue")
    expect(page.locator("#queue li")).to_contain_text("queued behind it")
    expect(page.get_by_role("button", name="Stop generation")).to_be_visible()
    assert web.fits() == []

    actions = page.get_by_role("group", name="Session actions")
    controls = [actions.get_by_role("button", name=name, exact=True)
                for name in ("Continue…", "Fork…", "Stop", "Stop and archive", "Remove")]
    first = page.locator("#transcript .msg.user").first
    controls += [first.get_by_role("button", name="Rewind to before this message"),
                 first.get_by_role("button", name="Fork from this message")]
    controls += [page.get_by_role("button", name=name, exact=True)
                 for name in ("Send", "Queue", "Steer", "Interrupt", "Stop generation")]
    controls += [page.get_by_role("textbox", name="Message"), page.get_by_role("button", name="Edit queued message 1"),
                 page.get_by_role("button", name="Cancel queued message 1"),
                 page.get_by_role("textbox", name="Model"), page.get_by_role("button", name="Select runtime")]
    for control in controls:
        assert web.on_screen(control), control
        expect(control).to_be_enabled()
        assert web.opacity(control) == 1, control  # nothing looks disabled until hovered
    page.get_by_role("button", name="Edit queued message 1").click()  # reached, it works
    page.get_by_role("textbox", name="Queued message 1").fill("edited from a narrow screen")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#queue li").first).to_contain_text("edited from a narrow screen")
    actions.get_by_role("button", name="Fork…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("A running turn is left out")
    assert web.fits() == [] and web.on_screen(dialog.get_by_role("button", name="Cancel"))
    dialog.get_by_role("button", name="Cancel").click()
    web.release("g1")
    expect(web.agent_text().last).to_have_text("echo: edited from a narrow screen")
    assert web.fits() == []
