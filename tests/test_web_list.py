"""The session list in headless Chromium, at a desktop and a phone's width, against the real daemon: the agent
chosen from the configured ones, a new session's own address (bookmarkable, back and forward), the form reset,
each row's runtime, and bulk stop, archive and remove with one result per session, through each session's own
workspace and the page's profile."""

import re

from tests.harness.daemon import DaemonProcess
from tests.harness.web import needs_browser, web_fixture, web_page

CONFIG = '[agents.coder]\nprovider = "reference"\nmodel = "echo-large"\n'


web = web_fixture(CONFIG)


@needs_browser
def test_a_new_session_from_the_configured_agents_has_its_own_address(web):
    from playwright.sync_api import expect
    page = web.page
    web.open()
    agent = page.get_by_label("Agent")
    expect(agent.locator("option")).to_have_text(["coder", "general"])  # GET /api/agents: a list, not a text box
    expect(agent).to_have_value("general")  # the default agent
    page.get_by_label("Workspace path").fill(str(web.workspace))
    page.get_by_label("Name", exact=True).fill("with coder")
    agent.select_option("coder")
    assert web.fits() == []
    page.get_by_role("button", name="New session").click()
    expect(page).to_have_url(re.compile(r"/sessions/sess_\w+$"))
    address = page.url
    expect(page.get_by_role("heading", name="with coder")).to_be_visible()
    assert web.fits() == []

    page.go_back()  # the list again, its form empty for the next session
    row = page.locator("#session-rows tr", has_text="with coder")
    expect(row).to_contain_text("reference / echo-large")  # not run yet: the agent's defaults
    expect(row.locator(".runtime-text")).to_have_attribute("title", "the agent's defaults")
    expect(page.get_by_label("Workspace path")).to_have_value("")
    expect(page.get_by_label("Name", exact=True)).to_have_value("")
    expect(agent).to_have_value("general")
    page.go_forward()
    expect(page.get_by_role("heading", name="with coder")).to_be_visible()
    web.send("hello")
    expect(web.agent_text()).to_have_text(["echo: HELLO"])  # coder's model shouts

    page.goto(address)  # a bookmark: the same session, whatever was open before
    expect(page.get_by_role("heading", name="with coder")).to_be_visible()
    expect(web.agent_text()).to_have_text(["echo: HELLO"])
    page.get_by_role("link", name="Sessions").click()
    expect(row.locator(".runtime-text")).to_have_attribute("title", "running now")
    expect(row).to_contain_text("reference / echo-large")


