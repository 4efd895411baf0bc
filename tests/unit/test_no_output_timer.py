"""The first-output warning on a fake clock (session.supervision.first_output_after, default 20 s): warned at
20, 40, 80 s of a sent prompt without output, never stopped; quiet after the first output; off at "0"."""

from compozy.config import from_document
from compozy.ids import new_id
from compozy.manager import SessionManager
from compozy.paths import Home
from compozy.session.records.live import LiveSession
from compozy.session.turns.turn import Turn
from compozy.states import TurnPhase
from tests.harness.fakes import FakeProcessTable
from tests.unit.test_supervision_timers import SETTINGS, _at, _events, clock, world  # noqa: F401 (fixtures)


def _warned(session):
    return [(e["content"]["kind"], e["content"]["waited_seconds"]) for e in _events(session, "runtime_warning")]


def test_a_prompt_without_output_is_warned_at_doubling_intervals_and_never_stopped(world, clock):
    manager, session, turn = world
    turn.prompt_sent()
    for seconds in (19.9, 20, 21, 39.9, 40, 79, 80, 159, 160):
        _at(manager, session, clock, seconds)
    assert _warned(session) == [("no_output", 20), ("no_output", 40), ("no_output", 80), ("no_output", 160)]
    assert _events(session, "runtime_warning")[0]["content"]["text"] == "no output from general after 20 s"
    assert session.stop_operation is None and turn.cancel_reason is None


def test_the_first_output_ends_the_warnings_and_a_resent_prompt_counts_again(world, clock):
    manager, session, turn = world
    turn.prompt_sent()
    _at(manager, session, clock, 20)
    turn.output_seen = True
    _at(manager, session, clock, 45)
    assert _warned(session) == [("no_output", 20)]
    clock.now = 1050.0
    turn.prompt_sent()  # recovery sent it again: the agent owes it a first word again
    _at(manager, session, clock, 69)
    _at(manager, session, clock, 70)
    assert _warned(session) == [("no_output", 20), ("no_output", 20)]


def test_zero_turns_the_warning_off(home, workspace, clock):
    settings = {**SETTINGS, "session": {**SETTINGS["session"], "supervision": {
        **SETTINGS["session"]["supervision"], "first_output_after": "0"}}}
    manager = SessionManager(Home(home), from_document(settings), clock=clock, processes=FakeProcessTable(clock))
    document = manager.create_session({"workspace_path": str(workspace)})["session"]
    session = LiveSession(manager.services, manager.store.require(document["id"]))
    try:
        turn = Turn(new_id("turn"), "work", new_id("msg"), new_id("idem"), {}, clock=clock)
        turn.change_phase(TurnPhase.PROMPTING)
        session.turn = turn
        turn.prompt_sent()
        _at(manager, session, clock, 600)
        assert _warned(session) == []
    finally:
        session.close()
        manager.shutdown()
