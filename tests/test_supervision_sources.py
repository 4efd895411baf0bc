"""The watchdog believes its own work signals, and supervision sources tell the truth.

A running tool whose process lives in the agent's tree is verified work: a quiet agent running it is
neither warned nor stopped. A running tool nobody can verify is stale: it raises attention (on the
session, in `session status`, on the catalog stream) and the watchdog stops the turn as usual. A
source that cannot be inspected is unknown: it raises attention and holds the automatic inactivity
stop back until it can be inspected again. Real managers, real reference agents, a real /proc
(a process table that fails on demand stands in for an unreadable one).
"""

import time

import pytest

from compozy.config import from_document
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.proc import ProcessTable
from tests.harness.api import wait_for

QUIET = {"session": {"supervision": {"quiet_after": "1s", "stop_grace": "2s"}}}
PAST_THE_STOP = 5.0  # seconds: well past quiet_after + stop_grace


class FlakyProcessTable(ProcessTable):
    """/proc as it is, or (while `failing`) a process table that cannot be read."""

    failing = False

    def related(self, leader, marker=None):
        if self.failing:
            raise PermissionError("/proc cannot be read")
        return super().related(leader, marker)


@pytest.fixture
def processes():
    return FlakyProcessTable()


@pytest.fixture
def manager(home, processes):
    manager = SessionManager(Home(home), from_document(QUIET), processes=processes).start()
    yield manager
    manager.shutdown()


def _session(manager, workspace):
    return manager.create_session({"workspace_path": str(workspace)})["session"]


def _prompt(manager, session, message):
    return manager.prompt(session["id"], session["workspace_id"], {"message": message})["prompt"]["turn_id"]


def _read(manager, session):
    return manager.get_session(session["id"])["session"]


def _types(manager, session):
    return [e["type"] for e in manager.events(session["id"], None, {"limit": 1000})["events"]]


def _attention_changes(manager, session):
    items = manager.services.catalog_feed.after(0, 0) or []
    return [(i["previous"], i["attention"]) for i in items
            if i["type"] == "session_attention_changed" and i["session_id"] == session["id"]]


def _open_gate(workspace, name):
    (workspace / ".compozy-gates").mkdir(exist_ok=True)
    (workspace / ".compozy-gates" / name).touch()


def test_a_running_tool_with_a_live_process_keeps_a_quiet_agent_alive(manager, workspace):
    session = _session(manager, workspace)
    turn_id = _prompt(manager, session, "[tool-open Build] [grandchild] [hold g1] built")
    wait_for(lambda: "tool_call" in _types(manager, session), what="the tool call")
    time.sleep(PAST_THE_STOP)
    read = _read(manager, session)
    assert read["state"] == "active" and read.get("attention") is None
    assert read["supervision"]["sources"] == {"agent": "ok", "tools": "ok", "children": "ok", "runtime": "ok"}
    assert [s["kind"] for s in read["supervision"]["work_signals"]] == ["running_tool"]
    assert "session.supervision_warning" not in _types(manager, session)
    _open_gate(workspace, "g1")
    wait_for(lambda: manager.events(session["id"], None, {"turn_id": turn_id, "type": "done"})["events"],
             what="the end of the turn")


def test_a_running_tool_nobody_can_verify_is_stale_raises_attention_and_stops_counting(manager, workspace):
    session = _session(manager, workspace)
    _prompt(manager, session, "[tool-open Build] [hold g2] never")
    raised = wait_for(lambda: (r := _read(manager, session)).get("attention") and r, what="attention")
    assert raised["attention"] == "supervision_source_stale"
    assert raised["supervision"]["sources"]["tools"] == "stale"
    assert "running_tool" not in [s["kind"] for s in raised["supervision"]["work_signals"]]
    status = manager.session_status(session["id"])["session"]
    assert status["attention"] == "supervision_source_stale" and status["health"]["health"] == "degraded"
    listed = manager.list_sessions()["sessions"]
    assert [s.get("attention") for s in listed] == ["supervision_source_stale"]
    assert (None, "supervision_source_stale") in _attention_changes(manager, session)
    stopped = wait_for(lambda: (r := _read(manager, session))["state"] == "stopped" and r, timeout=30,
                       what="the inactivity stop")
    assert (stopped["stop_reason"], stopped["stop_detail"]) == ("timeout", "inactivity")
    assert stopped.get("attention") is None
    assert ("supervision_source_stale", None) in _attention_changes(manager, session)


def test_an_unknown_source_raises_attention_and_holds_the_inactivity_stop_back(manager, processes, workspace):
    session = _session(manager, workspace)
    processes.failing = True
    _prompt(manager, session, "[tool-open Build] [hold g3] never")
    raised = wait_for(lambda: (r := _read(manager, session)).get("attention") and r, what="attention")
    assert raised["attention"] == "supervision_source_unknown"
    assert raised["supervision"]["sources"]["agent"] == "unknown"
    time.sleep(PAST_THE_STOP)
    assert _read(manager, session)["state"] == "active"  # warned, but never stopped while unknown
    assert "session.supervision_warning" in _types(manager, session)
    processes.failing = False  # inspectable again: the tool is stale and the stop goes ahead
    stopped = wait_for(lambda: (r := _read(manager, session))["state"] == "stopped" and r, timeout=30,
                       what="the inactivity stop")
    assert stopped["stop_detail"] == "inactivity"
    assert ("supervision_source_unknown", "supervision_source_stale") in _attention_changes(manager, session)
