"""The web page against the real daemon and the reference agent.

The headers and assets are checked over HTTP and the socket without a browser. Everything else runs
in headless Chromium from the system's packages, driven by Playwright; where either is missing those
tests are skipped with the reason.
"""

import http.client
import json
import re
import sys
from urllib.parse import urlsplit

from compozy.cli.client import Client
from compozy.paths import UnixConnection
from tests.harness.web import REFERENCE, needs_browser, web_fixture


def fetch(url, path, headers=None):
    parts = urlsplit(url)
    connection = (UnixConnection(parts.path, 10) if parts.scheme == "unix"
                  else http.client.HTTPConnection(parts.hostname, parts.port, timeout=10))
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_the_page_and_its_assets_are_served_on_both_surfaces_under_a_strict_policy(daemon):
    for url in (daemon.http_url, daemon.socket_url):
        auth = daemon.auth_headers if url.startswith("http:") else {}  # the socket asks for no secret
        for path in ("/", "/sessions/sess_01ARZ3NDEKTSV4RRFFQ69G5FAV"):
            status, headers, body = fetch(url, path, auth)
            assert status == 200 and headers["Content-Type"].startswith("text/html")
            assert "default-src 'none'" in headers["Content-Security-Policy"]
            assert "script-src 'self'" in headers["Content-Security-Policy"]
            assert headers["X-Content-Type-Options"] == "nosniff"
            assert b'aria-label="Message"' in body
        page = body.decode()
        pending, referenced = re.findall(r'"/assets/([\w.-]+)"', page), set()
        while pending:  # the page's files, then every module they import
            name = pending.pop()
            status, headers, body = fetch(url, f"/assets/{name}", auth)
            assert status == 200, name
            assert headers["X-Content-Type-Options"] == "nosniff"
            referenced.add(name)
            pending += set(re.findall(r'from "\./([\w.-]+)"', body.decode())) - referenced
        assert {"app.js", "session.js", "derive.js", "transcript.js", "markdown.js", "dom.js", "style.css"} <= referenced
        status, _, body = fetch(url, "/assets/missing.js", auth)
        assert status == 404 and json.loads(body)["code"] == "endpoint_not_found"


def test_the_page_is_refused_to_a_foreign_host_and_stays_out_of_the_api_description(daemon):
    status, _, body = fetch(daemon.http_url, "/", {"Host": "attacker.example"})
    assert status == 403 and json.loads(body)["code"] == "host_not_allowed"
    _, document = daemon.client().call("GET", "/api/openapi.json")
    assert not [path for path in document["paths"] if not path.startswith("/api/")]


# -- in the browser --------------------------------------------------------------------------------

LOCKED = f"{REFERENCE}env = {{COMPOZY_REFERENCE_REQUIRE_AUTH = \"1\", COMPOZY_REFERENCE_AUTH_REFUSE = \"1\"}}\n"
WEB_CONFIG = f'[permissions]\nmode = "approve-reads"\n\n[providers.locked]\n{LOCKED}\n[agents.locked]\nprovider = "locked"\n'


# A daemon that asks before writes (and knows an agent that needs a login), a desktop page, and helpers.
web = web_fixture(WEB_CONFIG, ("desktop",))


