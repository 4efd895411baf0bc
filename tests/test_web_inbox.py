"""The inbox and usage on the page, in headless Chromium against a real daemon and the reference agent: the
header's count on every screen, answering a permission from the inbox (which clears only its item), a
session's usage totals in its side panel and the 30-day chart by agent."""

from datetime import datetime, timedelta, timezone

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
    # The scale: 0 to the busiest day rounded up (1,200 -> 2,000) in five ticks; a label under every fifth day
    # and today's (UTC), in words a person reads.
    expect(chart.locator("text.scale-label")).to_have_text(["0", "500", "1K", "1.5K", "2K"])
    today = datetime.now(timezone.utc)
    labels = chart.locator("text.day-label")
    expect(labels).to_have_count(7)
    expect(labels.last).to_have_text(f"{today:%b} {today.day}")
    expect(labels.first).to_have_text(f"{today - timedelta(days=29):%b} {(today - timedelta(days=29)).day}")
    bar = chart.locator("rect[data-agent='general']").bounding_box()
    top_tick, bottom_tick = (chart.locator("text.scale-label").nth(i).bounding_box() for i in (4, 0))
    # The bar stands on the baseline and reaches 1,200 of 2,000: 60% of the way to the top tick.
    share = bar["height"] / ((bottom_tick["y"] - top_tick["y"]))
    assert 0.55 < share < 0.65, share
    row = page.locator("#usage-agents tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("general")
    expect(row).to_contain_text("1,200")
    expect(page.locator("#usage-total")).to_contain_text("Last 30 days: 1,200 tokens in 1 turn")
    assert web.fits() == []


@needs_browser
def test_an_agents_question_is_answered_from_the_inbox_and_from_the_session(web):
    from playwright.sync_api import expect
    page = web.page
    session = web.session("asker")
    web.open()
    web.prompt(session, "[ask redis|memcached Which backend?] go")
    count = page.locator("#inbox-count")
    expect(count).to_have_text("1")
    page.get_by_role("link", name="Inbox").click()
    item = page.get_by_role("list", name="Items that need you").get_by_role("listitem")
    expect(item).to_contain_text("the agent asks: Which backend?")
    item.get_by_role("button", name="memcached").click()
    expect(count).to_be_hidden()
    web.open(f"/sessions/{session['id']}")
    expect(web.agent_text()).to_have_text(["answered: memcached echo: go"])
    # A free form: a field per form field, and Answer sends them; the answer shows where the buttons were.
    web.send("[ask - What name?] again")
    asks = page.get_by_role("group", name="Answer options")
    expect(asks).to_be_visible()
    expect(page.locator(".permission").last).to_contain_text("The agent asks: What name?")
    expect(asks.locator("label.form-field")).to_have_text(["Answer"])  # each field's title shows beside it
    asks.get_by_role("textbox", name="Answer").fill("Ada")
    asks.get_by_role("button", name="Answer").click()
    expect(web.agent_text()).to_have_text(["answered: memcached echo: go", "answered: Ada echo: again"])
    expect(page.locator(".permission .decision").last).to_have_text("Ada (user)")
    # The inbox answers a free form too: its item's Answer has the form's field beside it.
    web.send("[ask - Which city?] third")
    expect(count).to_have_text("1")
    page.get_by_role("link", name="Inbox").click()
    expect(item).to_contain_text("the agent asks: Which city?")
    expect(item.locator("label.form-field")).to_have_text(["Answer"])
    item.get_by_role("textbox", name="Answer").fill("Lyon")
    item.get_by_role("button", name="Answer").click()
    expect(count).to_be_hidden()
    web.open(f"/sessions/{session['id']}")
    expect(web.agent_text().last).to_have_text("answered: Lyon echo: third")
    assert web.fits() == []
