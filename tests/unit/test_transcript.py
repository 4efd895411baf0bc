"""What a continue or fork carries from a transcript (compozy/session/records/transcript.py): pure
functions over event records, from the last settled turn or a message's turn, with an earlier hop
flattened in front once."""

import pytest

from compozy.errors import CompozyError
from compozy.session.records.replay import CarriedContext, omission_note
from compozy.session.records.transcript import RUNNING_NOTE, carry, check_fences, expected_fences

LIMITS = (131072, 16384)


def _turn(sequence, turn, question, answer=None, settled=True, steer=None):
    events = [{"id": f"e{sequence}", "sequence": sequence, "turn_id": turn, "type": "user_message",
               "timestamp": "t", "content": {"text": question, "message_id": f"m-{turn}"}}]
    if steer:
        events.append({"id": "s", "sequence": sequence + 1, "turn_id": turn, "type": "user_message",
                       "timestamp": "t", "content": {"text": steer, "message_id": f"s-{turn}", "steer": True}})
    if answer:
        events.append({"id": "a", "sequence": sequence + 2, "turn_id": turn, "type": "agent_message",
                       "timestamp": "t", "content": {"text": answer}})
    if settled:
        events.append({"id": "d", "sequence": sequence + 3, "turn_id": turn, "type": "done", "timestamp": "t",
                       "content": {"stop_reason": "end_turn"}})
    return events


def _texts(found):
    return [entry["text"] for entry in found.bounded.entries]


def test_a_running_turn_is_left_out_and_said_to_be():
    events = _turn(1, "t1", "one", "echo one") + _turn(10, "t2", "two", "partial", settled=False)
    found = carry(events, LIMITS, secrets=())
    assert _texts(found) == ["one", "echo one", RUNNING_NOTE]
    assert found.source_turn_in_progress and found.through_turn_id == "t1"
    assert found.bounded.message_count == 2 and found.source_message_count == 4


def test_a_turn_still_binding_counts_as_running_though_it_wrote_nothing():
    found = carry(_turn(1, "t1", "one", "echo one"), LIMITS, turn_running=True, secrets=())
    assert found.source_turn_in_progress and _texts(found)[-1] == RUNNING_NOTE


def test_a_cut_carries_its_message_and_its_turn_and_nothing_after():
    events = _turn(1, "t1", "one", "echo one", steer="faster") + _turn(10, "t2", "two", "echo two")
    found = carry(events, LIMITS, message_id="s-t1", secrets=())  # a steering message cuts through its own turn
    assert _texts(found) == ["one", "faster", "echo one"]
    assert found.cut.to_dict() == {"message_id": "s-t1", "turn_id": "t1", "turn_settled": True}
    assert found.through_turn_id == "t1" and not found.source_turn_in_progress


def test_an_unsettled_cut_is_reported_and_an_unknown_message_is_not_found():
    events = _turn(1, "t1", "one", "echo one") + _turn(10, "t2", "two", settled=False)
    found = carry(events, LIMITS, message_id="m-t2", secrets=())
    assert found.cut.settled is False and _texts(found) == ["one", "echo one"]
    with pytest.raises(CompozyError) as missing:
        carry(events, LIMITS, message_id="m-nowhere", secrets=())
    assert missing.value.code == "message_not_found"


def test_an_earlier_hop_is_flattened_in_front_once_with_its_omissions_counted():
    prior = CarriedContext("continue", "sess_a", "general", [{"role": "user", "text": "first"}, omission_note(4),
                                                             {"role": "assistant", "text": "late"}], 4, True)
    found = carry(_turn(1, "t1", "one", "echo one"), LIMITS, prior=prior, secrets=())
    assert _texts(found) == ["first", omission_note(4)["text"], "late", "one", "echo one"]
    assert found.bounded.omitted_count == 4 and found.bounded.truncated


def test_fences_are_all_three_or_none_and_must_match():
    assert expected_fences({}) is None
    fences = {"expected_epoch": 1, "expected_generation": 2, "expected_max_sequence": 3}
    assert expected_fences(fences) == {"epoch": 1, "generation": 2, "max_sequence": 3}
    for partial in ({"expected_epoch": 1}, {}):
        with pytest.raises(CompozyError) as refused:
            expected_fences(partial, required=True)
        assert refused.value.code == "invalid_request"
    with pytest.raises(CompozyError) as stale:
        check_fences({"epoch": 0, "generation": 0, "max_sequence": 3}, {"epoch": 1, "generation": 1, "max_sequence": 2})
    assert stale.value.code == "session_fence_conflict" and stale.value.details["current"]["epoch"] == 1