@needs_browser
def test_create_a_session_prompt_and_watch_the_answer_stream_in(web):
    from playwright.sync_api import expect
    page = web.page
    web.open()
    page.get_by_label("Workspace path").fill("not/absolute")
    page.get_by_role("button", name="New session").click()
    expect(page.get_by_role("alert")).to_contain_text("invalid_request")
    page.get_by_label("Workspace path").fill(str(web.workspace))
    page.get_by_label("Name", exact=True).fill("first session")
    page.get_by_role("button", name="New session").click()
    expect(page).to_have_url(re.compile(r"/sessions/sess_\w+$"))
    expect(page.get_by_role("heading", name="first session")).to_be_visible()

    message = page.get_by_role("textbox", name="Message")
    message.fill("[chunks 2] [hold g1] hello **world**")
    message.press("Enter")
    expect(web.agent_text().last).to_have_text("chunk 1 chunk 2 holding g1")
    expect(page.get_by_role("status").filter(has_text="Working for")).to_be_visible()
    web.release("g1")
    expect(web.agent_text().last).to_have_text("chunk 1 chunk 2 holding g1 echo: hello world")
    expect(web.agent_text().last.locator("strong")).to_have_text("world")
    expect(page.locator("#working")).to_have_text("")

    message.type("line one")
    message.press("Shift+Enter")
    message.type("line two")
    expect(message).to_have_value("line one\nline two")
    message.press("Enter")
    expect(page.locator("#transcript .msg.user")).to_have_count(2)
    assert page.locator("#transcript .msg.user .body").last.text_content() == "line one\nline two"
    expect(message).to_have_value("")

    page.get_by_role("link", name="Sessions").click()
    row = page.locator("tr", has_text="first session")
    expect(row).to_contain_text("active")
    expect(row).to_contain_text("general")


@needs_browser
def test_queue_while_busy_then_edit_and_cancel_queued_input(web):
    from playwright.sync_api import expect
    page = web.page
    web.open(f"/sessions/{web.session()['id']}")
    web.send("[hold g1] first")
    expect(page.get_by_role("button", name="Stop generation")).to_be_visible()
    web.send("second", button="Queue")
    web.send("third", button="Queue")
    queue = page.locator("#queue li")
    expect(queue).to_have_count(2)
    page.get_by_role("button", name="Edit queued message 1").click()
    page.get_by_role("textbox", name="Queued message 1").fill("second, edited")
    page.get_by_role("button", name="Save").click()
    expect(queue.first).to_contain_text("second, edited")
    page.get_by_role("button", name="Cancel queued message 2").click()
    expect(queue).to_have_count(1)

    web.release("g1")
    # the queue markers came while the turn was held, between its chunks
    expect(web.agent_text()).to_have_text(["holding g1", "echo: first", "echo: second, edited"])
    expect(page.locator("#transcript .msg.user .body")).to_have_text(["[hold g1] first", "second, edited"])
    expect(page.locator("#transcript .marker")).to_have_text([
        "queued: second", "queued: third", "queued input edited: second, edited", "queued input canceled: third",
        "queued input started: second, edited"])
    expect(queue).to_have_text(["Nothing queued."])
    expect(page.get_by_role("button", name="Stop generation")).to_be_hidden()


@needs_browser
def test_a_held_file_write_is_answered_from_its_buttons(web):
    from playwright.sync_api import expect
    page = web.page
    web.open(f"/sessions/{web.session()['id']}")
    web.send("[write notes.txt hello] done")
    options = page.get_by_role("group", name="Permission options")
    expect(options.get_by_role("button")).to_have_text(["Allow", "Reject"])  # the daemon's own two
    expect(page.locator("#working")).to_contain_text("waiting for permission")
    options.get_by_role("button", name="Allow").click()
    expect(web.agent_text().last).to_have_text("wrote notes.txt echo: done")
    expect(page.locator(".permission .decision")).to_have_text("Allow (user)")
    assert (web.workspace / "notes.txt").read_text() == "hello"


@needs_browser
def test_a_permission_request_shows_the_agents_own_options_and_answers_with_the_one_clicked(web):
    from playwright.sync_api import expect
    page = web.page
    session = web.session()
    web.open(f"/sessions/{session['id']}")
    # Only "Allow" (allow_once) and "Reject always", then a custom name, a kind ACP does not know and no name.
    web.send("[permission edit ok/allow_once/Allow | never/reject_always/Reject always] "
             "[permission execute go/allow_always/Go ahead, always | plan/switch_mode/Keep planning | bare] both")
    options = page.get_by_role("group", name="Permission options")
    expect(options.get_by_role("button")).to_have_text(["Allow", "Reject always"])
    options.get_by_role("button", name="Reject always").click()
    expect(page.locator(".permission .decision").first).to_have_text("Reject always (user)")
    expect(options.get_by_role("button")).to_have_text(["Go ahead, always", "Keep planning", "bare"])
    options.get_by_role("button", name="Keep planning").click()
    expect(web.agent_text()).to_have_text(["permission denied: never", "permission denied: plan echo: both"])
    expect(page.locator(".permission .decision")).to_have_text(["Reject always (user)", "Keep planning (user)"])
    _, document = web.client.call("GET", f"/api/workspaces/{session['workspace_id']}/sessions/{session['id']}/events",
                                  query={"type": "permission"})
    chosen = [e["content"]["option"]["option_id"] for e in document["events"] if e["content"].get("decision")]
    assert chosen == ["never", "plan"]
    # Reopened, the page shows what was answered, not buttons.
    page.reload()
    expect(page.locator(".permission .decision")).to_have_text(["Reject always (user)", "Keep planning (user)"])
    expect(page.get_by_role("group", name="Permission options")).to_have_count(0)


