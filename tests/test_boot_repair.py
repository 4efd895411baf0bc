"""Boot repair after an unclean exit, state by state: each live lifecycle state and runtime status a
crash can leave in meta.json, and each control row caught mid-flight, takes its named repair edge.

A scenario can kill the daemon only between steps, never mid-bind or mid-dispatch; these tests write
those states into real session directories and a real catalog, then boot a real manager on them.
"""

import json

import pytest

from compozy.config import from_document
from compozy.ids import new_id
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.store.catalog import Catalog
from compozy.store.eventlog import EventLog


def _manager(home):
    return SessionManager(Home(home), from_document({})).start()


def _session(home, workspace):
    manager = _manager(home)
    try:
        return manager.create_session({"workspace_path": str(workspace)})["session"]
    finally:
        manager.shutdown()


def _crash_into(home, session_id, state, status):
    """meta.json as a daemon killed at that moment leaves it (bound to an ACP session)."""
    path = home / "sessions" / session_id / "meta.json"
    document = json.loads(path.read_text())
    document["state"] = state
    document["runtime"].update(status=status, acp_session_id="ref_0123", transition="")
    path.write_text(json.dumps(document))


def _read(home, session_id):
    manager = _manager(home)
    try:
        return manager.get_session(session_id)["session"]
    finally:
        manager.shutdown()


@pytest.mark.parametrize("state, status, stop_reason", [
    ("starting", "binding", "error"),
    ("stopping", "ready", "agent_crashed"),
    ("active", "binding", "agent_crashed"),
    ("active", "ready", "agent_crashed"),
    ("active", "reconfiguring", "agent_crashed"),
    ("active", "recovering", "agent_crashed"),
])
def test_boot_stops_every_live_state_and_unbinds_every_runtime(home, workspace, state, status, stop_reason):
    session = _session(home, workspace)
    _crash_into(home, session["id"], state, status)
    read = _read(home, session["id"])
    assert (read["state"], read["stop_reason"], read["runtime"]["status"]) == ("stopped", stop_reason, "unbound")
    assert read["runtime"]["acp_session_id"] == "ref_0123"  # kept: the next prompt loads it


def _catalog_rows(home, session, sent):
    """A queue entry caught mid-dispatch and a prompt admission caught mid-bind (its user_message
    written when `sent`, the admission not yet marked started)."""
    catalog = Catalog(home / "compozy.db")
    turn_id, entry_id, admission_id = new_id("turn"), new_id("queue"), new_id("idem")
    started_turn, message_id = new_id("turn"), new_id("msg")
    try:
        catalog.add_entry(id=entry_id, session_id=session["id"], priority=1, status="dispatching", mode="queue",
                          message="queued", message_id=new_id("msg"), idempotency_key=new_id("idem"),
                          runtime={}, turn_id=turn_id, admission_id=None)
        catalog.add_admission(id=admission_id, session_id=session["id"], operation="prompt",
                              message_id=message_id, idempotency_key="k-bound", fingerprint="sha256:x",
                              state="binding", result=None)
    finally:
        catalog.close()
    if sent:
        log = EventLog(home / "sessions" / session["id"] / "events.db", session["id"], session["workspace_id"])
        log.append_one("user_message", turn_id, {"text": "queued"})
        log.append_one("user_message", started_turn, {"text": "prompted", "message_id": message_id})
        log.close()
    return entry_id, admission_id, started_turn


@pytest.mark.parametrize("sent, status", [(True, "sent"), (False, "queued")])
def test_boot_settles_an_entry_caught_mid_dispatch_and_an_admission_caught_mid_bind(home, workspace, sent, status):
    session = _session(home, workspace)
    entry_id, admission_id, started_turn = _catalog_rows(home, session, sent)
    _manager(home).shutdown()
    catalog = Catalog(home / "compozy.db")
    try:
        assert catalog.entry(session["id"], entry_id)["status"] == status
        assert catalog.admissions_in_state("binding") == []
        admission = catalog.admission(session["id"], "k-bound")
    finally:
        catalog.close()
    if sent:  # it ran: a retry must answer its turn, never run it again
        assert admission["state"] == "started", admission
        result = admission["result"]
        assert (json.loads(result) if isinstance(result, str) else result)["turn_id"] == started_turn
    else:  # it never ran: nothing of it persists, a retry runs it
        assert admission is None


