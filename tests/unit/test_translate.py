"""ACP session/update variants become event records; unknown ones are not stored."""

from compozy.acp.translate import translate
from compozy.text import compact_json


def test_chunks_become_messages_and_thoughts():
    assert translate({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"},
                      "messageId": "m"}) == ("agent_message", {"text": "hi", "agent_message_id": "m"})
    assert translate({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}})[0] == "thought"


def test_tool_calls_start_update_and_finish():
    assert translate({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read"})[1]["status"] == "pending"
    kind, content = translate({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"})
    assert kind == "tool_call" and content["update"] is True
    kind, content = translate({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                               "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}]})
    assert kind == "tool_result" and content["output"] == "ok" and content["error"] is False


def test_unknown_variants_are_dropped_and_metadata_variants_are_system_events():
    assert translate({"sessionUpdate": "compaction_update"}) is None
    assert translate({}) is None
    assert translate({"sessionUpdate": "available_commands_update", "availableCommands": []})[0] == "system"


ODD_TEXTS = ["hi", "", "caf\u00e9 \u2028 \U0001f600 \"q\" \\ \x01", "\ud800 lone", "}"]


def test_a_text_chunk_carries_the_json_its_row_stores():
    for text in ODD_TEXTS:
        for message_id in ("m", "m\u00e9\"2}", "317395ae5b974d47b71b79acdce559ac"):
            kind, content = translate({"sessionUpdate": "agent_message_chunk", "messageId": message_id,
                                       "content": {"type": "text", "text": text}})
            assert (kind, content) == ("agent_message", {"text": text, "agent_message_id": message_id})
            assert list(content) == ["text", "agent_message_id"]
            assert content.json == compact_json(content) == compact_json(dict(content))


def test_chunks_off_the_common_shape_are_plain_documents_as_before():
    no_id = translate({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})[1]
    number_id = translate({"sessionUpdate": "agent_message_chunk", "messageId": 7,
                           "content": {"type": "text", "text": "x"}})[1]
    image = translate({"sessionUpdate": "agent_message_chunk", "messageId": "m",
                       "content": {"type": "image", "data": "AA=="}})[1]
    assert (no_id, number_id) == ({"text": "x"}, {"text": "x", "agent_message_id": 7})
    assert image == {"text": "", "agent_message_id": "m", "block": {"type": "image", "data": "AA=="}}
    assert all(type(content) is dict for content in (no_id, number_id, image))
