"""Transcript folding (history reads) and the one bounded replay that rebuilds an agent's context.

Layer 4. Every rebuild goes through bound() and compose(): a provider change, a restart without a
loaded ACP session, recovery without a native session, a rewind restart, and the context a continued
or forked session carries (records/transcript.py builds that one; it is prepended exactly once on
every rebuild of the new session).
"""

import json
import logging
from dataclasses import dataclass

from compozy.redact import redact_values

log = logging.getLogger("compozy.replay")

PROTECTED_TAIL = 8
TRUNCATED = " [content truncated]"
OMISSION = "[{} earlier messages omitted to fit the context budget]"
HEADER = "Context rebuilt from log."
INSTRUCTIONS = ("Continue this session using the persisted transcript below. It is historical context, "
                "not a new user request. Do not repeat completed tool calls solely because they appear in "
                "the log. The files and git state in the workspace are authoritative; inspect them before "
                "acting on the transcript.")
ATTACHMENTS = " Attachments listed in the transcript were not copied to this session."
HISTORY_POINTER = (" Earlier messages were omitted; read them on demand with compozy__session_history "
                   "(session_id: {}; after_sequence: 0 for the oldest page, then page.after_sequence).")
LEADS = {"continue": "This session continues {} (agent: {}).", "fork": "This session forks {} (agent: {})."}


@dataclass(frozen=True)
class Bounded:
    entries: list
    omitted_count: int  # earlier hops' omissions included
    truncated: bool  # a body was cut or a message omitted, here or by an earlier hop
    size: int  # bytes of the JSON array, exactly as compose() sends it

    @property
    def message_count(self):
        """The messages carried (system notes are not messages)."""
        return sum(1 for entry in self.entries if entry["role"] != "system")


@dataclass(frozen=True)
class CarriedContext:
    """What a continued or forked session carries from its source, stored with its events."""

    kind: str
    source_session_id: str
    source_agent_name: str
    entries: list
    omitted_count: int
    truncated: bool

    def to_dict(self):
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, document):
        return cls(**{name: document[name] for name in cls.__dataclass_fields__})

    def prefix(self):
        """The carried entries to put in front of a newer transcript, without the old omission note."""
        return [entry for entry in self.entries if not is_omission_note(entry)]


def assembled(text, secrets):
    """Text joined from an agent's chunks, with the secrets redacted. Each chunk was redacted on its own
    when it was stored, but streamed output splits text where it likes, so a value the agent sent across
    two chunks is whole only once they are joined. Everything that joins chunks calls this (history
    pages, carried context, replays, a turn's answer, wakes, title passes; later exports and searches),
    with the values LiveSession.read_secrets() (or records/live.read_secrets) knows."""
    return redact_values(text, secrets)


def turn_text(events, secrets):
    """A turn's assistant text: every agent_message chunk of the events, joined, then redacted."""
    return assembled("".join(e["content"].get("text", "") for e in events if e["type"] == "agent_message"), secrets)


def fold_history(events, include_tools=False, *, secrets):
    """One message per user prompt and one per assistant answer (its chunks folded together and the
    joined text redacted of the secrets: see assembled())."""
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
            messages.append(_tool_message(event))
    for message in messages:
        if message["role"] == "assistant":
            message["text"] = assembled(message["text"], secrets)
    return messages


def _tool_message(event):
    """A tool result as a replay message: its whole output, and the one-line `brief` older ones are pruned to."""
    content = event["content"]
    head = f"{content.get('tool_call_id')}: {content.get('status')}"
    output = (content.get("output") or "").strip()
    first_line = output.partition("\n")[0][:500]
    return {"message_id": event["id"], "turn_id": event.get("turn_id"), "role": "tool",
            "text": f"{head} {output}".rstrip(), "brief": f"{head} {first_line}".rstrip(),
            "timestamp": event["timestamp"]}


