"""The settings view in headless Chromium, at a desktop and a phone's width: "Pause idle agents after" and the
others are read from the daemon, a refused value says why and changes nothing, a saved one is written into
config.toml (its other lines kept) and applied at once."""

from tests.harness.web import needs_browser, web_fixture

CONFIG = '# my settings\n[session.supervision]\nidle_release_after = "1h"  # slow agents\n'


web = web_fixture(CONFIG)


@needs_browser
def test_pause_idle_agents_after_is_saved_into_config_toml_and_applied(web, home):
    from playwright.sync_api import expect
    page = web.page
    session = web.session("idle soon")
    web.prompt(session, "hello")
    web.open(f"/sessions/{session['id']}")
    expect(web.agent_text()).to_have_text(["echo: hello"])
    expect(page.locator("#health")).to_contain_text("running")
    page.get_by_role("link", name="Settings").click()
    expect(page).to_have_url(web.daemon.http_url + "/settings")

    pause = page.get_by_role("form", name="Pause idle agents after")
    box = pause.get_by_label("Pause idle agents after")
    expect(box).to_have_value("1h")
    expect(pause).to_contain_text("Default: 30m")
    assert web.fits() == [] and web.on_screen(pause.get_by_role("button", name="Save"))
    box.fill("ten minutes")
    pause.get_by_role("button", name="Save").click()
    expect(pause.get_by_role("status")).to_contain_text("expected a duration")
    assert (home / "config.toml").read_text() == CONFIG

    box.fill("1s")
    pause.get_by_role("button", name="Save").click()
    expect(pause.get_by_role("status")).to_have_text("Saved and applied")
    assert (home / "config.toml").read_text() == CONFIG.replace('"1h"', '"1s"')
    busy = page.get_by_role("form", name="A message sent while the agent works")
    busy.get_by_label("A message sent while the agent works").select_option("queue")
    busy.get_by_role("button", name="Save").click()
    expect(busy.get_by_role("status")).to_have_text("Saved and applied")
    assert 'default_mode = "queue"' in (home / "config.toml").read_text()
    assert web.fits() == []

    page.go_back()  # the idle agent is paused by the new setting, without a restart
    expect(page.locator("#health")).to_contain_text("not running (the next message starts it)")
    page.reload()
    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_role("form", name="Pause idle agents after").get_by_label("Pause idle agents after")) \
        .to_have_value("1s")
