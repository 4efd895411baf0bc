"""ACP session/update variants become event records; unknown ones are not stored."""

from compozy.acp.translate import translate


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