@needs_browser
def test_bulk_stop_archive_and_remove_report_each_session(web, tmp_path):
    from playwright.sync_api import expect
    page = web.page
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    idle, busy, stopped = web.session("idle one"), web.session("busy one"), web.session("stopped one")
    other = web.client.call("POST", "/api/sessions", {"workspace_path": str(elsewhere), "name": "other place"})[1]["session"]
    web.prompt(idle, "hello")
    web.prompt(busy, "[hold g1] working")
    web.prompt(other, "[hold g2] working too")
    web.client.call("POST", web.path(stopped, "/stop"), {"wait": True})
    web.open()
    rows = page.locator("#session-rows tr")
    expect(rows).to_have_count(4)
    bar = page.get_by_role("group", name="Selection")
    expect(bar.get_by_role("button")).to_have_count(0)  # nothing selected: no actions yet

    for name in ("busy one", "stopped one", "other place"):
        page.get_by_role("checkbox", name=f"Select {name}").check()
    expect(page.locator("#bulk-count")).to_have_text("3 selected")
    expect(bar.get_by_role("button", name="Stop and archive")).to_be_visible()  # some of them run
    assert web.fits() == [] and web.on_screen(bar.get_by_role("button", name="Remove"))

    bar.get_by_role("button", name="Stop and archive").click()
    results = page.get_by_role("status", name="Bulk results")
    expect(results.locator("li")).to_have_count(3)
    expect(results).to_contain_text("Archive: 3 done")
    expect(results.locator("li", has_text="busy one")).to_contain_text("stopped and archived")
    expect(results.locator("li", has_text="stopped one")).to_contain_text(": archived")
    expect(results.locator("li", has_text="other place")).to_contain_text("stopped and archived")
    expect(rows).to_have_count(1)  # archived ones leave the default list
    expect(page.locator("#list-count")).to_have_text("1 session")
    for session in (busy, stopped, other):
        read = web.client.call("GET", f"/api/sessions/{session['id']}")[1]["session"]
        assert (read["state"], read["archived"]) == ("stopped", True)
    assert web.fits() == []

    # One request that fails refuses only its own session; it stays selected to try again.
    page.get_by_label("Archived").select_option("include")
    expect(rows).to_have_count(4)
    expect(page.locator("#list-count")).to_have_text("4 sessions")
    page.get_by_role("checkbox", name="Select idle one").check()
    page.get_by_role("checkbox", name="Select busy one").check()
    blocked = f"**/sessions/{idle['id']}/stop*"
    page.route(blocked, lambda route: route.abort())  # the network drops that one request
    bar.get_by_role("button", name="Stop", exact=True).click()
    expect(results).to_contain_text("Stop: 0 of 1 done, 1 refused")  # only running sessions are stopped
    expect(results.locator("li.bad", has_text="idle one")).to_be_visible()
    expect(page.locator("#bulk-count")).to_have_text("2 selected")
    page.unroute(blocked)
    bar.get_by_role("button", name="Stop", exact=True).click()
    expect(results).to_contain_text("Stop: 1 done")
    expect(results.locator("li", has_text="idle one")).to_contain_text("stopping")

    page.get_by_role("checkbox", name="Select all sessions").check()
    expect(page.locator("#bulk-count")).to_have_text("4 selected")
    bar.get_by_role("button", name="Remove").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Remove 4 sessions?")
    dialog.get_by_role("button", name="Remove sessions").click()
    expect(results).to_contain_text("Remove: 4 done")
    expect(page.locator("#session-rows")).to_have_text("No sessions match.")
    assert web.client.call("GET", "/api/sessions?archive=include")[1]["sessions"] == []
    web.release("g1")
    web.release("g2")


@needs_browser
def test_bulk_actions_reach_the_pages_profile(home, workspace, chromium):
    from playwright.sync_api import expect
    profile = DaemonProcess(home / "profiles" / "work").start()
    try:
        with web_page(chromium, home, workspace, viewport="phone") as web:
            work = web.client.__class__(profile.socket_url)
            made = [work.call("POST", "/api/sessions", {"workspace_path": str(workspace), "name": f"work {n}"})[1]
                    ["session"] for n in (1, 2)]
            for session in made:
                work.call("POST", web.path(session, "/prompt"), {"message": "hello"})
            web.session("main one")
            web.page.goto(web.daemon.page_url("/?profile=work"))
            page = web.page
            expect(page.locator("#profile")).to_have_text("profile work")
            expect(page.locator("#session-rows tr")).to_have_count(2)  # the profile's sessions, not the main one's
            page.get_by_role("checkbox", name="Select all sessions").check()
            page.get_by_role("group", name="Selection").get_by_role("button", name="Stop", exact=True).click()
            expect(page.get_by_role("status", name="Bulk results")).to_contain_text("Stop: 2 done")
            for session in made:
                read = work.call("GET", f"/api/sessions/{session['id']}")[1]["session"]
                assert read["state"] in ("stopping", "stopped")
            page.get_by_role("link", name="work 1").click()
            expect(page).to_have_url(re.compile(r"/sessions/sess_\w+\?profile=work$"))
            expect(page.get_by_role("heading", name="work 1")).to_be_visible()
            assert web.fits() == []
    finally:
        profile.stop()
