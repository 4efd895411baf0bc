"""The stream's shortcuts give exactly what the plain code gave: a stored record's JSON built around
its row's content text, redaction checked on the encoded text, batch IDs, the compact encoder, and the
CLI's SSE reader fed in arbitrary pieces."""

import json

import pytest

from compozy.cli.client import _parse_sse
from compozy.http.sse import frame
from compozy.ids import _encode, new_ids
from compozy.redact import EncodedRedaction, redact_values
from compozy.store.eventlog import EventLog
from compozy.store.storedrecord import StoredRecord
from compozy.text import compact_json

PLAIN = json.JSONEncoder(separators=(",", ":")).encode
CONTENTS = [{"text": "chunk 1 ", "agent_message_id": "a1"}, {"text": "caf\u00e9 \u2028 \ud83d\ude00 \"q\" \\ \x01"},
            {"tool_call_id": "t1", "raw": {"n": [1, 2.5, None, True, float("inf")]}}, {}, {"nested": [[{"x": "y"}]]}]


@pytest.mark.parametrize("document", CONTENTS + ["text", 3, 1.5, None, [1, "\u00e9"]])
def test_the_compact_encoder_writes_what_json_encoder_writes(document):
    assert compact_json(document) == PLAIN(document)


def test_the_compact_encoder_refuses_what_json_refuses():
    with pytest.raises(TypeError, match="not JSON serializable"):
        compact_json({"a": object()})


@pytest.mark.parametrize("agent_name, turn_id", [("general", "turn_1"), (None, None), ("na\u00efve \"x\"", None)])
def test_a_stored_record_renders_the_json_of_its_whole_dict(tmp_path, agent_name, turn_id):
    log = EventLog(str(tmp_path / "events.db"), "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "ws_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    log.create()
    records = log.append([("agent_message", turn_id, content, agent_name) for content in CONTENTS])
    for record in records:
        assert isinstance(record, StoredRecord)
        assert record.json() == PLAIN(dict(record))
        assert frame(record["type"], record) == frame(record["type"], dict(record))
    assert [r["content"] for r in log.read(after_sequence=0)] == [json.loads(PLAIN(c)) for c in CONTENTS]
    log.close()


def test_a_batch_of_mixed_turns_types_and_agents_renders_each_record_as_its_own_dict(tmp_path):
    log = EventLog(str(tmp_path / "events.db"), "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "ws_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    items = [(kind, turn_id, content, agent_name) for kind in ("agent_message", "tool_call")
             for turn_id in ("turn_1", None) for agent_name in ("general", None, "na\u00efve") for content in CONTENTS]
    records = log.create().append(items)
    for record in records:
        assert record.json() == PLAIN(dict(record))
        assert record.frame() == frame(record["type"], dict(record))
    log.close()


def test_a_stored_record_with_other_keys_is_encoded_whole(tmp_path):
    log = EventLog(str(tmp_path / "events.db"), "sess_01ARZ3NDEKTSV4RRFFQ69G5FAV", "ws_01ARZ3NDEKTSV4RRFFQ69G5FAV")
    record = log.create().append([("agent_message", None, {"text": "x"}, None)])[0]
    log.close()
    copy = StoredRecord.of(dict(record, archived=True), record.content_json)
    assert copy.json() == PLAIN(dict(copy))


SECRETS = {"sk-live-12345678", "p\u00e4ss w\"rd\\x", "tok/with/slash"}
DOCUMENTS = [{"text": "nothing here"}, {"text": "key sk-live-12345678 inside"}, {"sk-live-12345678": "key only"},
             {"raw": ["x", {"deep": "p\u00e4ss w\"rd\\x!"}]}, {"text": "a tok/with/slash b"}, {"n": 5, "t": None},
             {"text": "sk-live-1234567"}, "sk-live-12345678"]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_redaction_on_the_encoded_text_matches_redacting_the_document(document):
    value, text = EncodedRedaction(SECRETS, compact_json).apply(document, compact_json(document))
    assert value == redact_values(document, SECRETS)
    assert text == compact_json(value)


def test_batch_ids_are_the_ids_of_consecutive_values(monkeypatch):
    from compozy import ids
    mask, saved, millis = (1 << 80) - 1, list(ids._last), 1_000_000
    monkeypatch.setattr(ids.time, "time_ns", lambda: millis * 1_000_000)
    try:
        for start in (5, (1 << 20) - 3, mask - 2):  # within a head, across a head, across the 80 bits
            ids._last[:] = [millis, start - 1]  # the same millisecond: the batch counts on from start
            got = new_ids("evt", 8)
            assert got == [f"evt_{_encode((millis << 80) | ((start + i) & mask))}" for i in range(8)]
    finally:
        ids._last[:] = saved


class Pieces:
    """An HTTP response whose body arrives in the given pieces."""

    def __init__(self, pieces):
        self.pieces = list(pieces)

    def read1(self, size):
        return self.pieces.pop(0) if self.pieces else b""


BODY = (": stream open\n\nid: 1\nevent: agent_message\ndata: {\"text\":\"caf\u00e9\"}\n\n"
        "event: ping\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: keepalive\n\nid: 2\nevent: done\ndata: {}\n\n").encode()


@pytest.mark.parametrize("size", [1, 2, 7, 64, len(BODY)])
def test_the_sse_reader_reads_the_same_frames_whatever_the_pieces(size):
    pieces = [BODY[i:i + size] for i in range(0, len(BODY), size)]
    assert list(_parse_sse(Pieces(pieces))) == [("agent_message", {"text": "caf\u00e9"}), ("ping", {"a": 1}),
                                                ("done", {})]
