"""Server-Sent Events against a real daemon: framing, resume, disconnecting viewers, many viewers,
and the catalog stream.

Every connection has a read timeout so nothing hangs, and every connection is closed.
"""

import json
import threading
import time

import pytest

from compozy.cli.client import Client
from tests.harness.sse import Viewer


@pytest.fixture
def session(api, workspace):
    _, document = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})
    return document["session"]


def spath(session, *rest):
    return "/".join(("/api/workspaces", session["workspace_id"], "sessions", session["id"], *rest))


def events(api, session, **query):
    return api.call("GET", spath(session, "events"), query={"limit": 1000, **query})[1]["events"]


def wait_turn_end(api, session, turn_id, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ends = [e for e in events(api, session, turn_id=turn_id) if e["type"] in ("done", "error")]
        if ends:
            return ends
        time.sleep(0.05)
    raise AssertionError(f"turn {turn_id} did not end within {timeout}s")


def prompt(api, session, message):
    return api.call("POST", spath(session, "prompt"), {"message": message})[1]["prompt"]


def open_gate(workspace, name):
    gates = workspace / ".compozy-gates"
    gates.mkdir(exist_ok=True)
    (gates / name).touch()


def ends_turn(turn_id):
    return lambda f: f["data"].get("turn_id") == turn_id and f["event"] in ("done", "error")


def finished_turn(api, session, message="[chunks 3] hi"):
    turn_id = prompt(api, session, message)["turn_id"]
    wait_turn_end(api, session, turn_id)
    return events(api, session)


# -- framing ------------------------------------------------------------------------------------------


def test_stream_frames_carry_sequence_type_and_record(api, port, session):
    viewer = Viewer(port, spath(session, "stream"))
    try:
        assert viewer.status == 200
        assert viewer.content_type.startswith("text/event-stream")
        turn_id = prompt(api, session, "[chunks 2] hello")["turn_id"]
        frames = viewer.read_until(ends_turn(turn_id))
    finally:
        viewer.close()
    stored = events(api, session)
    assert [f["data"] for f in frames] == stored
    for frame in frames:
        assert frame["id"] == str(frame["data"]["sequence"])
        assert frame["event"] == frame["data"]["type"]
    assert [f["event"] for f in frames][0] == "user_message"
    assert frames[-1]["event"] == "done"
    assert [f["data"]["sequence"] for f in frames] == list(range(1, len(frames) + 1))


# -- resume -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["last-event-id", "after-sequence"])
def test_stream_resumes_after_given_sequence(api, port, session, how):
    stored = finished_turn(api, session)
    last = stored[-1]["sequence"]
    assert last >= 5
    for after in (0, 2, last - 1):
        if how == "last-event-id":
            viewer = Viewer(port, spath(session, "stream"), headers={"Last-Event-ID": str(after)})
        else:
            viewer = Viewer(port, spath(session, "stream") + f"?after_sequence={after}")
        try:
            frames = viewer.read_until(lambda f: f["data"]["sequence"] >= last)
            viewer.assert_quiet()
        finally:
            viewer.close()
        assert [f["data"] for f in frames] == [e for e in stored if e["sequence"] > after], after
        assert [f["id"] for f in frames] == [str(e["sequence"]) for e in stored if e["sequence"] > after]


def test_stream_resume_at_latest_sequence_yields_only_new_records(api, port, session):
    stored = finished_turn(api, session)
    last = stored[-1]["sequence"]
    viewer = Viewer(port, spath(session, "stream"), headers={"Last-Event-ID": str(last)})
    try:
        turn_id = prompt(api, session, "again")["turn_id"]
        frames = viewer.read_until(ends_turn(turn_id))
    finally:
        viewer.close()
    assert frames[0]["data"]["sequence"] == last + 1
    assert all(f["data"]["turn_id"] == turn_id for f in frames)


def test_last_event_id_wins_over_after_sequence(api, port, session):
    """A reconnecting EventSource repeats its URL and adds Last-Event-ID: the header is the newer cursor."""
    stored = finished_turn(api, session)
    last = stored[-1]["sequence"]
    viewer = Viewer(port, spath(session, "stream") + "?after_sequence=1", headers={"Last-Event-ID": "3"})
    try:
        frames = viewer.read_until(lambda f: f["data"]["sequence"] >= last)
    finally:
        viewer.close()
    assert [f["data"]["sequence"] for f in frames] == list(range(4, last + 1))


# -- viewers do not own the turn ----------------------------------------------------------------------


def test_viewer_disconnect_mid_turn_does_not_stop_turn(api, port, session, workspace):
    watcher = Viewer(port, spath(session, "stream"))
    streamer = Viewer(port, spath(session, "prompt"), method="POST", headers={"Accept": "text/event-stream"},
                      body={"message": "[hold gone] [chunks 2] still here"})
    try:
        admission = next(streamer.frames())
        assert admission["event"] == "prompt"
        turn_id = admission["data"]["turn_id"]
        held = streamer.read_until(lambda f: "holding gone" in f["data"].get("content", {}).get("text", ""))
        assert held[-1]["data"]["turn_id"] == turn_id
        watcher.read_until(lambda f: f["event"] == "agent_message")
    finally:
        streamer.close()  # both viewers leave while the turn is held
        watcher.close()
    time.sleep(0.3)
    open_gate(workspace, "gone")
    ends = wait_turn_end(api, session, turn_id)
    assert [e["type"] for e in ends] == ["done"]
    assert ends[0]["content"]["stop_reason"] == "end_turn"
    texts = "".join(e["content"].get("text", "") for e in events(api, session, turn_id=turn_id, type="agent_message"))
    assert "echo: still here" in texts
    assert api.call("GET", spath(session))[1]["session"]["state"] == "active"


# -- many viewers -------------------------------------------------------------------------------------


def test_fifty_viewers_receive_every_event_and_daemon_stays_responsive(api, port, session, workspace):
    viewers, results, errors = [], {}, []
    health_times, stop_probe = [], threading.Event()

    def read(index, viewer):
        try:
            results[index] = viewer.read_until(lambda f: f["event"] in ("done", "error"))
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(repr(exc))

    def probe():
        probe_client = Client(api.url, timeout=10, token=api.token)
        while not stop_probe.is_set():
            started = time.monotonic()
            status, _ = probe_client.call("GET", "/api/health")
            health_times.append((status, time.monotonic() - started))
            stop_probe.wait(0.05)

    threads = []
    prober = threading.Thread(target=probe)
    try:
        for _ in range(50):
            viewers.append(Viewer(port, spath(session, "stream")))
        threads = [threading.Thread(target=read, args=(i, v)) for i, v in enumerate(viewers)]
        for thread in threads:
            thread.start()
        prober.start()
        turn_id = prompt(api, session, "[hold many] [chunks 5] [sleep 0.2] [chunks 5] [sleep 0.2] crowd")["turn_id"]
        time.sleep(0.5)  # 50 viewers waiting on a held turn
        open_gate(workspace, "many")
        for thread in threads:
            thread.join(60)
        assert not any(t.is_alive() for t in threads), "a viewer never saw the end of the turn"
    finally:
        stop_probe.set()
        if prober.is_alive() or prober.ident:
            prober.join(30)
        for viewer in viewers:
            viewer.close()
        for thread in threads:
            thread.join(5)

    assert errors == []
    stored = [e for e in events(api, session) if e["turn_id"] == turn_id]
    assert stored[-1]["type"] == "done"
    assert len(results) == 50
    for index, frames in results.items():
        assert [f["data"] for f in frames] == stored, index
    assert len(health_times) >= 5
    assert all(status == 200 for status, _ in health_times)
    assert max(elapsed for _, elapsed in health_times) < 1.0, health_times


# -- catalog stream -----------------------------------------------------------------------------------


def test_catalog_stream_reports_create_and_remove(api, port, workspace):
    viewer = Viewer(port, "/api/sessions/stream")
    try:
        assert viewer.status == 200
        assert viewer.content_type.startswith("text/event-stream")
        _, created = api.call("POST", "/api/sessions", {"workspace_path": str(workspace)})
        sid, ws = created["session"]["id"], created["session"]["workspace_id"]

        def mine(change):
            return lambda f: f["data"].get("session_id") == sid and f["data"].get("change") == change
        upserted = viewer.read_until(mine("upserted"))[-1]
        api.call("DELETE", f"/api/sessions/{sid}")
        deleted = viewer.read_until(mine("deleted"))[-1]
    finally:
        viewer.close()
    for frame in (upserted, deleted):
        assert frame["event"] == "session_catalog_changed"
        assert frame["data"]["type"] == "session_catalog_changed"
        assert frame["data"]["session_id"] == sid
        assert frame["data"]["workspace_id"] == ws
    assert int(deleted["id"]) > int(upserted["id"])


# -- refusals stay JSON -------------------------------------------------------------------------------


@pytest.mark.parametrize("suffix, headers, status, code", [
    ("/stream", {"Last-Event-ID": "abc"}, 400, "invalid_request"),
    ("/stream?after_sequence=-1", {}, 400, "invalid_request"),
    ("/stream?bogus=1", {}, 400, "invalid_request"),
])
def test_bad_stream_requests_answer_json_errors(port, session, suffix, headers, status, code):
    viewer = Viewer(port, spath(session) + suffix, headers=headers)
    try:
        body = json.loads(viewer.response.read())
    finally:
        viewer.close()
    assert viewer.status == status
    assert viewer.content_type.startswith("application/json")
    assert body["code"] == code and set(body) == {"error", "code", "details"}


def test_stream_of_unknown_session_is_404(port, session):
    other = dict(session, id="sess_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    viewer = Viewer(port, spath(other, "stream"))
    try:
        body = json.loads(viewer.response.read())
    finally:
        viewer.close()
    assert viewer.status == 404
    assert body["code"] == "session_not_found"
