"""The attention inbox against real parts: its event stream (snapshot, changes, resume across a daemon
restart), and items that follow a session's attention flag, failure, removal and the daemon's boot."""

import time

import pytest

from compozy.config import from_document
from compozy.manager import SessionManager
from compozy.paths import Home
from tests.harness.daemon import DaemonProcess
from tests.harness.sse import Viewer

HELD = "[permission edit no/reject_once/Deny | yes/allow_once/Allow] go"


def wait_for(read, check, within=20.0):
    deadline = time.monotonic() + within
    while True:
        value = read()
        if check(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {within}s: {value!r}")
        time.sleep(0.05)


@pytest.fixture
def held_daemon(home):
    (home / "config.toml").write_text('[permissions]\nmode = "approve-reads"\n')
    (home / "config.toml").chmod(0o600)
    process = DaemonProcess(home).start()
    yield process
    process.stop()


def port_of(daemon):
    return int(daemon.http_url.rsplit(":", 1)[1])


def test_the_stream_sends_a_snapshot_then_each_change_and_resumes_after_a_restart(held_daemon, workspace):
    api = held_daemon.client()
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})[1]["session"]
    base = f"/api/workspaces/{session['workspace_id']}/sessions/{session['id']}"
    viewer = Viewer(port_of(held_daemon), "/api/attention/events")
    try:
        frames = viewer.frames()
        snapshot = next(frames)
        assert (snapshot["event"], snapshot["data"]["items"]) == ("inbox", [])
        api.call("POST", base + "/prompt", {"message": HELD})
        opened = next(frames)
        assert opened["event"] == "item_opened" and opened["data"]["item"]["kind"] == "permission"
        assert int(opened["id"]) > int(snapshot["id"])
        item = opened["data"]["item"]
        api.call("POST", f"/api/attention/{item['id']}/answer", {"option_id": "no"})
        resolved = next(frames)
        assert resolved["event"] == "item_resolved" and resolved["data"]["item"]["id"] == item["id"]
        assert "reject-once" in resolved["data"]["item"]["resolution"]
    finally:
        viewer.connection.close()
    held_daemon.restart()
    resumed = Viewer(port_of(held_daemon), "/api/attention/events", headers={"Last-Event-ID": opened["id"]})
    try:
        frame = next(resumed.frames())  # no snapshot: the change the viewer missed, read from the catalog
        assert (frame["event"], frame["id"], frame["data"]["item"]["status"]) == \
               ("item_resolved", resolved["id"], "resolved")
    finally:
        resumed.connection.close()


def test_a_bad_last_event_id_is_refused(held_daemon):
    viewer = Viewer(port_of(held_daemon), "/api/attention/events", headers={"Last-Event-ID": "soon"})
    try:
        assert viewer.status == 400
    finally:
        viewer.connection.close()


@pytest.fixture
def manager(home):
    managers = []

    def build():
        managers.append(SessionManager(Home(home), from_document({})).start())
        return managers[-1]
    yield build
    for made in managers:
        made.shutdown()


def items(manager, **query):
    return manager.list_attention(query)["items"]


def test_a_flag_opens_an_item_that_resolves_when_the_flag_clears(manager, workspace):
    daemon = manager()
    session_id = daemon.create_session({"workspace_path": str(workspace), "name": "flagged"})["session"]["id"]
    session = daemon._session(session_id)
    session.save(attention="runtime_stuck")
    [item] = items(daemon)
    assert (item["kind"], item["session_id"], [a["id"] for a in item["actions"]]) == \
           ("runtime_stuck", session_id, ["stop", "dismiss"])
    assert "flagged" in item["summary"]
    session.save(attention="supervision_source_stale")  # a new cause: the old item resolves, a new one opens
    [stale] = items(daemon)
    assert stale["kind"] == "supervision_stale" and stale["id"] != item["id"]
    session.save(attention=None)
    assert items(daemon) == []
    resolved = items(daemon, status="resolved")
    assert [r["id"] for r in resolved] == [stale["id"], item["id"]]
    assert resolved[0]["resolution"] == "cleared"


def test_a_failure_is_an_item_until_the_next_start_and_survives_a_restart(manager, workspace):
    daemon = manager()
    session_id = daemon.create_session({"workspace_path": str(workspace)})["session"]["id"]
    daemon._session(session_id).save(failure={"kind": "provider_auth_failure", "summary": "log in first"})
    [item] = items(daemon)
    assert item["kind"] == "provider_auth_failure" and item["summary"].endswith("log in first")
    daemon.shutdown()
    again = manager()  # the failure is in meta.json: boot finds its item open, and opens no second one
    assert [i["id"] for i in items(again)] == [item["id"]]
    again._session(session_id).save(failure=None)
    assert items(again) == []
    assert items(again, status="resolved")[0]["resolution"] == "the next start succeeded"