@needs_browser
def test_stop_archive_unarchive_and_remove(web):
    from playwright.sync_api import expect
    page = web.page
    session = web.session("lifecycle")
    web.open(f"/sessions/{session['id']}")
    web.send("[hold g1] wait")
    expect(page.get_by_role("button", name="Stop and archive")).to_be_visible()
    page.get_by_role("button", name="Stop", exact=True).click()
    expect(web.badges()).to_have_text("stopped")
    expect(page.locator("#transcript")).to_contain_text("Session stopped")

    web.send("awake again")  # a stopped session takes a prompt and wakes
    expect(web.agent_text().last).to_have_text("echo: awake again")
    page.get_by_role("button", name="Stop and archive").click()
    expect(web.badges()).to_have_text("stoppedarchived")
    expect(page.get_by_role("textbox", name="Message")).to_be_hidden()

    page.get_by_role("link", name="Sessions").click()
    expect(page.locator("tr", has_text="lifecycle")).to_have_count(0)
    page.get_by_label("Archived").select_option("only")
    page.get_by_role("link", name="lifecycle").click()
    page.get_by_role("button", name="Unarchive").click()
    expect(page.get_by_role("button", name="Archive", exact=True)).to_be_visible()
    expect(page.get_by_role("textbox", name="Message")).to_be_visible()

    page.get_by_role("button", name="Remove").click()
    page.get_by_role("dialog").get_by_role("button", name="Remove session").click()
    expect(page).to_have_url(re.compile(r"/$"))
    page.get_by_label("Archived").select_option("include")
    expect(page.locator("#session-rows")).to_have_text("No sessions match.")


@needs_browser
def test_hostile_names_and_agent_text_stay_text(web):
    from playwright.sync_api import expect
    page = web.page
    name = "<img src=x onerror=window.pwned=1>evil"  # control characters and bidi overrides are refused at create
    session = web.session(name)
    web.open()
    shown = name
    expect(page.get_by_role("link", name=shown)).to_be_visible()
    page.get_by_role("link", name=shown).click()
    expect(page.get_by_role("heading", name=shown)).to_be_visible()
    web.send("<script>window.pwned=1</script> [x](javascript:window.pwned=1) [docs](https://example.com/d) "
             "<img src=x onerror=window.pwned=1> `<b>code</b>`")
    answer = web.agent_text().last
    expect(answer).to_contain_text("echo: <script>window.pwned=1</script> [x](javascript:window.pwned=1) docs")
    expect(answer.get_by_role("link")).to_have_attribute("href", "https://example.com/d")
    expect(answer.locator("code")).to_have_text("<b>code</b>")
    assert page.locator("body img, body script, #transcript b").count() == 0
    assert page.evaluate("window.pwned") is None
    assert session["name"] == name


