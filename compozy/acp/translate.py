"""ACP session/update variants -> event records (type, content).

Layer 2 (pure functions over the wire's dicts). Unknown variants return None and are logged by
the caller, never stored.
"""

from json.encoder import encode_basestring_ascii as _quote  # a string as compact_json writes it

from compozy.text import EncodedObject

TERMINAL_TOOL_STATUSES = ("completed", "failed")
SYSTEM_VARIANTS = ("available_commands_update", "current_mode_update", "config_option_update",
                   "session_info_update")


def block_text(content):
    """The text of a ContentBlock (or a list of them); other block types contribute nothing."""
    if isinstance(content, list):
        return "".join(block_text(c) for c in content)
    if isinstance(content, dict):
        if content.get("type") == "text":
            return str(content.get("text", ""))
        if content.get("type") == "content":
            return block_text(content.get("content"))
    return ""


def translate(update):
    """(type, content) for one `update` object, or None for variants we do not store."""
    variant = update.get("sessionUpdate")
    handler = _HANDLERS.get(variant)
    if handler:
        return handler(update)
    if variant in SYSTEM_VARIANTS:
        return "system", {"title": variant, "raw": {k: v for k, v in update.items() if k != "sessionUpdate"}}
    return None


def _chunk(kind):
    def handle(update):
        block = update.get("content")
        plain = block.__class__ is dict and block.get("type") == "text"  # nearly every chunk
        if plain and block.get("text").__class__ is str and update.get("messageId").__class__ is str \
                and update["messageId"]:
            return kind, _text_chunk(block["text"], update["messageId"])
        content = {"text": str(block.get("text", "")) if plain else block_text(block)}
        if update.get("messageId"):
            content["agent_message_id"] = update["messageId"]
        if not plain and isinstance(block, dict) and block.get("type") is not None:
            content["block"] = block
        return kind, content
    return handle


def _text_chunk(text, message_id):
    """{"text", "agent_message_id"} with its JSON text, as compact_json writes it."""
    content = EncodedObject(text=text, agent_message_id=message_id)
    content.json = f'{{"text":{_quote(text)},"agent_message_id":{_quote(message_id)}}}'
    return content


def _tool_call(update):
    return "tool_call", {"tool_call_id": update.get("toolCallId"), "title": update.get("title"),
                         "kind": update.get("kind", "other"), "status": update.get("status", "pending"),
                         "raw": _raw(update)}


def _tool_call_update(update):
    status = update.get("status")
    content = {"tool_call_id": update.get("toolCallId"), "status": status, "raw": _raw(update)}
    if status in TERMINAL_TOOL_STATUSES:
        content["output"] = block_text(update.get("content") or [])
        content["error"] = status == "failed"
        return "tool_result", content
    content["update"] = True
    return "tool_call", content


def _plan(update):
    return "plan", {"entries": update.get("entries") or []}


def _usage(update):
    return "usage", {"used": update.get("used"), "size": update.get("size"), "cost": update.get("cost")}


def _raw(update):
    return {k: v for k, v in update.items() if k not in ("sessionUpdate",)}


_HANDLERS = {
    "agent_message_chunk": _chunk("agent_message"),
    "agent_thought_chunk": _chunk("thought"),
    "tool_call": _tool_call,
    "tool_call_update": _tool_call_update,
    "plan": _plan,
    "usage_update": _usage,
}

# A provider's user_message_chunk echoes what we already recorded as user_message.
DROPPED_VARIANTS = ("user_message_chunk",)
