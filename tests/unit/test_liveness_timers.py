"""What keeps a session alive, on a fake clock: an active child, a reply that can still come, and the
waiting heartbeats that prove nothing. One sweep (Supervisor.tick) at chosen moments over real
session records, event stores and reply watches, with turns no agent runs. What the same timers do
to real agents is in tests/test_liveness.py and the scenarios it names."""

import pytest

from compozy.acp.requests import PermissionAsk
from compozy.clock import iso_from_epoch
from compozy.config import from_document
from compozy.ids import new_id
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.turns.messaging import Wake
from compozy.session.turns.turn import Turn
from compozy.states import SessionState, TurnPhase
from tests.harness.fakes import FakeClock, FakeProcessTable

MINUTE = 60.0
SETTINGS = {"session": {"supervision": {"quiet_after": "30m", "stop_grace": "10m",
                                        "progress_notify_interval": "0", "first_output_after": "0",
                                        "activity_heartbeat_interval": "30s"}},
            "permissions": {"mode": "approve-reads", "timeout": "2h"}}


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def manager(home, clock):
    manager = SessionManager(Home(home), from_document(SETTINGS), clock=clock, processes=FakeProcessTable(clock))
    yield manager
    for session in list(manager.live.values()):
        if session.turn is not None:
            session.turn.ended.set()  # no runner here: a stop's wait for the turn returns at once
        if session.stop_operation is not None:
            session.stop_operation.done.wait(10)
    manager.shutdown()


def _session(manager, workspace, **lineage):
    """A live session of the manager (in its registry, as the daemon's sessions are)."""
    document = manager.create_session({"workspace_path": str(workspace), **lineage})["session"]
    return manager._session(document["id"])


def _turn(session, clock):
    """A prompting turn of the session that started now."""
    turn = Turn(new_id("turn"), "work", new_id("msg"), new_id("idem"), {}, clock=clock)
    turn.change_phase(TurnPhase.PROMPTING)
    turn.bound.set()
    session.turn = turn
    return turn


def _at(manager, clock, seconds, *sessions):
    """One sweep of these sessions at start + seconds."""
    clock.now = 1000.0 + seconds
    for session in sessions:
        manager.supervisor.tick(session, clock.now)


def _warnings(session):
    return [r for r in session.log.read_all() if r["type"] == "session.supervision_warning"]


def _signals(session, kind):
    return [s for s in session.overlay()["supervision"]["work_signals"] if s["kind"] == kind]


# -- an active child keeps its parent alive -------------------------------------------------------

@pytest.mark.parametrize("kind", ["provenance", "recovery"])
def test_a_streaming_child_keeps_its_silent_parent_alive(manager, clock, workspace, kind):
    parent = _session(manager, workspace)
    child = _session(manager, workspace, parent_session_id=parent.id, lineage_kind=kind)
    parent_turn, child_turn = _turn(parent, clock), _turn(child, clock)
    for minute in range(1, 61):  # an hour of a silent parent while its child streams
        child_turn.progress()
        _at(manager, clock, minute * MINUTE, parent)
    assert parent_turn.quiet_warning is None and parent.stop_operation is None and _warnings(parent) == []
    assert _signals(parent, "active_child") == [{"kind": "active_child", "session_id": child.id}]


def test_a_spawned_child_counts_too(manager, clock, workspace):
    parent = _session(manager, workspace)
    document = manager.spawn_session(caller=parent, body={}, spawn={"ttl": "2h"})["session"]
    child = manager._session(document["id"])
    parent_turn, child_turn = _turn(parent, clock), _turn(child, clock)
    for minute in range(1, 61):
        child_turn.progress()
        _at(manager, clock, minute * MINUTE, parent)
    assert parent_turn.quiet_warning is None and parent.stop_operation is None


