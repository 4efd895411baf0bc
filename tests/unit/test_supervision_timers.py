"""Every supervision timer on a fake clock: one sweep (Supervisor.tick) at chosen moments over a
real session record and event store, with a turn that no agent runs. What each timer then does to
a real agent is in the lifecycle and busy-input scenarios."""

import pytest

from compozy.acp.requests import PermissionAsk
from compozy.clock import iso_from_epoch
from compozy.config import from_document
from compozy.ids import new_id
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.records.live import LiveSession
from compozy.session.turns.turn import Turn
from compozy.states import TurnPhase
from tests.harness.fakes import FakeClock, FakeProcessTable

SETTINGS = {"session": {"supervision": {"quiet_after": "30m", "stop_grace": "10m", "prompt_deadline": "2h",
                                        "progress_notify_interval": "10m"},
                        "stop": {"cooperative_grace": "10s"}},
            "permissions": {"mode": "approve-reads", "timeout": "5m"}}


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def world(home, workspace, clock):
    """(manager, session, turn): a prompting turn that started at clock.now."""
    manager = SessionManager(Home(home), from_document(SETTINGS), clock=clock, processes=FakeProcessTable(clock))
    document = manager.create_session({"workspace_path": str(workspace)})["session"]
    session = LiveSession(manager.services, manager.store.require(document["id"]))
    turn = Turn(new_id("turn"), "work", new_id("msg"), new_id("idem"), {}, clock=clock)
    turn.change_phase(TurnPhase.PROMPTING)
    turn.bound.set()
    session.turn = turn
    yield manager, session, turn
    turn.ended.set()
    if session.stop_operation is not None:
        session.stop_operation.done.wait(10)
    session.close()
    manager.shutdown()


def _at(manager, session, clock, seconds):
    """One sweep at start + seconds."""
    clock.now = 1000.0 + seconds
    manager.supervisor.tick(session, clock.now)


def _events(session, kind):
    return [r for r in session.log.read_all() if r["type"] == kind]


def test_an_ignored_cancel_escalates_exactly_when_the_grace_is_over(world, clock):
    manager, session, turn = world
    turn.request_cancel("canceled", 10.0)
    _at(manager, session, clock, 9.99)
    assert not turn.escalate
    _at(manager, session, clock, 10.0)
    assert turn.escalate and turn.wake.is_set()


def test_a_recovery_attempt_is_due_at_its_backoff(world, clock):
    manager, session, turn = world
    turn.recovery_due = clock.now + 2.0
    _at(manager, session, clock, 1.99)
    assert not turn.recovery_ready
    _at(manager, session, clock, 2.0)
    assert turn.recovery_ready


def test_silence_warns_once_then_stops_for_inactivity(world, clock):
    manager, session, turn = world
    _at(manager, session, clock, 30 * 60 - 1)
    assert turn.quiet_warning is None and _events(session, "session.supervision_warning") == []
    _at(manager, session, clock, 30 * 60)
    assert turn.quiet_warning == {"turn_id": turn.id, "since": iso_from_epoch(clock.wall()),
                                  "quiet_after_seconds": 1800.0}
    _at(manager, session, clock, 35 * 60)
    assert len(_events(session, "session.supervision_warning")) == 1 and session.stop_operation is None
    turn.ended.set()  # no runner here: let the ladder's wait for the turn return at once
    _at(manager, session, clock, 40 * 60)
    assert session.stop_operation is not None and session.stop_operation.cause == "inactivity"
    session.stop_operation.done.wait(10)
    assert session.state == "stopped" and session.record.stop_reason == "timeout"


def test_progress_clears_the_warning_and_restarts_the_silence(world, clock):
    manager, session, turn = world
    _at(manager, session, clock, 30 * 60)
    assert turn.quiet_warning is not None
    turn.progress()
    _at(manager, session, clock, 30 * 60 + 1)
    assert turn.quiet_warning is None
    _at(manager, session, clock, 70 * 60 - 1)  # 40 minutes after the progress: warned again, not stopped
    assert turn.quiet_warning is not None and session.stop_operation is None


def test_a_person_deciding_is_not_agent_silence(world, clock):
    manager, session, turn = world
    turn.pending_permissions = 1
    _at(manager, session, clock, 60 * 60)
    assert turn.quiet_warning is None and session.stop_operation is None


def test_the_prompt_budget_cancels_the_turn_once(world, clock):
    manager, session, turn = world
    _at(manager, session, clock, 2 * 3600 - 1)
    assert turn.cancel_reason is None
    turn.progress()  # a busy agent: only the budget applies
    _at(manager, session, clock, 2 * 3600)
    assert turn.cancel_reason == "prompt_deadline"
    _at(manager, session, clock, 2 * 3600 + 60)
    markers = [e["content"]["marker"]["kind"] for e in _events(session, "transcript_marker.created")]
    assert markers == ["prompt_timeout"]


def test_a_working_turn_reports_progress_every_interval(world, clock):
    manager, session, turn = world
    for minutes in (5, 10, 15, 20):
        _at(manager, session, clock, minutes * 60)
        turn.progress()
    progress = [e["content"]["runtime"]["elapsed_seconds"] for e in _events(session, "runtime_progress")]
    assert progress == [600.0, 1200.0]


class RecordingReply:
    def __init__(self):
        self.answers = []

    def answer(self, option):
        self.answers.append(option)


OFFERED = [{"option_id": "yes", "name": "Yes", "kind": "allow_once"},
           {"option_id": "never", "name": "Never", "kind": "reject_always"},
           {"option_id": "no", "name": "No", "kind": "reject_once"}]


@pytest.mark.parametrize("options, answer", [
    (OFFERED, OFFERED[2]),  # reject-once first, wherever it stands
    (OFFERED[:2], OFFERED[1]),  # else reject-always
    (OFFERED[:1], None),  # else cancelled: the daemon never answers with an allowing option by itself
])
def test_a_held_permission_is_rejected_when_its_timeout_is_over(world, clock, workspace, options, answer):
    manager, session, turn = world
    reply = RecordingReply()
    ask = PermissionAsk("call_1", "Edit", "edit", [str(workspace / "a.txt")], options)
    manager.requests.permission(session, ask, reply)
    assert reply.answers == [] and len(session.permissions) == 1
    _at(manager, session, clock, 5 * 60 - 1)
    assert reply.answers == []
    _at(manager, session, clock, 5 * 60)
    assert reply.answers == [answer] and session.permissions == {}
    content = _events(session, "permission")[-1]["content"]
    assert content["reason"] == "timeout" and content.get("option") == answer
    assert content["decision"] == (answer["kind"].replace("_", "-") if answer else "cancelled")


def test_a_session_awaiting_a_reply_is_not_silent(world, clock):
    """A sender whose message is still being answered (awaiting_reply) keeps working in the watchdog's
    eyes: an hour of silence neither warns nor stops it."""
    manager, session, turn = world
    awaiting = {"kind": "awaiting_reply", "session_id": "sess_target", "turn_id": "turn_target"}
    manager.services.work_signals.append(lambda s: [awaiting] if s is session else [])
    _at(manager, session, clock, 60 * 60)
    assert turn.quiet_warning is None and session.stop_operation is None
