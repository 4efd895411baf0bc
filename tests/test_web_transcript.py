"""The transcript in headless Chromium, at a desktop and a phone's width, against the real daemon and the
reference agent: each message and turn with its time and duration, a turn's tokens and cost as the agent reported
them, and what happened said in words (no turn IDs, no state or reason names)."""

import re

from tests.harness.web import needs_browser, web_fixture

CONFIG = '[permissions]\nmode = "approve-reads"\n'
CLOCK = r"\d{1,2}:\d{2}"
INTERNAL = re.compile(r"\bturn_[0-9A-Z]{26}\b|\b[a-z]+_[a-z_]+\b")  # an ID, or a snake_case name


web = web_fixture(CONFIG)


@needs_browser
def test_messages_and_turns_show_their_time_duration_tokens_and_cost(web):
    from playwright.sync_api import expect
    page = web.page
    session = web.session("timed")
    web.open(f"/sessions/{session['id']}")
    web.send("[say writing] [sleep 1.2] [usage] first")
    ends = page.locator("#transcript .turn-end")
    expect(ends).to_have_count(1)
    user = page.locator("#transcript .msg.user header").first
    expect(user.locator("time")).to_have_text(re.compile(f"^{CLOCK}"))
    answer = page.locator("#transcript .msg.agent header").first
    expect(answer).to_have_text(re.compile(rf"^general{CLOCK}.* · 1\.\ds$"))  # written over more than a second
    expect(ends.first).to_have_text(re.compile(
        rf"^Finished {CLOCK}.* · took 1\.\ds · 1,200 tokens \(1,000 in, 200 out\) · \$0\.25$"))

    web.send("[usage] second")  # the turn's own cost, not the session's running total
    expect(ends).to_have_count(2)
    expect(ends.last).to_have_text(re.compile(r" · took .* · 1,200 tokens \(1,000 in, 200 out\) · \$0\.25$"))
    web.send("[stop max_tokens] third")  # no usage reported: none shown
    expect(ends.last).to_have_text(re.compile(rf"^The agent hit its output limit {CLOCK}.* · took [^·]*$"))

    page.reload()  # the same lines from the stored transcript and each turn's recorded usage
    expect(ends).to_have_count(3)
    expect(ends.first).to_contain_text("1,200 tokens (1,000 in, 200 out) · $0.25")
    expect(ends.nth(1)).to_contain_text("· $0.25")
    assert web.fits() == []


@needs_browser
def test_what_happened_is_said_in_words(web):
    from playwright.sync_api import expect
    page = web.page
    session = web.session("in words")
    web.open(f"/sessions/{session['id']}")
    web.send("[hold g1] [plan] [tool Read notes.txt] long")
    expect(web.agent_text().last).to_contain_text("holding g1")
    page.get_by_role("button", name="Stop generation").click()
    expect(page.locator("#transcript .marker").last).to_have_text("You stopped the answer")
    expect(page.locator("#transcript .turn-end").last).to_contain_text("Answer stopped before the end")

    web.send("[permission edit] please")  # a permission, answered from its button, reachable at any width
    allow = page.get_by_role("group", name="Permission options").get_by_role("button", name="Allow once")
    assert web.on_screen(allow)
    allow.click()
    expect(web.agent_text().last).to_have_text("permission granted: allow-once echo: please")
    expect(page.locator(".permission .decision")).to_have_text("Allow once (user)")

    page.get_by_role("group", name="Session actions").get_by_role("button", name="Stop", exact=True).click()
    expect(page.locator("#transcript .marker").last).to_have_text("Session stopped by you")
    text = page.locator("#transcript").text_content()
    assert INTERNAL.findall(text) == [], text
    for side in ("#health", "#runtime"):
        assert INTERNAL.findall(page.locator(side).text_content()) == []
    assert web.fits() == []
