"""Transcript folding (history reads) and the bounded replay that rebuilds an agent's context.

Layer 4. One bounded replay serves every rebuild: a provider change, a restart without
a loaded ACP session, recovery without a native session, and (later) continue, fork and rewind.
"""

import json
import logging

log = logging.getLogger("compozy.replay")

PROTECTED_TAIL = 8
TRUNCATED = " [content truncated]"
HEADER = "Context rebuilt from log."
INSTRUCTIONS = ("Continue this session using the persisted transcript below. It is historical context, "
                "not a new user request. Do not repeat completed tool calls solely because they appear in "
                "the log. The files and git state in the workspace are authoritative; inspect them before "
                "acting on the transcript.")
TRANSCRIPT_TYPES = ("user_message", "agent_message", "tool_call", "tool_result")


def fold_history(events, include_tools=False):
    """One message per user prompt and one per assistant answer (its chunks folded together)."""
    messages, assistant = [], {}
    for event in events:
        kind, content, turn_id = event["type"], event["content"], event.get("turn_id")
        if kind == "user_message":
            messages.append({"message_id": content.get("message_id"), "turn_id": turn_id, "role": "user",
                             "text": content.get("text", ""), "timestamp": event["timestamp"]})
        elif kind == "agent_message":
            current = assistant.get(turn_id)
            if current is None or messages[-1] is not current:
                current = {"message_id": content.get("agent_message_id") or event["id"], "turn_id": turn_id,
                           "role": "assistant", "text": "", "timestamp": event["timestamp"]}
                assistant[turn_id] = current
                messages.append(current)
            current["text"] += content.get("text", "")
        elif include_tools and kind == "tool_result":
            messages.append({"message_id": event["id"], "turn_id": turn_id, "role": "tool",
                             "text": _tool_line(content), "timestamp": event["timestamp"]})
    return messages


def _tool_line(content):
    output = (content.get("output") or "").strip().splitlines()
    first = output[0] if output else ""
    return f"{content.get('tool_call_id')}: {content.get('status')} {first}"[:500]


def bounded(messages, max_replay_bytes, max_message_bytes):
    """(entries, omitted_count): the newest messages that fit, the first user message pinned."""
    entries = [_replay_entry(m, max_message_bytes) for m in messages]
    if _size(entries) <= max_replay_bytes:
        return entries, 0
    pinned = next((e for e in entries if e["role"] == "user"), None)
    rest = [e for e in entries if e is not pinned]
    tail = []
    for entry in reversed(rest):
        note = _omission_note(len(rest) - len(tail) - 1)
        candidate = ([pinned] if pinned else []) + [note] + [entry] + tail
        if _size(candidate) > max_replay_bytes:
            break
        tail.insert(0, entry)
    omitted = len(rest) - len(tail)
    result = ([pinned] if pinned else []) + [_omission_note(omitted)] + tail
    while _size(result) > max_replay_bytes and len(result) > 1:
        result.pop(0 if result[0] is not pinned else 1)  # even the pin goes before the bound breaks
    return result, omitted


def _replay_entry(message, limit):
    text = message.get("text", "")
    encoded = text.encode("utf-8")
    if len(encoded) > limit:
        keep = max(0, limit - len(TRUNCATED.encode()))
        text = encoded[:keep].decode("utf-8", "ignore") + TRUNCATED
    return {"role": message["role"], "text": text, "turn_id": message.get("turn_id")}


def _omission_note(count):
    return {"role": "system", "text": f"[{count} earlier messages omitted to fit the context budget]"}


def _size(entries):
    return len(json.dumps(entries, ensure_ascii=False).encode("utf-8"))


def compose(entries, request_text, lead):
    """The prompt text of a rebuilt context, in the seed's format."""
    block = json.dumps(entries, ensure_ascii=False, indent=1)
    return (f"{HEADER}\n{lead} {INSTRUCTIONS}\n<compozy_context_replay>\n{block}\n"
            f"</compozy_context_replay>\n\nUser request:\n\n{request_text}")


def replay_prompt(events, request_text, config, session_id, reason):
    """The first prompt for a fresh agent context, or request_text when there is no history."""
    messages = fold_history(events, include_tools=True)
    if not messages:
        return request_text, None
    entries, omitted = bounded(messages, config["session.derive.max_replay_bytes"],
                               config["session.derive.max_message_bytes"])
    summary = {"session_id": session_id, "reason": reason, "message_count": len(entries),
               "omitted_count": omitted, "bytes": _size(entries)}
    log.info("session.replay.bounded %s", " ".join(f"{k}={v}" for k, v in summary.items()))
    lead = f"This session ({session_id}) resumes in a new agent context."
    return compose(entries, request_text, lead), summary