def _conversation(home, session):
    """Two settled turns, written as a daemon would have committed them."""
    log = EventLog(home / "sessions" / session["id"] / "events.db", session["id"], session["workspace_id"])
    for number in (1, 2):
        turn_id = new_id("turn")
        log.append([("user_message", turn_id, {"text": f"question {number}", "message_id": f"m{number}"}, None),
                    ("agent_message", turn_id, {"text": f"answer {number}"}, None),
                    ("done", turn_id, {"stop_reason": "end_turn"}, None)])
    return log


@pytest.mark.parametrize("archived", [False, True], ids=["before-the-archive", "after-the-archive"])
def test_boot_finishes_a_rewind_an_unclean_exit_interrupted(home, workspace, archived):
    """The receipt is written pending before anything is cut: boot completes the cut from it, and the
    retry with the same key then answers the original result."""
    session = _session(home, workspace)
    log = _conversation(home, session)
    result = {"target_message_id": "m2", "target_turn_id": "turn_x", "draft_text": "question 2",
              "archived_from_sequence": 4, "archived_through_sequence": 6, "archived_event_count": 3,
              "transcript_epoch": 1, "generation": 1, "max_sequence": 3, "idempotency_key": "r1", "note": "n"}
    if archived:
        log.archive(4, 6)
    log.close()
    catalog = Catalog(home / "compozy.db")
    try:
        catalog.derived.add_rewind(session["id"], "r1", "sha256:x", "pending", result)
    finally:
        catalog.close()
    manager = _manager(home)
    try:
        read = manager.get_session(session["id"])["session"]
        assert read["fences"] == {"epoch": 1, "generation": 1, "max_sequence": 3}
        assert [m["text"] for m in manager.history(session["id"], None)["messages"]] == ["question 1", "answer 1"]
        assert manager.catalog.derived.rewinds_in_state("pending") == []
        assert manager.catalog.derived.rewind(session["id"], "r1")["state"] == "completed"
    finally:
        manager.shutdown()


def test_boot_finishes_a_clear_an_unclean_exit_interrupted_and_discards_the_carried_context(home, workspace):
    """A clear is a rewind of everything: its pending receipt is finished at boot the same way, and a
    continued session's carried context is discarded with it (stored still, never prepended again)."""
    source = _session(home, workspace)
    manager = _manager(home)
    try:
        manager.prompt(source["id"], source["workspace_id"], {"message": "first"})
        from tests.harness.api import wait_for
        wait_for(lambda: manager.events(source["id"], None, {"type": "done"})["events"], what="the turn")
        child = manager.continue_session(source["id"], source["workspace_id"], {
            "agent_name": "general", "idempotency_key": "c1"})["session"]
    finally:
        manager.shutdown()
    result = {"archived_from_sequence": 1, "archived_through_sequence": 0, "archived_event_count": 0,
              "carried_context_discarded": True, "transcript_epoch": 1, "generation": 1, "max_sequence": 0,
              "idempotency_key": "x1", "note": "n"}
    catalog = Catalog(home / "compozy.db")
    try:
        catalog.derived.add_rewind(child["id"], "x1", "sha256:x", "pending", result)
    finally:
        catalog.close()
    manager = _manager(home)
    try:
        read = manager.get_session(child["id"])["session"]
        assert read["fences"] == {"epoch": 1, "generation": 1, "max_sequence": 0}
        assert read["derivation"]["carried_context"] == "discarded"
        assert manager._session(child["id"]).carried() is None
        assert manager.catalog.derived.rewind(child["id"], "x1")["state"] == "completed"
    finally:
        manager.shutdown()
