"""A turn's phase under concurrent moves: a cancel never moves a turn the runner is ending (issue 20; the
state machine found `illegal turn transition done -> cancelling` when a cancel checked `prompting` just
before the runner ended the turn)."""

import threading

from compozy.clock import SYSTEM
from compozy.session.turns.turn import Turn
from compozy.states import TurnPhase


def _turn():
    turn = Turn("turn_1", "hi", "m1", "k1", {}, clock=SYSTEM)
    turn.change_phase(TurnPhase.PROMPTING)
    return turn


def test_begin_cancelling_moves_only_a_prompting_turn():
    turn = _turn()
    assert turn.begin_cancelling() is True and turn.phase == TurnPhase.CANCELLING
    assert turn.begin_cancelling() is False  # already cancelling
    turn.change_phase(TurnPhase.DONE)
    assert turn.begin_cancelling() is False and turn.phase == TurnPhase.DONE


def test_a_cancel_racing_the_end_of_the_turn_never_takes_an_illegal_edge():
    for _ in range(300):
        turn, errors = _turn(), []
        start = threading.Barrier(2)

        def cancel():
            start.wait()
            try:
                turn.begin_cancelling()
            except AssertionError as error:
                errors.append(error)

        def end():
            start.wait()
            turn.change_phase(TurnPhase.DONE)
        threads = [threading.Thread(target=cancel), threading.Thread(target=end)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and turn.phase == TurnPhase.DONE