def test_the_parent_is_stopped_once_its_child_falls_silent_too(manager, clock, workspace):
    """A child counts while it shows activity: once its own turn is silent for quiet_after, the
    parent's silence runs from there, and the watchdog warns and stops it as usual."""
    parent = _session(manager, workspace)
    child = _session(manager, workspace, parent_session_id=parent.id)
    parent_turn, _ = _turn(parent, clock), _turn(child, clock)
    _at(manager, clock, 29 * MINUTE, parent)  # the child is still within its own quiet_after
    assert _signals(parent, "active_child")
    _at(manager, clock, 30 * MINUTE, parent)  # now it is silent as well: no work of the parent's
    assert _signals(parent, "active_child") == []
    _at(manager, clock, 29 * MINUTE + 30 * MINUTE - 1, parent)
    assert parent_turn.quiet_warning is None
    _at(manager, clock, 29 * MINUTE + 30 * MINUTE, parent)
    assert parent_turn.quiet_warning is not None and len(_warnings(parent)) == 1
    parent_turn.ended.set()
    _at(manager, clock, 29 * MINUTE + 40 * MINUTE, parent)
    assert parent.stop_operation is not None and parent.stop_operation.cause == "inactivity"


def test_activity_below_a_quiet_child_counts_through_it(manager, clock, workspace):
    parent = _session(manager, workspace)
    child = _session(manager, workspace, parent_session_id=parent.id)
    grandchild = _session(manager, workspace, parent_session_id=child.id)
    parent_turn, grandchild_turn = _turn(parent, clock), _turn(grandchild, clock)
    for minute in range(1, 61):
        grandchild_turn.progress()
        _at(manager, clock, minute * MINUTE, parent)
    assert parent_turn.quiet_warning is None and parent.stop_operation is None
    assert _signals(parent, "active_child") == [{"kind": "active_child", "session_id": child.id}]


def test_a_stopping_child_is_stale_not_work(manager, clock, workspace):
    parent = _session(manager, workspace)
    child = _session(manager, workspace, parent_session_id=parent.id)
    parent_turn, child_turn = _turn(parent, clock), _turn(child, clock)
    child.change_state(SessionState.STOPPING)
    child_turn.progress()
    _at(manager, clock, 30 * MINUTE, parent)
    assert parent_turn.quiet_warning is not None and _signals(parent, "active_child") == []
    assert parent.sources.children == "stale" and parent.record.attention == "supervision_source_stale"


def test_continued_and_forked_sessions_are_nobodys_children(manager, clock, workspace):
    source = _session(manager, workspace)
    continued = _session(manager, workspace)
    continued.record.lineage = {**continued.record.lineage, "kind": "continue", "parent_session_id": source.id}
    source_turn, continued_turn = _turn(source, clock), _turn(continued, clock)
    continued_turn.progress()
    _at(manager, clock, 30 * MINUTE, source)
    assert source_turn.quiet_warning is not None and _signals(source, "active_child") == []


# -- waiting heartbeats ----------------------------------------------------------------------------

class Unanswered:
    def answer(self, option):
        pass


def _ask_permission(manager, session, workspace):
    """An edit under approve-reads: held for a person."""
    ask = PermissionAsk("call_1", "Edit", "edit", [str(workspace / "a.txt")],
                        [{"option_id": "yes", "name": "Yes", "kind": "allow_once"}])
    manager.requests.permission(session, ask, Unanswered())


def test_a_session_waiting_on_a_person_beats_without_events(manager, clock, workspace):
    session = _session(manager, workspace)
    turn = _turn(session, clock)
    _ask_permission(manager, session, workspace)
    asked_at = iso_from_epoch(clock.wall())
    events = len(session.log.read_all())
    _at(manager, clock, 1, session)
    assert session.activity == {"last_activity_at": iso_from_epoch(clock.wall()),
                                "last_activity_kind": "waiting_heartbeat"}
    _at(manager, clock, 20, session)  # within the interval: no beat
    assert session.activity["last_activity_at"] == iso_from_epoch(clock.wall() - 19)
    _at(manager, clock, 31, session)
    assert session.activity["last_activity_at"] == iso_from_epoch(clock.wall())
    waiting = session.overlay()["activity"]["waiting"]
    assert waiting == {"on": "permission", "since": asked_at, "request_id": next(iter(session.permissions))}
    assert len(session.log.read_all()) == events  # heartbeats are never events
    assert turn.quiet_warning is None


