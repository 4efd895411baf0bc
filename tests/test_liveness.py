"""What keeps a silent turn alive, with real reference agents in-process: a governed child that
streams keeps its parent's silent turn alive (the audit's probe, for the spawned kind: the provenance
kind is spec/lifecycle/supervision-active-child-keeps-parent-alive.yaml), and a reply watch keeps its
sender alive only while the asked session can answer (spec/messaging/messaging-reply-watch-ends-with-
the-asked-session.yaml is the idle sender's side). The fake-clock timers are in
tests/unit/test_liveness_timers.py."""

import time

import pytest

from compozy.config import from_document, reference_command
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.turns.identity import Caller
from tests.harness.api import wait_for
from tests.harness.cli import cli_json, run_cli

STREAMY = {"env": {"COMPOZY_REFERENCE_CHUNK_DELAY": "0.1"}}  # a chunk every 100 ms
PAST_THE_STOP = 5.0  # seconds: well past quiet_after + stop_grace


@pytest.fixture
def manager(home):
    settings = {"session": {"supervision": {"quiet_after": "1s", "stop_grace": "1s"}},
                "providers": {"streamy": {**STREAMY, "command": list(reference_command())}},
                "agents": {"streamy": {"provider": "streamy"}}}
    manager = SessionManager(Home(home), from_document(settings)).start()
    yield manager
    manager.shutdown()


def _read(manager, session_id):
    return manager.get_session(session_id)["session"]


def _events(manager, session_id, **query):
    return manager.events(session_id, None, {"limit": 1000, **query})["events"]


def _said(manager, session_id, turn_id, text):
    return wait_for(lambda: any(e["content"].get("text") == text
                                for e in _events(manager, session_id, turn_id=turn_id, type="agent_message")),
                    what=f"{text!r} from {session_id}")


def _stopped(manager, session_id):
    return wait_for(lambda: (r := _read(manager, session_id))["state"] == "stopped" and r, timeout=30,
                    what=f"{session_id} stopped")


def test_a_streaming_spawned_child_keeps_its_silent_parent_alive(manager, workspace):
    parent = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    child = manager.spawn_session(Caller(manager._session(parent), "unused"), {"agent_name": "streamy"},
                                  {"ttl": "30m"})["session"]["id"]
    streaming = manager.prompt(child, None, {"message": "[chunks 600] streamed"})["prompt"]["turn_id"]
    _said(manager, child, streaming, "chunk 2 ")
    silent = manager.prompt(parent, None, {"message": "[hold g1] waiting for my child"})["prompt"]["turn_id"]
    _said(manager, parent, silent, "holding g1 ")
    time.sleep(PAST_THE_STOP)
    assert _events(manager, child, turn_id=streaming, type="done") == []  # the probe held: the child still streams
    read = _read(manager, parent)
    assert read["state"] == "active" and read["supervision"]["quiet_warning"] is None
    assert {"kind": "active_child", "session_id": child} in read["supervision"]["work_signals"]
    assert read["activity"]["waiting"]["on"] == "child"
    assert _events(manager, parent, type="session.supervision_warning") == []
    manager.cancel_turn(child, None)  # the child's work ends: the parent's silence is its own again
    stopped = _stopped(manager, parent)
    assert (stopped["stop_reason"], stopped["stop_detail"]) == ("timeout", "inactivity")
    assert [e["turn_id"] for e in _events(manager, parent, type="session.supervision_warning")] == [silent]
    assert _stopped(manager, child)["stop_reason"] == "owner_released"


def test_a_sender_is_kept_alive_by_its_watch_only_while_the_asked_session_can_answer(manager, workspace):
    worker = manager.create_session({"workspace_path": str(workspace), "agent_name": "streamy"})["session"]["id"]
    sender = manager.create_session({"workspace_path": str(workspace)})["session"]["id"]
    busy = manager.prompt(worker, None, {"message": "[chunks 600] busy"})["prompt"]["turn_id"]
    _said(manager, worker, busy, "chunk 2 ")
    asked = manager.prompt(worker, None, {"message": "compute it", "mode": "queue"})["prompt"]
    assert asked["disposition"] == "queued"
    messaging = manager.observers["messaging"]
    watch = messaging.watch(Caller(manager._session(sender), "unused"), worker, asked["turn_id"])
    silent = manager.prompt(sender, None, {"message": "[hold g2] waiting for the reply"})["prompt"]["turn_id"]
    _said(manager, sender, silent, "holding g2 ")
    time.sleep(PAST_THE_STOP)
    read = _read(manager, sender)
    assert read["state"] == "active" and [s["kind"] for s in read["supervision"]["work_signals"]
                                          if s["kind"] != "agent_progress"] == ["awaiting_reply"]
    manager.stop_session(worker, None, {"wait": True})  # a person stops it, the asked turn still queued
    assert [e["message"] for e in manager.list_inputs(worker, None)["entries"]] == ["compute it"]
    stopped = _stopped(manager, sender)
    assert (stopped["stop_reason"], stopped["stop_detail"]) == ("timeout", "inactivity")
    assert stopped["supervision"]["work_signals"] == []
    manager.prompt(worker, None, {"message": "back to work"})  # resumed, it answers after all
    wait_for(lambda: getattr(messaging.watches.get(watch.id), "wake", None), timeout=30, what="the reply")
    assert _read(manager, sender)["state"] == "stopped"  # an inactivity stop is not undone by the wake



@pytest.fixture
def approve_reads(home):
    (home / "config.toml").write_text('[permissions]\nmode = "approve-reads"\n')


def test_the_cli_says_what_a_session_waits_on(approve_reads, daemon, workspace):
    sid = cli_json(daemon.home, "session", "new", "--cwd", str(workspace))["session"]["id"]
    assert run_cli(daemon.home, "session", "prompt", sid, "[permission edit] go", "--detach").returncode == 0
    waiting = wait_for(lambda: cli_json(daemon.home, "session", "status", sid)["session"]["activity"]
                       .get("waiting"), what="the permission it waits on")
    assert waiting["on"] == "permission"
    status = run_cli(daemon.home, "session", "status", sid)
    assert f"Waiting       on a permission ({waiting['request_id']}) since {waiting['since']}" in status.stdout
    approved = run_cli(daemon.home, "session", "approve", sid, waiting["request_id"], "--decision", "allow-once")
    assert approved.returncode == 0, approved.stderr
    wait_for(lambda: "Waiting" not in run_cli(daemon.home, "session", "status", sid).stdout, what="the wait to end")