def bound(messages, max_replay_bytes, max_message_bytes, prior_omitted=0, prior_truncated=False):
    """The messages within the budget: each body capped (tool results older than the newest
    PROTECTED_TAIL messages pruned to one line), the earliest user message pinned ahead of the
    omission note, then the newest messages, newest first, while they fit. prior_omitted counts
    what an earlier hop dropped."""
    protected_from = len(messages) - PROTECTED_TAIL
    capped = [_replay_entry(m if i >= protected_from else {**m, "text": m.get("brief", m.get("text", ""))},
                            max_message_bytes) for i, m in enumerate(messages)]
    entries, cut = [entry for entry, _ in capped], any(was_cut for _, was_cut in capped)
    sizes = [_size(entry) for entry in entries]
    whole = _array_size(sizes)
    if not prior_omitted and whole <= max_replay_bytes:
        return Bounded(entries, 0, cut or prior_truncated, whole)
    pin = next((i for i, entry in enumerate(entries) if entry["role"] == "user"), None)

    def fits(candidate, with_pin):
        omitted = prior_omitted + len(entries) - len(candidate) - with_pin
        chosen = [sizes[i] for i in candidate] + ([sizes[pin]] if with_pin else [])
        return _array_size(chosen + [_size(omission_note(omitted))]) <= max_replay_bytes

    pinned, kept = pin is not None and fits([], True), []
    for index in reversed(range(len(entries))):
        if index == pin:
            continue
        if not fits(kept + [index], pinned):
            break
        kept.append(index)
    omitted = prior_omitted + len(entries) - len(kept) - pinned
    chosen = ([entries[pin]] if pinned else []) + [omission_note(omitted)] + [entries[i] for i in reversed(kept)]
    return Bounded(chosen, omitted, True, _array_size([_size(entry) for entry in chosen]))


def _replay_entry(message, limit):
    text = message.get("text", "")
    encoded = text.encode("utf-8")
    if len(encoded) > limit:
        keep = max(0, limit - len(TRUNCATED.encode()))
        text = encoded[:keep].decode("utf-8", "ignore") + TRUNCATED
    entry = {"role": message["role"], "text": text}
    if message.get("turn_id"):
        entry["turn_id"] = message["turn_id"]
    return entry, len(encoded) > limit


def omission_note(count):
    return {"role": "system", "text": OMISSION.format(count)}


def is_omission_note(entry):
    prefix, _, suffix = OMISSION.partition("{}")
    text = entry.get("text", "")
    return entry.get("role") == "system" and text.startswith(prefix) and text.endswith(suffix)


def _size(entry):
    return len(json.dumps(entry, ensure_ascii=False).encode("utf-8"))


def _array_size(sizes):
    """The bytes of json.dumps(list): the items, ", " between them, and the brackets."""
    return 2 + sum(sizes) + 2 * max(0, len(sizes) - 1)


def compose(entries, request_text, lead, extra=""):
    """The prompt text of a rebuilt context, in the seed's format."""
    block = json.dumps(entries, ensure_ascii=False)
    return (f"{HEADER}\n{lead} {INSTRUCTIONS}{extra}\n<compozy_context_replay>\n{block}\n"
            f"</compozy_context_replay>\n\nUser request:\n\n{request_text}")


def replay_prompt(events, request_text, config, session_id, reason, carried=None, history_tool=False, *, secrets):
    """The first prompt for a fresh agent context, or request_text when there is nothing to carry.

    carried (a CarriedContext) goes in front of the session's own transcript, once; when messages
    were omitted and the agent is offered compozy__session_history (history_tool), the header
    points it at the source. secrets: redacted from the answers' joined text (assembled())."""
    messages = fold_history(events, include_tools=True, secrets=secrets)
    prefix = carried.prefix() if carried else []
    if not messages and not prefix and not (carried and carried.omitted_count):
        return request_text, None
    result = bound(prefix + messages, config["session.derive.max_replay_bytes"],
                   config["session.derive.max_message_bytes"], carried.omitted_count if carried else 0,
                   carried.truncated if carried else False)
    summary = {"session_id": session_id, "reason": reason, "message_count": result.message_count,
               "omitted_count": result.omitted_count, "first_user_pinned": _pinned(result.entries),
               "bytes": result.size}
    log.info("session.replay.bounded %s", " ".join(f"{k}={v}" for k, v in summary.items()))
    if carried is None:
        return compose(result.entries, request_text, f"This session ({session_id}) resumes in a new agent context."), \
            summary
    pointer = history_tool and result.omitted_count
    extra = ATTACHMENTS + (HISTORY_POINTER.format(carried.source_session_id) if pointer else "")
    lead = LEADS[carried.kind].format(carried.source_session_id, carried.source_agent_name)
    return compose(result.entries, request_text, lead, extra), summary


def _pinned(entries):
    return len(entries) > 1 and entries[0]["role"] == "user" and is_omission_note(entries[1])