def test_removing_a_session_resolves_its_items_and_dismiss_resolves_one(manager, workspace):
    daemon = manager()
    first = daemon.create_session({"workspace_path": str(workspace)})["session"]["id"]
    second = daemon.create_session({"workspace_path": str(workspace)})["session"]["id"]
    daemon._session(first).save(failure={"kind": "process_exit", "summary": "exited 3"})
    daemon._session(second).save(failure={"kind": "process_exit", "summary": "exited 4"})
    daemon.remove_session(first)
    [left] = items(daemon)
    assert left["session_id"] == second and left["kind"] == "agent_failure"
    assert items(daemon, status="resolved")[0]["resolution"] == "session removed"
    answer = daemon.answer_attention(left["id"], {"option_id": "dismiss"})
    assert (answer["item"]["status"], answer["item"]["resolution"], answer["result"]) == ("resolved", "dismissed", None)
    assert daemon.daemon_status()["status"]["inbox"] == {"total": 0, "by_kind": {}, "by_session": {}}


def test_a_turn_that_ends_while_someone_follows_the_session_opens_no_item(manager, workspace):
    daemon = manager()
    session_id = daemon.create_session({"workspace_path": str(workspace)})["session"]["id"]
    daemon.watch_turns(session_id, None, {"turn_finished": True})
    follower = daemon.stream(session_id, None)
    next(follower)  # following now
    turn = daemon.prompt(session_id, None, {"message": "watched"})["prompt"]["turn_id"]
    wait_for(lambda: daemon.events(session_id, None, {"turn_id": turn, "type": "done"})["events"], bool)
    assert items(daemon, kind="turn_finished") == []
    follower.close()  # nobody follows any more: the next turn's end is an item
    turn = daemon.prompt(session_id, None, {"message": "unwatched"})["prompt"]["turn_id"]
    [item] = wait_for(lambda: items(daemon, kind="turn_finished"), bool)
    assert item["details"]["turn_id"] == turn
    daemon.stream(session_id, None).__next__()  # someone looks: seen
    assert items(daemon, kind="turn_finished") == []


def test_inbox_follow_prints_each_change_and_follows_across_a_daemon_restart(held_daemon, home, workspace):
    from tests.harness.cli import run_cli, spawn_cli
    api = held_daemon.client()
    session = api.call("POST", "/api/sessions", {"workspace_path": str(workspace), "name": "followed"})[1]["session"]
    base = f"/api/workspaces/{session['workspace_id']}/sessions/{session['id']}"
    child = spawn_cli(home, "inbox", "--follow", extra_env={"NO_COLOR": "1"})
    try:
        child.expect("nothing needs you")
        api.call("POST", base + "/prompt", {"message": HELD})
        child.expect(r"\+ (attn_\w+)  permission  " + session["id"] + "  followed: the agent asks permission")
        item_id = child.match.group(1)
        # The shutdown answers the held request cancelled; the follower reconnects after the restart and
        # prints that resolution, read from the catalog after the last change it printed.
        held_daemon.restart()
        child.expect(r"- " + item_id + r"  permission  resolved: answered cancelled \(cancelled\)")
        listed = run_cli(home, "inbox", "-o", "json")
        assert listed.returncode == 0 and '"status": "open"' not in listed.stdout
    finally:
        child.terminate(force=True)
    answered = run_cli(home, "inbox", "answer", item_id, "yes")
    assert answered.returncode == 1 and "Error: attention_item_resolved:" in answered.stderr


def test_a_stopped_sessions_failure_offers_the_transcript_repair(manager, workspace):
    daemon = manager()
    session_id = daemon.create_session({"workspace_path": str(workspace)})["session"]["id"]
    daemon.stop_session(session_id, None, {"wait": True})
    daemon._session(session_id).save(failure={"kind": "process_exit", "summary": "exited 9"})
    [item] = items(daemon)
    assert [a["id"] for a in item["actions"]] == ["repair", "dismiss"]
    answer = daemon.answer_attention(item["id"], {"option_id": "repair"})
    assert answer["result"]["repair"]["session_id"] == session_id
    assert answer["item"]["status"] == "open"  # the failure stays until the next start: a person may dismiss it