@needs_browser
def test_two_streams_at_most_and_the_transcript_resumes_after_a_restart(web):
    from playwright.sync_api import expect
    page = web.page
    first, second = web.session("one"), web.session("two")
    open_streams = set()
    page.on("request", lambda r: "/stream" in r.url and open_streams.add(r))
    page.on("requestfailed", lambda r: open_streams.discard(r))
    page.on("requestfinished", lambda r: open_streams.discard(r))
    web.open()
    for name in ("one", "two", "one"):
        page.get_by_role("link", name=name).click()
        expect(page.get_by_role("heading", name=name)).to_be_visible()
        page.wait_for_timeout(300)
        assert len(open_streams) <= 2
        page.go_back()
        expect(page.get_by_role("link", name=name)).to_be_visible()
    page.get_by_role("link", name="one").click()
    web.send("before the restart")
    expect(web.agent_text()).to_have_text(["echo: before the restart"])

    web.daemon.http = urlsplit(web.daemon.http_url).netloc  # the page's origin must stay the same
    web.daemon.restart()
    web.client = Client(web.daemon.socket_url)
    path = f"/api/workspaces/{first['workspace_id']}/sessions/{first['id']}/prompt"
    web.client.call("POST", path, {"message": "after the restart"})
    expect(web.agent_text()).to_have_text(["echo: before the restart", "echo: after the restart"])
    expect(page.locator("#transcript .msg.user")).to_have_count(2)
    assert len(open_streams) <= 2 and second["id"] not in " ".join(r.url for r in open_streams)


@needs_browser
def test_stop_generation_interrupt_and_runtime_selection(web):
    from playwright.sync_api import expect
    page = web.page
    web.open(f"/sessions/{web.session()['id']}")
    web.send("[hold g1] long")
    page.get_by_role("button", name="Stop generation").click()
    expect(page.locator("#transcript .turn-end").last).to_contain_text("Answer stopped before the end")
    expect(page.locator("#transcript .marker").last).to_have_text("You stopped the answer")
    web.send("[hold g2] slow")
    web.send("instead", button="Interrupt")
    expect(web.agent_text().last).to_have_text("echo: instead")

    runtime = page.locator("#runtime")
    expect(runtime).to_contain_text("none (revision 0)")
    page.get_by_role("textbox", name="Model").fill("echo-large")
    page.get_by_role("button", name="Select runtime").click()
    expect(runtime).to_contain_text("echo-large (revision 1)")
    web.send("shout")
    expect(web.agent_text().last).to_have_text("echo: SHOUT")
    expect(runtime).to_contain_text("reference / echo-large")
    page.get_by_role("button", name="Clear selection").click()
    expect(runtime).to_contain_text("none (revision 2)")


@needs_browser
def test_rewind_from_a_message_reloads_the_transcript_and_puts_its_text_in_the_composer(web):
    from playwright.sync_api import expect
    page = web.page
    web.open(f"/sessions/{web.session('rewind')['id']}")
    web.send("first")
    expect(web.agent_text()).to_have_text(["echo: first"])
    web.send("second")
    expect(web.agent_text()).to_have_text(["echo: first", "echo: second"])
    box = page.get_by_role("textbox", name="Message")
    rewind = page.locator("#transcript .msg.user").nth(1).get_by_role("button", name="Rewind to before this message")
    box.fill("a draft of my own")
    rewind.click()  # it needs an empty composer: nothing is cut
    expect(page.get_by_role("alert")).to_contain_text("Empty the composer first")
    expect(page.locator("#transcript .msg.user")).to_have_count(2)
    box.fill("")
    rewind.click()
    confirm = page.get_by_role("dialog")
    expect(confirm).to_contain_text("file changes, tool effects and external actions are not undone")
    confirm.get_by_role("button", name="Rewind", exact=True).click()
    expect(page.locator("#transcript .msg.user .body")).to_have_text(["first"])
    expect(web.agent_text()).to_have_text(["echo: first"])
    expect(box).to_have_value("second")
    box.fill("[recall] second, again")
    box.press("Enter")
    expect(web.agent_text()).to_have_text(["echo: first", "[context replayed: 2 messages] history: first"])


