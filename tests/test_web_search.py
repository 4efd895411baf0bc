"""The page's search box (issue 26 item 2): a query finds messages across sessions, the matches marked, and a hit
opens its session scrolled to the message found, in real headless Chromium against a real daemon."""

import re

from tests.harness.api import events, wait_for
from tests.harness.web import needs_browser, web_fixture
from tests.test_web import WEB_CONFIG

web = web_fixture(WEB_CONFIG, ("desktop",))


def turn(web, session, message):
    turn_id = web.prompt(session, message)["turn_id"]
    wait_for(lambda: events(web.client, session, turn_id=turn_id, type="done"), what="the turn's end")


@needs_browser
def test_a_search_hit_opens_its_session_at_the_message_found(web):
    from playwright.sync_api import expect
    page = web.page
    other = web.session(name="other")
    turn(web, other, "nothing to see")
    found = web.session(name="found")
    turn(web, found, "the quokka migration plan")
    for number in range(30):
        turn(web, found, f"[chunks 3] filler turn {number}")
    wait_for(lambda: web.client.call("GET", "/api/search", query={"q": "quokka"})[1]["search"]["hits"],
             what="the prompt indexed")
    web.open("/")
    page.get_by_role("searchbox", name="Search every session").fill("quokka")
    page.get_by_role("button", name="Search", exact=True).click()
    hits = page.get_by_role("list", name="Search results").locator("li")
    expect(hits).to_have_count(2)  # the prompt and its echo
    expect(hits.first.locator("mark")).to_have_text("quokka")
    hits.filter(has_text="user").first.get_by_role("link").click()
    expect(page).to_have_url(re.compile(rf"/sessions/{found['id']}\?at=\d+$"))
    hit = page.locator("#transcript .hit")
    expect(hit).to_have_count(1)
    expect(hit).to_contain_text("the quokka migration plan")
    expect(hit).to_be_in_viewport()
    expect(page.locator("#transcript .msg.user").last).not_to_be_in_viewport()  # it scrolled up to the hit


@needs_browser
def test_a_query_the_index_cannot_parse_is_said_plainly(web):
    from playwright.sync_api import expect
    web.open("/")
    web.page.get_by_role("searchbox", name="Search every session").fill('"unbalanced')
    web.page.get_by_role("button", name="Search", exact=True).click()
    expect(web.page.get_by_role("alert")).to_contain_text("not valid FTS5 syntax")
