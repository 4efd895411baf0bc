"""The page's file checkpoints in headless Chromium: "Files changed (N)" under a turn, its diff, and the rewind
dialog's "also restore files" with the dry run's list, against the real daemon and the reference agent."""

from tests.harness.web import needs_browser, web_fixture
from tests.test_web import WEB_CONFIG

web = web_fixture(WEB_CONFIG, ("desktop",))


@needs_browser
def test_files_changed_under_a_turn_opens_to_its_diff(web):
    from playwright.sync_api import expect
    page = web.page
    (web.workspace / "notes.txt").write_text("old line\n")
    web.open(f"/sessions/{web.session('diff')['id']}")
    web.send("[put notes.txt new-line] [blob logo.bin 1] [put src/app.py x=1] edit")
    expect(web.agent_text()).to_contain_text(["echo: edit"])
    changed = page.locator("#transcript details.files-changed")
    expect(changed.locator("summary")).to_have_text("Files changed (3)")
    changed.locator("summary").click()
    expect(changed.locator(".diff-files li")).to_have_count(3)
    expect(changed.locator(".diff-files")).to_contain_text("logo.bin")
    expect(changed.locator(".diff-files")).to_contain_text("binary")
    expect(changed.locator(".patch .del")).to_have_text(["-old line\n"])
    expect(changed.locator(".patch .add")).to_contain_text(["+new-line\n"])
    expect(changed.locator(".patch")).to_contain_text("Binary files /dev/null and b/logo.bin differ")
    # A turn that changed nothing has no such block.
    web.send("quiet")
    expect(web.agent_text()).to_have_count(2)
    expect(changed).to_have_count(1)


@needs_browser
def test_rewind_can_also_restore_files_after_showing_what_would_change(web):
    from playwright.sync_api import expect
    page = web.page
    web.open(f"/sessions/{web.session('rewind files')['id']}")
    web.send("[put plan.txt first] one")
    expect(web.agent_text()).to_have_count(1)
    web.send("[put plan.txt second] [put extra.txt more] two")
    expect(web.agent_text()).to_have_count(2)
    page.locator("#transcript .msg.user").nth(1).get_by_role("button", name="Rewind to before this message").click()
    dialog = page.get_by_role("dialog")
    dialog.get_by_label("Also restore files").check()
    plan = dialog.get_by_role("list", name="Files a restore would change")
    expect(plan.locator("li")).to_have_text(["deleted extra.txt", "modified plan.txt"])
    assert (web.workspace / "extra.txt").exists()  # the dry run changed nothing
    dialog.get_by_role("button", name="Rewind", exact=True).click()
    expect(page.locator("#transcript .msg.user .body")).to_have_text(["[put plan.txt first] one"])
    expect(page.locator("#transcript .marker")).to_contain_text(["Files restored to checkpoint"])
    assert (web.workspace / "plan.txt").read_text() == "first\n"
    assert not (web.workspace / "extra.txt").exists()