@needs_browser
def test_fork_from_a_message_and_continue_with_another_agent_after_the_preview(web):
    from playwright.sync_api import expect
    page = web.page
    source = web.session("source")
    web.open(f"/sessions/{source['id']}")
    web.send("first")
    expect(web.agent_text()).to_have_text(["echo: first"])
    web.send("second")
    expect(web.agent_text()).to_have_text(["echo: first", "echo: second"])

    page.locator("#transcript .msg.user").first.get_by_role("button", name="Fork from this message").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Carries 2 messages")
    dialog.get_by_label("Name").fill("forked")
    dialog.get_by_role("button", name="Fork", exact=True).click()
    expect(page.get_by_role("heading", name="forked")).to_be_visible()
    expect(page.locator("#lineage")).to_contain_text(f"fork · from {source['id']} · through ")
    web.send("[recall] other way")
    expect(web.agent_text()).to_have_text(["[context replayed: 2 messages] history: first"])

    page.locator("#lineage").get_by_role("link", name=source["id"]).first.click()  # its parent (and root)
    expect(page.get_by_role("heading", name="source")).to_be_visible()
    page.get_by_role("button", name="Continue…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("Carries 4 messages")
    expect(dialog.get_by_label("Agent").locator("option")).to_have_text(["general", "locked"])  # the configured ones
    dialog.get_by_label("Agent").select_option("locked")
    dialog.get_by_label("Message").fill("carry on")
    dialog.get_by_role("button", name="Continue", exact=True).click()
    expect(dialog).to_contain_text("provider_auth_failure")
    opener = dialog.get_by_role("link", name="Open new session")
    expect(opener).to_be_visible()
    web.prompt(source, "moved on")  # the source moves on: the dialog's fences are stale now
    expect(web.agent_text()).to_have_text(["echo: first", "echo: second", "echo: moved on"])
    dialog.get_by_label("Message").fill("carry on, edited")  # an edited request, refused again: the new session stays offered
    dialog.get_by_role("button", name="Continue", exact=True).click()
    expect(dialog).to_contain_text("session_fence_conflict")
    expect(opener).to_be_visible()
    dialog.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Continue…").click()
    expect(dialog).to_contain_text("Carries 6 messages")
    expect(dialog.get_by_label("Agent")).to_have_value("general")  # the default agent
    dialog.get_by_label("Message").fill("carry on")
    dialog.get_by_role("button", name="Continue", exact=True).click()
    expect(page.locator("#lineage")).to_contain_text(f"continue · from {source['id']} · general · through turn ")
    expect(web.agent_text()).to_have_text(["[context replayed: 6 messages] echo: carry on"])


@needs_browser
def test_a_native_fork_shows_the_conversation_it_carries_before_its_first_message(web):
    from playwright.sync_api import expect
    from tests.harness.cli import run_cli
    from tests.test_daemon import wait_for
    config = web.daemon.home / "config.toml"
    config.write_text(config.read_text() + f'\n[providers.forky]\ncommand = [{json.dumps(sys.executable)}, "-m", '
                      '"compozy.agents.reference"]\nenv = {COMPOZY_REFERENCE_FORK = "1"}\n\n'
                      '[agents.forky]\nprovider = "forky"\n')
    assert run_cli(web.daemon.home, "daemon", "reload").returncode == 0
    _, created = web.client.call("POST", "/api/sessions", {"workspace_path": str(web.workspace), "agent_name": "forky",
                                                            "name": "source"})
    source = created["session"]
    path = f"/api/workspaces/{source['workspace_id']}/sessions/{source['id']}"
    web.client.call("POST", path + "/prompt", {"message": "first"})
    wait_for(lambda: web.client.call("GET", path + "/events?type=done")[1]["events"], what="the source's turn")
    _, forked = web.client.call("POST", path + "/fork", {"idempotency_key": "n1", "name": "clone"})
    assert forked["derivation"]["seed"] == "native_fork"
    web.open(f"/sessions/{forked['session']['id']}")
    carried = web.page.locator("#transcript .carried")
    expect(carried.locator(".marker")).to_have_text(f"Carried from {source['id']}")
    expect(carried.locator(".msg .body")).to_have_text(["first", "echo: first"])
    web.send("[recall] natively")  # the clone knows it once, from the agent's own copy
    expect(web.page.locator("#transcript > .msg.agent .body")).to_have_text(["history: first"])