def test_heartbeats_prove_no_work(manager, clock, workspace):
    """A parent waiting on a silent child beats all along, and is still warned and stopped."""
    parent = _session(manager, workspace)
    child = _session(manager, workspace, parent_session_id=parent.id)
    parent_turn, child_turn = _turn(parent, clock), _turn(child, clock)
    child_turn.last_progress = child_turn.last_work = clock.now - 30 * MINUTE  # silent already: no work
    for second in range(30, 40 * 60, 30):
        _at(manager, clock, second, parent)
        assert parent.activity["last_activity_at"] == iso_from_epoch(clock.wall())
        waiting = parent.overlay()["activity"]["waiting"]
        assert waiting == {"on": "child", "since": iso_from_epoch(clock.wall() - second), "session_id": child.id}
    assert len(_warnings(parent)) == 1 and parent.stop_operation is None
    parent_turn.ended.set()  # no runner here: let the ladder's wait for the turn return at once
    _at(manager, clock, 40 * 60, parent)
    assert parent.stop_operation is not None and parent.stop_operation.cause == "inactivity"


def test_no_wait_no_heartbeat_and_zero_disables_them(manager, clock, workspace):
    session = _session(manager, workspace)
    _turn(session, clock)
    _at(manager, clock, 60, session)
    assert session.activity["last_activity_kind"] is None and "waiting" not in session.overlay()["activity"]
    manager.services.config.values["session.supervision.activity_heartbeat_interval"] = "0"
    _ask_permission(manager, session, workspace)
    _at(manager, clock, 120, session)
    assert session.activity["last_activity_kind"] is None
    assert session.overlay()["activity"]["waiting"]["on"] == "permission"


# -- a reply watch counts while the asked session can answer ----------------------------------------

@pytest.fixture
def watch(manager, workspace):
    """(sender, target, watch): the sender asked the target and waits for its reply."""
    sender, target = _session(manager, workspace), _session(manager, workspace)
    return sender, target, manager.observers["messaging"].watch(sender, target.id, new_id("turn"))


def test_a_reply_the_asked_session_can_still_give_keeps_the_sender_alive(manager, clock, watch):
    sender, target, _ = watch
    turn = _turn(sender, clock)
    _at(manager, clock, 60 * MINUTE, sender)
    assert turn.quiet_warning is None and sender.stop_operation is None
    assert [s["session_id"] for s in _signals(sender, "awaiting_reply")] == [target.id]
    assert sender.overlay()["activity"]["waiting"]["on"] == "reply"


def test_a_stopped_asked_session_holds_nobody(manager, clock, watch):
    sender, target, record = watch
    manager.stop_session(target.id, None, {"wait": True})
    turn = _turn(sender, clock)
    assert _signals(sender, "awaiting_reply") == []
    assert sender.overlay()["activity"]["waiting"] == {"on": "reply", "since": record.created_at,
                                                       "session_id": target.id}
    _at(manager, clock, 30 * MINUTE, sender)
    assert turn.quiet_warning is not None
    assert record.id in manager.observers["messaging"].watches  # it may still deliver, if resumed


def test_an_archived_asked_session_holds_nobody(manager, clock, watch):
    sender, target, _ = watch
    manager.stop_session(target.id, None, {"wait": True})
    manager.archive_session(target.id, None)
    assert _signals(sender, "awaiting_reply") == []


def test_a_removed_asked_session_drops_the_watch(manager, clock, watch):
    sender, target, record = watch
    manager.remove_session(target.id)
    assert _signals(sender, "awaiting_reply") == [] and "waiting" not in sender.overlay()["activity"]
    assert record.id not in manager.observers["messaging"].watches


def test_a_wake_waiting_for_delivery_still_counts(manager, clock, watch):
    sender, target, record = watch
    manager.stop_session(target.id, None, {"wait": True})
    record.wake = Wake(target.id, "general", record.turn_id, "done", "", False, "done")  # delivery is still to come
    assert [s["reply_ready"] for s in _signals(sender, "awaiting_reply")] == [True]


def test_an_idle_sender_waiting_on_a_reply_beats_too(manager, clock, watch):
    sender, target, _ = watch
    _at(manager, clock, 1, sender)
    assert sender.turn is None and sender.activity["last_activity_kind"] == "waiting_heartbeat"
    assert sender.overlay()["activity"]["waiting"]["session_id"] == target.id


def test_a_person_is_waited_on_before_a_reply(manager, clock, workspace, watch):
    sender, _, _ = watch
    _turn(sender, clock)
    _ask_permission(manager, sender, workspace)
    assert sender.overlay()["activity"]["waiting"]["on"] == "permission"


def test_a_removed_sender_drops_its_watches(manager, clock, watch):
    sender, _, record = watch
    manager.remove_session(sender.id)
    assert record.id not in manager.observers["messaging"].watches
