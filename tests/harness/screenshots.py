"""Regenerate the web page screenshots in docs/: `python3 -m tests.harness.screenshots docs`.

A throwaway daemon and the reference agent produce a real transcript (a finished turn with a
thought, a plan, a tool call, Markdown and its usage; then a turn waiting for a permission, with a prompt
queued behind it), and headless Chromium takes the list view (two sessions selected), the session view, the
continue dialog, the usage view (its 30-day chart with its scale and day labels), the inbox (that permission and
an agent's question with a form of several fields) and the session view at a phone's width.
"""

import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import expect, sync_playwright

from compozy.cli.client import Client
from tests.harness import browser
from tests.harness.daemon import DaemonProcess

ANSWER = ("[usage] [thought The tokenizer and the parser share one loop; splitting them first.] [plan] [tool Read parser.py] "
          "Here is the plan:\n\n## Steps\n1. Split `tokenize()` into **two** passes\n2. Keep the *old* API working\n\n"
          "```python\ndef parse(text):\n    return Parser(tokenize(text)).run()\n```\n"
          "Details in [the notes](https://example.com/notes).")


def prompt(client, session, message, **extra):
    path = f"/api/workspaces/{session['workspace_id']}/sessions/{session['id']}/prompt"
    return client.call("POST", path, {"message": message, **extra})[1]["prompt"]


def populate(client, root):
    def new(folder, name):
        (root / folder).mkdir(exist_ok=True)
        body = {"workspace_path": str(root / folder), "name": name}
        return client.call("POST", "/api/sessions", body)[1]["session"]
    done = new("docs-site", "Proofread the install guide")
    prompt(client, done, "Check the install guide for broken links")
    stopped = new("docs-site", "Draft the changelog")
    prompt(client, stopped, "Draft the changelog for 0.2")
    client.call("POST", f"/api/workspaces/{stopped['workspace_id']}/sessions/{stopped['id']}/stop", {"wait": True})
    main = new("parser", "Refactor the parser")
    prompt(client, main, ANSWER)
    time.sleep(0.5)
    prompt(client, main, "[write parser.py split] Now apply step 1")
    prompt(client, main, "then run the test suite", mode="queue")
    release = new("docs-site", "Cut the release")
    prompt(client, release, "[ask-form version:string=0.2.0,build:integer=1,publish:boolean=true "
                            "Which release should I cut?] go")
    return main


def main(target):
    expect.set_options(timeout=30_000)
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp)
        (root / "home").mkdir()
        (root / "home" / "config.toml").write_text('[permissions]\nmode = "approve-reads"\n\n'
                                                   '[agents.claude-code]\nprovider = "reference"\n')
        daemon = DaemonProcess(root / "home").start()
        try:
            session = populate(Client(daemon.socket_url), root)
            with sync_playwright() as playwright:
                chromium = browser.launch(playwright)
                page = chromium.new_page(viewport={"width": 1280, "height": 400})
                page.goto(daemon.page_url("/"))
                expect(page.locator("#session-rows tr")).to_have_count(4)
                for name in ("Proofread the install guide", "Draft the changelog"):
                    page.get_by_role("checkbox", name=f"Select {name}").check()
                page.screenshot(path=str(Path(target) / "web-list.png"))
                page.set_viewport_size({"width": 1280, "height": 900})
                page.goto(f"{daemon.http_url}/sessions/{session['id']}")
                expect(page.get_by_role("group", name="Permission options")).to_be_visible()
                expect(page.locator("#queue li")).to_contain_text("then run the test suite")
                expect(page.locator("#transcript .turn-end").first).to_contain_text("$0.25")  # the recorded usage
                page.screenshot(path=str(Path(target) / "web-session.png"))
                page.get_by_role("button", name="Continue…").click()
                dialog = page.get_by_role("dialog")
                expect(dialog).to_contain_text("A running turn is left out")
                dialog.get_by_label("Agent").select_option("claude-code")
                dialog.get_by_label("Message").fill("Carry on with step 1; run the tests first.")
                page.screenshot(path=str(Path(target) / "web-continue.png"))
                page.keyboard.press("Escape")
                page.set_viewport_size({"width": 1280, "height": 560})
                page.get_by_role("link", name="Usage").click()
                expect(page.locator("#usage-chart text.day-label").first).to_be_visible()
                page.screenshot(path=str(Path(target) / "web-usage.png"))
                page.set_viewport_size({"width": 1280, "height": 480})
                page.get_by_role("link", name="Inbox").click()
                expect(page.locator("input[name=version]")).to_be_visible()
                page.screenshot(path=str(Path(target) / "web-inbox.png"))
                page.goto(f"{daemon.http_url}/sessions/{session['id']}")
                page.set_viewport_size({"width": 390, "height": 844})
                expect(page.get_by_role("group", name="Permission options")).to_be_visible()
                page.evaluate("document.activeElement.blur()")
                page.locator("#transcript").evaluate("(node) => { node.scrollTop = node.scrollHeight; }")
                page.screenshot(path=str(Path(target) / "web-phone.png"))
                chromium.close()
        finally:
            daemon.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs")
