"""The page in headless Chromium against a real daemon, for the browser tests: a logged-in page of a given size,
helpers a test drives it with, and the checks every width must pass (nothing sticks out sideways).

A browser test module says what daemon it needs and gets its `web` fixture from web_fixture:

    web = web_fixture(CONFIG)                  # each test at a desktop's and a phone's width
    web = web_fixture(CONFIG, ("desktop",))    # one width

(the module-scoped `chromium` fixture it uses is in tests/harness/fixtures.py), and marks its tests
needs_browser, which skips them with the reason where Playwright or Chromium is missing.
"""

import contextlib
import json
import sys

import pytest

from compozy.cli.client import Client
from tests.harness import browser
from tests.harness.daemon import DaemonProcess

WAIT_MS = 30_000
VIEWPORTS = {"desktop": {"width": 1280, "height": 860}, "phone": {"width": 390, "height": 844}}
BROWSER_MISSING = browser.unavailable()
needs_browser = pytest.mark.skipif(BROWSER_MISSING is not None, reason=str(BROWSER_MISSING))
REFERENCE = f'command = [{json.dumps(sys.executable)}, "-m", "compozy.agents.reference"]\n'

# Every visible element that is not inside a box that clips or scrolls it must lie within the viewport's width,
# and the document itself must not scroll sideways: nothing on the page needs a sideways scroll to be seen.
STICKING_OUT = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  const wide = document.scrollingElement.scrollWidth;
  if (wide > width) out.push(`the document is ${wide}px wide`);
  const clipped = (node) => {
    for (let up = node.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") return true;
    }
    return false;
  };
  for (const node of document.body.querySelectorAll("*")) {
    const rect = node.getBoundingClientRect();
    if (!rect.width || !rect.height || node.closest("dialog:not([open])") || clipped(node)) continue;
    if (rect.right > width + 1 || rect.left < -1) out.push(`${node.tagName.toLowerCase()}#${node.id}.${node.className} `
      + `spans ${Math.round(rect.left)}..${Math.round(rect.right)} of ${width}`);
  }
  for (const box of document.querySelectorAll("main, .transcript, .side, .session-body, .alert")) {
    if (box.getClientRects().length && box.scrollWidth > box.clientWidth + 1) {
      out.push(`${box.tagName.toLowerCase()}.${box.className} scrolls sideways (${box.scrollWidth} > ${box.clientWidth})`);
    }
  }
  return out;
}"""


class Web:
    def __init__(self, daemon, page, workspace):
        self.daemon, self.page, self.workspace = daemon, page, workspace
        self.client = Client(daemon.socket_url)

    @property
    def narrow(self):
        return self.page.viewport_size["width"] < 800

    def session(self, name="web test", **fields):
        _, document = self.client.call("POST", "/api/sessions", {"workspace_path": str(self.workspace), "name": name,
                                                                 **fields})
        return document["session"]

    def path(self, session, suffix=""):
        return f"/api/workspaces/{session['workspace_id']}/sessions/{session['id']}{suffix}"

    def prompt(self, session, message, **fields):
        return self.client.call("POST", self.path(session, "/prompt"), {"message": message, **fields})[1]["prompt"]

    def open(self, path="/"):
        """Go to path logged in (through ?token=, which the daemon turns into its cookie)."""
        self.page.goto(self.daemon.page_url(path))
        assert self.page.url == self.daemon.http_url + path  # the token left the address bar

    def send(self, text, button="Send"):
        from playwright.sync_api import expect
        box = self.page.get_by_role("textbox", name="Message")
        box.fill(text)
        self.page.get_by_role("button", name=button, exact=True).click()
        expect(box).to_have_value("")  # the daemon took it

    def release(self, gate):
        gates = self.workspace / ".compozy-gates"
        gates.mkdir(exist_ok=True)
        (gates / gate).touch()

    def agent_text(self):
        return self.page.locator("#transcript .msg.agent .body")

    def badges(self):
        return self.page.locator("#session-badges")

    def fits(self):
        """Nothing on the page sticks out sideways (an empty list), whatever the width."""
        return self.page.evaluate(STICKING_OUT)

    @staticmethod
    def opacity(locator):
        """How opaque the element is drawn (its own opacity times its ancestors'): 1 looks usable, a faded
        control looks disabled."""
        return locator.evaluate("""(node) => {
          let shown = 1;
          for (let at = node; at; at = at.parentElement) shown *= Number(getComputedStyle(at).opacity);
          return shown;
        }""")

    def on_screen(self, locator):
        """The element is scrolled to and lies wholly inside the viewport."""
        locator.scroll_into_view_if_needed()
        box = locator.bounding_box()
        size = self.page.viewport_size
        return box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= size["width"] + 0.5 \
            and box["y"] + box["height"] <= size["height"] + 0.5


@contextlib.contextmanager
def web_page(chromium, home, workspace, config="", viewport="desktop"):
    """A daemon on home with config.toml, and a logged-out page of that size (Web.open logs in)."""
    if config:
        (home / "config.toml").write_text(config)
    daemon = DaemonProcess(home).start()
    context = chromium.new_context(viewport=VIEWPORTS[viewport])
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield Web(daemon, page, workspace)
    finally:
        context.close()
        daemon.stop()
    assert errors == []


def web_fixture(config="", viewports=tuple(sorted(VIEWPORTS))):
    """A `web` fixture: a daemon on the test's home with config.toml `config` and a page (a Web), made once for
    each of `viewports` (a test using it runs at every one; with one viewport the test's ID names none)."""
    @pytest.fixture(params=list(viewports) if len(viewports) > 1 else None)
    def web(request, home, workspace, chromium):
        viewport = getattr(request, "param", viewports[0])
        with web_page(chromium, home, workspace, config, viewport) as page:
            yield page
    return web
