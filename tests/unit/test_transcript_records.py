"""The records a continue or fork reads from its source (store/transcriptrows.py): runs of agent
chunks come joined, and carry exactly what every record of the store would carry; a derived
session's store is written with its carried context already in it."""

import sqlite3

import pytest

from compozy.ids import new_id
from compozy.session.records.transcript import carry
from compozy.store import eventlog
from compozy.store.eventlog import EventLog

LIMITS = (131072, 16384)
TYPES = ("user_message", "agent_message", "tool_result", "done", "error")


def _chunks(turn_id, texts, message_id="a1"):
    return [("agent_message", turn_id, {"text": text, "agent_message_id": message_id}, "general") for text in texts]


def _log(tmp_path):
    log = EventLog(str(tmp_path / "events.db"), new_id("sess"), new_id("ws")).create()
    items = []
    for turn in range(4):
        turn_id = f"turn_{turn}"
        items.append(("user_message", turn_id, {"text": f"ask {turn}", "message_id": f"msg_{turn}"}, "general"))
        items += _chunks(turn_id, [f"part {n} " for n in range(5)])
        items.append(("tool_call", turn_id, {"tool_call_id": "t1", "title": "x"}, "general"))  # not read: no break
        items += _chunks(turn_id, ["still ", "one message "])
        items.append(("tool_result", turn_id, {"tool_call_id": "t1", "status": "completed", "output": "ok"}, "general"))
        items += _chunks(turn_id, ["after ", "the tool"])
        items += [("agent_message", turn_id, {"note": "a chunk without text"}, "general")]
        items.append(("done" if turn != 2 else "error", turn_id, {"stop_reason": "end_turn"}, "general"))
        items += _chunks(turn_id, ["late ", "output"])  # after its turn ended: folds into its answer
    items += _chunks(None, ["no ", "turn"]) + _chunks("turn_x", ["another ", "turn"], None)
    items.append(("user_message", "turn_4", {"text": "running", "message_id": "msg_4"}, "general"))
    items += _chunks("turn_4", ["partial"])
    log.append(items)
    log.archive(20, 24)  # a rewound stretch splits a run of chunks
    return log


def _whole(log):
    return [r for r in log.read_all() if r["type"] in TYPES]


def _carried(found):
    return found.bounded, found.summary()


@pytest.mark.parametrize("message_id", [None, "msg_0", "msg_1", "msg_3", "msg_4"])
def test_joined_runs_carry_what_every_record_carries(tmp_path, message_id):
    log = _log(tmp_path)
    records = log.transcript_records(log.max_active_sequence())
    assert len(records) < len(_whole(log)) / 2
    assert _carried(carry(records, LIMITS, message_id=message_id, secrets=())) == \
        _carried(carry(_whole(log), LIMITS, message_id=message_id, secrets=()))


def test_a_read_through_an_earlier_sequence_stops_there(tmp_path):
    log = _log(tmp_path)
    through = next(r["sequence"] for r in _whole(log) if r["type"] == "error")
    records = log.transcript_records(through)
    assert records[-1]["type"] == "error"
    assert _carried(carry(records, LIMITS, secrets=())) == \
        _carried(carry([r for r in _whole(log) if r["sequence"] <= through], LIMITS, secrets=()))


@pytest.mark.parametrize("in_memory", [True, False])  # False: an SQLite without serialize (before 3.36)
def test_a_store_created_with_a_carried_context_holds_it_and_takes_events(tmp_path, monkeypatch, in_memory):
    monkeypatch.setattr(eventlog, "IN_MEMORY_IMAGES", in_memory and eventlog.IN_MEMORY_IMAGES)
    document = {"kind": "fork", "entries": [{"role": "user", "text": "é" * 70000}]}
    log = EventLog(str(tmp_path / "events.db"), new_id("sess"), new_id("ws")).create(document)
    assert log.max_active_sequence() == 0 and log.is_open is not in_memory  # not opened to answer that
    assert log.carried() == document
    log.append([("user_message", "turn_1", {"text": "go", "message_id": "m1"}, None)])
    assert log.max_active_sequence() == 1
    log.close()
    check = sqlite3.connect(tmp_path / "events.db")
    assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    with pytest.raises(sqlite3.IntegrityError):  # still written once: the trigger came with the template
        check.execute("UPDATE carried_context SET document = '{}'")
    check.close()
    assert EventLog(str(tmp_path / "events.db"), "s", "w").carried() == document
