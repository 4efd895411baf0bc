"""The inbox and usage on the page, in headless Chromium against a real daemon and the reference agent: the
header's count on every screen, answering a permission from the inbox (which clears only its item), a
session's usage totals in its side panel and the 30-day chart by agent."""

from tests.harness.web import needs_browser, web_fixture

HELD = "[permission edit no/reject_once/Deny | yes/allow_once/Allow] {}"

web = web_fixture('[permissions]\nmode = "approve-reads"\n')


@needs_browser
def test_the_count_shows_on_every_screen_and_an_answer_from_the_inbox_clears_only_its_item(web):
    from playwright.sync_api import expect
    page = web.page
    first, second = web.session("first"), web.session("second")
    web.open()
    count = page.locator("#inbox-count")
    expect(count).to_be_hidden()
    web.prompt(first, HELD.format("one"))
    web.prompt(second, HELD.format("two"))
    expect(count).to_have_text("2")
    page.get_by_role("link", name="Settings").click()
    expect(count).to_have_text("2")
    page.get_by_role("link", name="Inbox").click()
    items = page.get_by_role("list", name="Items that need you").get_by_role("listitem")
    expect(items).to_have_count(2)
    mine = items.filter(has_text="first")
    expect(mine).to_contain_text("the agent asks permission")
    mine.get_by_role("button", name="Allow").click()
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("second")
    expect(count).to_have_text("1")
    web.open(f"/sessions/{first['id']}")
    expect(web.agent_text()).to_have_text(["permission granted: yes echo: one"])
    expect(count).to_have_text("1")  # the session screen shows the count too
    # Answered elsewhere (the session's own buttons), the last item leaves the inbox as well.
    web.open(f"/sessions/{second['id']}")
    page.get_by_role("group", name="Permission options").get_by_role("button", name="Deny").click()
    expect(count).to_be_hidden()
    page.get_by_role("link", name="Inbox").click()
    expect(page.locator("#inbox-summary")).to_have_text("Nothing needs you.")
    assert web.fits() == []


@needs_browser
def test_a_sessions_totals_and_the_thirty_day_chart_by_agent(web):
    from playwright.sync_api import expect
    page = web.page
    session = web.session("spender")
    web.open(f"/sessions/{session['id']}")
    web.send("[usage] spend")
    expect(web.agent_text()).to_have_text(["echo: spend"])
    expect(page.locator("#session-usage")).to_have_text("1,200 tokens in 1 turn · $0.25")
    page.get_by_role("link", name="Usage").click()
    chart = page.get_by_role("img", name="Tokens per day over the last 30 days, by agent; the busiest day: 1,200")
    expect(chart).to_be_visible()
    expect(chart.locator("rect[data-agent='general']")).to_have_count(1)
    row = page.locator("#usage-agents tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("general")
    expect(row).to_contain_text("1,200")
    expect(page.locator("#usage-total")).to_contain_text("Last 30 days: 1,200 tokens in 1 turn")
    assert web.fits() == []
